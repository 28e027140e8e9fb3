//! The FUSE request handlers: FUSE's inode world mapped onto one uvfs
//! [`Vfs`], the way libfuse's passthrough_ll maps it onto a host file
//! system (see the crate docs for the whole mapping).

use crate::creds::CredCache;
use crate::passthrough::{Passthrough, PtTable};
use fuser::{
    AccessFlags, CopyFileRangeFlags, Errno as FErrno, FileAttr, FileHandle, Filesystem, FopenFlags,
    Generation, INodeNo, InitFlags, KernelConfig, LockOwner, Notifier, OpenFlags, RenameFlags,
    ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uvfs::cred::Cred;
use uvfs::fs::{FileSystem, S_IFDIR, S_IFIFO, S_IFMT, S_IFREG};
use uvfs::stat::{Dirent64, Stat, parse_dirents64};
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

mod answer;
mod convert;
mod files;
mod nodes;

use answer::Answer;
use convert::{ferr, kind_of, kind_of_dtype, name_bytes, timespec_of, to_system_time};

/// How long the kernel may trust an entry, a negative entry or attributes
/// it got from us. uvfs is the only writer behind the mount and every
/// change reaches it through the kernel, which invalidates what it caches
/// on its own changes: a day is "until the kernel forgets it".
pub const TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// `__FMODE_EXEC`: the bit the kernel leaves in the open flags of an
/// execve's open (the open is checked for execute, not read, permission).
const FMODE_EXEC_FLAG: i32 = 0o40;

/// Lock shards of the inode table.
const SHARDS: usize = 16;

/// One looked-up inode: an `O_PATH` fd in the server's fd table and the
/// kernel's lookup count.
#[derive(Debug)]
struct Node {
    fd: i32,
    nlookup: u64,
    /// No-open mode: the inode's one I/O handle (`O_RDWR`, opened as root
    /// on the first READ, WRITE, ... with fh 0), or -1. Closed with `fd`
    /// at the last FORGET, never at a RELEASE.
    io: i32,
    /// No-open mode, a directory: the kernel may hold a cached listing of
    /// it (a READDIR was served since its last change; see
    /// [`UvfsFuse::dir_changed`]).
    listed: bool,
}

/// What the server counts, for tests and the curious.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests served.
    pub requests: AtomicU64,
    /// Inodes in the table now.
    pub nodes: AtomicU64,
    /// READDIRPLUS requests served.
    pub readdirplus: AtomicU64,
    /// OPEN and OPENDIR requests received (in no-open mode, the first of
    /// each is answered `ENOSYS` and no more come).
    pub opens: AtomicU64,
    /// No-open mode's per-inode I/O handles open now.
    pub io_handles: AtomicU64,
    /// RELEASE and RELEASEDIR requests received.
    pub releases: AtomicU64,
}

/// The FUSE file system: one uvfs VFS served to every process.
pub struct UvfsFuse {
    vfs: Arc<Vfs>,
    fs: Arc<dyn FileSystem>,
    /// uvfs's root inode number (FUSE's is 1).
    root_ino: u64,
    /// Worker handles on the server's one uvfs process (shared fd table).
    procs: Mutex<Vec<Process>>,
    template: Mutex<Process>,
    nodes: Vec<Mutex<HashMap<u64, Node>>>,
    creds: CredCache,
    counters: Arc<Counters>,
    /// FUSE passthrough: the mode asked for, whether it is on, and the
    /// backing files of the inodes open through it.
    pt: PtTable,
    /// `FUSE_POSIX_ACL` and `FUSE_DONT_MASK` were negotiated: the kernel
    /// decides access with the ACLs it reads from the server, and leaves
    /// the umask of a create, mkdir or mknod to the server (uvfs applies
    /// it unless the directory has a default ACL, as tmpfs does).
    posix_acl: bool,
    /// No-open mode asked for ([`Self::with_no_open`]).
    no_open_wanted: bool,
    /// The kernel offered `FUSE_NO_OPEN_SUPPORT` and `FUSE_NO_OPENDIR_SUPPORT`
    /// to a server that asked for the mode: OPEN and OPENDIR are answered
    /// `ENOSYS`, and fh 0 in a request means "the inode's own handle".
    no_open: bool,
    /// The writeback cache asked for ([`Self::with_writeback`]).
    writeback_wanted: bool,
    /// `FUSE_WRITEBACK_CACHE` negotiated: the kernel keeps size and mtime
    /// of regular files, writes back pages through any handle (a write-only
    /// open is served by a read-write one), and sends the times it kept in
    /// SETATTR.
    writeback: bool,
    /// The session's channel for notifications to the kernel, set once the
    /// session exists ([`Self::notifier_slot`]).
    notifier: Arc<OnceLock<Notifier>>,
}

/// Lists the directory open as `fd` from the cookie `offset`: `add` gets
/// each entry and answers whether the reply is full, which ends the
/// listing.
fn list_from(
    p: &mut Process,
    fd: i32,
    offset: u64,
    mut add: impl FnMut(&mut Process, &Dirent64) -> Result<bool, Errno>,
) -> Result<(), Errno> {
    p.lseek(fd, offset as i64, SEEK_SET)?;
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = p.getdents64(fd, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        for e in parse_dirents64(&buf[..n]) {
            if add(p, &e)? {
                return Ok(());
            }
        }
    }
}

impl UvfsFuse {
    /// Lists the directory `ino` (through its handle `fh`, or a descriptor
    /// of its own in no-open mode) from the cookie `offset` (readdir and
    /// readdirplus); `add` gets the descriptor listed and each entry.
    fn each_dirent(
        &self,
        p: &mut Process,
        (ino, fh, pid): (INodeNo, FileHandle, u32),
        offset: u64,
        mut add: impl FnMut(&mut Process, i32, &Dirent64) -> Result<bool, Errno>,
    ) -> Result<(), Errno> {
        let (fd, own) = self.dir_fd(p, ino, fh, pid)?;
        let r = list_from(p, fd, offset, |p, e| add(p, fd, e));
        if own {
            let _ = p.close(fd);
        }
        r
    }

    /// RELEASE and RELEASEDIR: the handle's descriptor closed. fh 0 is no
    /// handle (a create's or an opendir's in no-open mode): nothing to
    /// close.
    fn release_handle(&self, fh: FileHandle) {
        self.counters.releases.fetch_add(1, Ordering::Relaxed);
        if fh.0 != 0 {
            self.as_root(|p| {
                let _ = p.close(fh.0 as i32);
            });
        }
    }

    /// A server for `vfs`, whose root file system is `fs`.
    pub fn new(vfs: Arc<Vfs>, fs: Arc<dyn FileSystem>) -> Result<UvfsFuse, Errno> {
        let mut p = Process::new(&vfs)?;
        // The kernel applies the caller's umask before it sends a create,
        // unless FUSE_DONT_MASK is negotiated (with FUSE_POSIX_ACL): then
        // the request's umask is set for that call ([`Self::with_umask`]).
        // The server's own is 0.
        p.umask(0);
        // One O_PATH fd per inode the kernel knows: lift the soft limit to
        // the hard one (Linux's nr_open).
        let (_, hard) = p.getrlimit_nofile();
        p.setrlimit_nofile(hard, hard)?;
        let root_ino = p.stat("/")?.st_ino;
        let root_fd = p.open("/", O_PATH | O_DIRECTORY, 0)?;
        // fd 0 is the root's O_PATH handle for the server's whole life, so
        // no file handle given to the kernel is ever 0: in no-open mode fh
        // 0 means "no handle" (see `io_fd`). A new process's table is
        // empty, so the first open is 0.
        if root_fd != 0 {
            return Err(Errno::EBUSY);
        }
        let nodes: Vec<_> = (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect();
        nodes[(root_ino as usize) % SHARDS].lock().unwrap().insert(
            root_ino,
            Node {
                fd: root_fd,
                // The root is never forgotten.
                nlookup: 1 << 62,
                io: -1,
                listed: false,
            },
        );
        let counters = Arc::new(Counters::default());
        counters.nodes.store(1, Ordering::Relaxed);
        Ok(UvfsFuse {
            vfs,
            fs,
            root_ino,
            procs: Mutex::new(Vec::new()),
            template: Mutex::new(p),
            nodes,
            creds: CredCache::default(),
            counters,
            pt: PtTable::new(Passthrough::Off),
            posix_acl: false,
            no_open_wanted: false,
            no_open: false,
            writeback_wanted: false,
            writeback: false,
            notifier: Arc::new(OnceLock::new()),
        })
    }

    /// Where the mount puts the session's notifier once the session is
    /// made (the server is moved into it first).
    pub fn notifier_slot(&self) -> Arc<OnceLock<Notifier>> {
        self.notifier.clone()
    }

    /// Sets the passthrough mode (before the session starts; the default
    /// is [`Passthrough::Off`]). [`Passthrough::Auto`] turns it on at
    /// `FUSE_INIT` when the kernel offers it and the server holds
    /// `CAP_SYS_ADMIN`, and says which on stderr.
    pub fn with_passthrough(mut self, mode: Passthrough) -> UvfsFuse {
        self.pt = PtTable::new(mode);
        self
    }

    /// Says that regular files' data lives in a private kernel tmpfs of
    /// `size` bytes (see [`backing`](crate::backing)), for the start-up
    /// message; call after [`with_passthrough`](Self::with_passthrough).
    pub fn with_kernel_limit(mut self, size: Option<u64>) -> UvfsFuse {
        self.pt.kernel_limit = size;
        self
    }

    /// Whether `--passthrough=auto` says on stderr that it turned
    /// passthrough on (default yes; `uvfs run` keeps the command's stderr
    /// its own). Call after [`with_passthrough`](Self::with_passthrough).
    pub fn with_passthrough_on_said(mut self, say: bool) -> UvfsFuse {
        self.pt.say_on = say;
        self
    }

    /// Asks for no-open mode (before the session starts; the caller keeps
    /// passthrough off, which needs OPEN): at `FUSE_INIT`, if the kernel
    /// offers `FUSE_NO_OPEN_SUPPORT` and `FUSE_NO_OPENDIR_SUPPORT`, OPEN
    /// and OPENDIR are answered `ENOSYS` and the kernel stops sending
    /// them (and their RELEASEs) for the rest of the mount; the kernel's
    /// own checks (`default_permissions`) then decide who may open. Where
    /// the kernel does not offer it, opens are served as usual (said on
    /// stderr).
    pub fn with_no_open(mut self, on: bool) -> UvfsFuse {
        self.no_open_wanted = on;
        self
    }

    /// Asks for the kernel's writeback cache (before the session starts;
    /// the caller keeps passthrough off): at `FUSE_INIT`, if the kernel
    /// offers `FUSE_WRITEBACK_CACHE`, writes gather in the mount's page
    /// cache and reach the server in batches (said on stderr where not
    /// offered).
    pub fn with_writeback(mut self, on: bool) -> UvfsFuse {
        self.writeback_wanted = on;
        self
    }

    /// Whether opens of regular files are answered with passthrough now.
    pub fn passthrough_on(&self) -> bool {
        self.pt.on()
    }

    /// The server's counters.
    pub fn counters(&self) -> Arc<Counters> {
        self.counters.clone()
    }

    /// The VFS served.
    pub fn vfs(&self) -> &Arc<Vfs> {
        &self.vfs
    }
}

impl Filesystem for UvfsFuse {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Each wanted if the kernel offers it: O_TRUNC inside OPEN (so the
        // server's open checks and truncates as Linux does), readdirplus
        // (a listing fills the kernel's dentry and attribute caches),
        // parallel lookups and readdirs in one directory, symlink targets
        // in the page cache, and set-ID removal left to the server
        // (HANDLE_KILLPRIV_V2): uvfs's chown, truncate and write, run as
        // the caller, clear S_ISUID/S_ISGID by Linux's own rules. Without
        // it the kernel turns a chown of a set-ID file into a chown plus a
        // mode it computed itself, and that mode lost the sticky bit
        // (chmod 5755 then chown gave 755, where tmpfs gives 1755:
        // mount_differential found it).
        let mut want = InitFlags::FUSE_ATOMIC_O_TRUNC
            | InitFlags::FUSE_DO_READDIRPLUS
            | InitFlags::FUSE_READDIRPLUS_AUTO
            | InitFlags::FUSE_PARALLEL_DIROPS
            | InitFlags::FUSE_CACHE_SYMLINKS
            | InitFlags::FUSE_HANDLE_KILLPRIV_V2;
        // No-open mode: the kernel says it can do without OPEN and OPENDIR
        // (the server answers them ENOSYS). O_TRUNC then must not ride in
        // an OPEN that never comes: without FUSE_ATOMIC_O_TRUNC the kernel
        // truncates an O_TRUNC open with a SETATTR of the size (fh 0).
        let no_open = InitFlags::FUSE_NO_OPEN_SUPPORT | InitFlags::FUSE_NO_OPENDIR_SUPPORT;
        if self.no_open_wanted {
            if config.capabilities().contains(no_open) {
                self.no_open = true;
                want.remove(InitFlags::FUSE_ATOMIC_O_TRUNC);
            } else {
                eprintln!(
                    "uvfs: --no-open: the kernel does not offer FUSE_NO_OPEN_SUPPORT; opens are served as usual"
                );
            }
        }
        // Writeback cache: the kernel buffers writes in the page cache,
        // keeps the size and mtime of regular files itself and places
        // O_APPEND writes at its own size (the server drops O_APPEND from
        // its handles in every mode).
        if self.writeback_wanted {
            if config
                .capabilities()
                .contains(InitFlags::FUSE_WRITEBACK_CACHE)
            {
                self.writeback = true;
                want |= InitFlags::FUSE_WRITEBACK_CACHE;
            } else {
                eprintln!(
                    "uvfs: --writeback: the kernel does not offer FUSE_WRITEBACK_CACHE; writes go through as usual"
                );
            }
        }
        let _ = config.add_capabilities(want & config.capabilities());
        // POSIX ACLs (`system.posix_acl_*`, which uvfs's tmpfs holds): with
        // FUSE_POSIX_ACL the kernel checks access with them itself (the
        // mount has default_permissions) and skips the umask where a
        // directory has a default ACL; with FUSE_DONT_MASK it sends the
        // umask instead of applying it, and uvfs applies it as tmpfs does.
        // Without both, the ACLs are still stored and read through the
        // server, but the kernel's own checks see only the mode.
        let acl = InitFlags::FUSE_POSIX_ACL | InitFlags::FUSE_DONT_MASK;
        if config.capabilities().contains(acl) && config.add_capabilities(acl).is_ok() {
            self.posix_acl = true;
        }
        // Passthrough (see the `passthrough` module): the kernel does
        // read, write and mmap of a regular file on its memfd itself.
        let offered = config.capabilities().contains(InitFlags::FUSE_PASSTHROUGH);
        if self.pt.decide(offered)? {
            let _ = config.add_capabilities(InitFlags::FUSE_PASSTHROUGH);
            // The memfds live on shmem (stack depth 0): one level.
            let _ = config.set_max_stack_depth(1);
        }
        Ok(())
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let r = self.with(req, |p| {
            let dfd = self.node_fd(parent)?;
            self.lookup_in(p, dfd, name_bytes(name))
        });
        self.reply_entry(r, reply);
    }

    // BATCH_FORGET arrives here too: fuser's default splits it into
    // single forgets.
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.forget_n(ino, nlookup);
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let r = self.with(req, |p| self.fresh_stat(p, self.node_fd(ino)?));
        match r {
            Ok(st) => reply.attr(&TTL, &self.attr_of(&st)),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let uino = self.ino(ino);
        let r = self.with(req, |p| {
            let fd = self.node_fd(ino)?;
            // In no-open mode an O_TRUNC open or an ftruncate sends fh 0:
            // the size changes through the inode's own handle (the kernel
            // checked write permission at the open, or the fd's mode).
            let fh = match (fh, size) {
                (Some(f), Some(_)) => Some(FileHandle(self.io_fd(p, ino, f)? as u64)),
                (None, Some(0)) if self.no_open && Self::open_truncation(p, fd, req.pid()) => {
                    Some(FileHandle(self.io_fd(p, ino, FileHandle(0))? as u64))
                }
                (f, _) => f,
            };
            // A write past the server comes first (its set-ID removal and
            // times), then this change; a size change of the server's own
            // is no write past it.
            self.pt_sync(p, uino, fd);
            // Writeback cache: a SETATTR with FATTR_CTIME carries the
            // times the kernel kept for writes it buffered (no program
            // sets ctime); that mtime is the kernel's to set, not the
            // caller's (who may hold write permission without owning).
            // The kernel made the caller's checks of the times first
            // (default_permissions): a utime(NULL) by a writer who does not
            // own the file arrives as an explicit mtime, which uvfs would
            // refuse the caller. So such times are set as root.
            let kept = self.writeback && ctime.is_some() && (atime.is_some() || mtime.is_some());
            let (atime, mtime, times) = if kept {
                (None, None, Some((atime, mtime)))
            } else {
                (atime, mtime, None)
            };
            let others = mode.is_some() || uid.is_some() || gid.is_some() || size.is_some();
            let r = if !kept || others {
                self.setattr_node(p, fd, mode, uid, gid, size, atime, mtime, fh)
            } else {
                Self::fstat(p, fd)
            };
            let r = match (r, times) {
                (Ok(_), Some((a, m))) => {
                    let cred = p.cred().clone();
                    p.set_cred(Cred::root());
                    let times = [timespec_of(a), timespec_of(m)];
                    let r = p
                        .utimensat(fd, "", Some(times), AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)
                        .and_then(|()| Self::fstat(p, fd));
                    p.set_cred(cred);
                    r
                }
                (r, _) => r,
            };
            self.pt.absorb(uino);
            r
        });
        match r {
            Ok(st) => reply.attr(&TTL, &self.attr_of(&st)),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        let r = self.with(req, |p| {
            let fd = self.node_fd(ino)?;
            let mut buf = vec![0u8; 4096];
            let n = p.readlinkat(fd, "", &mut buf)?;
            buf.truncate(n);
            Ok(buf)
        });
        reply.answer(r);
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        // Every type the library's mknod takes: a regular file (type 0
        // too), a FIFO, a socket, a device node (the kernel has checked
        // `CAP_MKNOD`, uvfs checks it again as the caller). A FIFO's I/O
        // on the mount is the kernel's own pipe: the server only makes
        // the node. The kernel passes `rdev` in its 32-bit encoding,
        // which is glibc's `dev_t` for it.
        reply.answer(self.make_entry(req, parent, name, umask, |p, dfd, name| {
            p.mknodat(dfd, name, mode, u64::from(rdev))
        }));
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        reply.answer(self.make_entry(req, parent, name, umask, |p, dfd, name| {
            p.mkdirat(dfd, name, mode & 0o7777)
        }));
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.with(req, |p| {
            p.unlinkat(self.node_fd(parent)?, name_bytes(name), 0)
        });
        self.changed_if_ok(&r, parent);
        reply.answer(r);
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.with(req, |p| {
            p.unlinkat(self.node_fd(parent)?, name_bytes(name), AT_REMOVEDIR)
        });
        self.changed_if_ok(&r, parent);
        reply.answer(r);
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        let r = self.with(req, |p| {
            let dfd = self.node_fd(parent)?;
            p.symlinkat(target.as_os_str().as_bytes(), dfd, name_bytes(link_name))?;
            self.dir_changed(parent);
            self.lookup_in(p, dfd, name_bytes(link_name))
        });
        reply.answer(r);
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let r = self.with(req, |p| {
            let (from, to) = (self.node_fd(parent)?, self.node_fd(newparent)?);
            p.renameat2(
                from,
                name_bytes(name),
                to,
                name_bytes(newname),
                flags.bits(),
            )?;
            self.dir_changed(parent);
            self.dir_changed(newparent);
            if self.no_open && parent != newparent {
                // A directory moved to another parent does not change
                // itself, and its cached listing would keep the old
                // parent as "..".
                self.moved_dir_changed(p, to, newname);
                if flags.bits() & libc::RENAME_EXCHANGE != 0 {
                    self.moved_dir_changed(p, from, name);
                }
            }
            Ok(())
        });
        reply.answer(r);
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let r = self.with(req, |p| {
            let fd = self.node_fd(ino)?;
            let dfd = self.node_fd(newparent)?;
            if p.cred().fsuid == 0 {
                p.linkat(fd, "", dfd, name_bytes(newname), AT_EMPTY_PATH)?;
            } else {
                // linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; Linux's
                // link(2) by path does not. The caller's rights on the new
                // directory are checked first, then the link is made as
                // root (see docs/fuse.md).
                p.faccessat(dfd, "", W_OK | X_OK, AT_EMPTY_PATH | AT_EACCESS)?;
                let cred = p.cred().clone();
                p.set_cred(Cred::root());
                let r = p.linkat(fd, "", dfd, name_bytes(newname), AT_EMPTY_PATH);
                p.set_cred(cred);
                r?;
            }
            self.dir_changed(newparent);
            self.lookup_in(p, dfd, name_bytes(newname))
        });
        reply.answer(r);
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.counters.opens.fetch_add(1, Ordering::Relaxed);
        if self.no_open {
            // The kernel stops sending OPEN (and RELEASE) from here on.
            reply.error(FErrno::ENOSYS);
            return;
        }
        let uino = self.ino(ino);
        let r = self.with(req, |p| {
            let fd = self.node_fd(ino)?;
            let trunc = flags.0 & O_TRUNC != 0;
            if trunc {
                self.pt_sync(p, uino, fd);
            }
            let mut h = self.open_node(p, fd, flags.0)?;
            if trunc {
                self.pt.absorb(uino);
            }
            if self.writeback && flags.0 & O_ACCMODE == O_WRONLY {
                h = Self::widen_to_rdwr(p, h)?;
            }
            let pt = self.pt_attach(p, uino, h, |k| reply.open_backing(k));
            Ok((h, pt))
        });
        match r {
            Ok((h, true)) => {
                let files = self.pt.lock();
                match files.get(&uino) {
                    Some(f) => reply.opened_passthrough(
                        FileHandle(h as u64),
                        FopenFlags::empty(),
                        &f.backing,
                    ),
                    // Cannot be: the entry holds `h` until its RELEASE.
                    None => reply.error(FErrno::EIO),
                }
            }
            // The page cache stays valid across opens: every change to the
            // data passed through the kernel.
            Ok((h, false)) => reply.opened(FileHandle(h as u64), FopenFlags::FOPEN_KEEP_CACHE),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let r = self.with(req, |p| {
            let fd = self.io_fd(p, ino, fh)?;
            let mut buf = vec![0u8; size as usize];
            let off = i64::try_from(offset).map_err(|_| Errno::EINVAL)?;
            // The inode's shared handle (no-open mode) has no
            // `O_NOATIME`; a reader whose open had it (the flags come
            // with each READ) reads through a handle of its own for this
            // request, where the read would stamp atime.
            let n = if fh.0 == 0
                && self.no_open
                && flags.0 & O_NOATIME != 0
                && Self::atime_due(p, fd)
            {
                let own = self.root_reopen(p, self.node_fd(ino)?, O_RDONLY, true)?;
                let n = p.pread(own, &mut buf, off);
                let _ = p.close(own);
                n?
            } else {
                p.pread(fd, &mut buf, off)?
            };
            buf.truncate(n);
            Ok(buf)
        });
        reply.answer(r);
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        // The open's flags (`O_APPEND` among them) come in `_flags`, but
        // the offset already says where the data goes: the kernel placed
        // an O_APPEND write at the size it caches, under the inode's lock
        // (with the writeback cache the page it wrote back), and uvfs is
        // the only writer behind the mount. So the write lands at
        // `offset`, with or without an OPEN.
        let r = self.with(req, |p| {
            let fd = self.io_fd(p, ino, fh)?;
            let off = i64::try_from(offset).map_err(|_| Errno::EFBIG)?;
            p.pwrite(fd, data, off)
        });
        reply.answer(r);
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // uvfs's tmpfs has nothing to flush at close, and no POSIX locks
        // live here (the kernel keeps them): ENOSYS tells the kernel to
        // stop sending FLUSH, which it then treats as success.
        reply.error(FErrno::ENOSYS);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.release_handle(fh);
        reply.ok();
    }

    fn fsync(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        let r = self.with(req, |p| {
            let fd = self.io_fd(p, ino, fh)?;
            if datasync {
                p.fdatasync(fd)
            } else {
                p.fsync(fd)
            }
        });
        reply.answer(r);
    }

    fn opendir(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        self.counters.opens.fetch_add(1, Ordering::Relaxed);
        if self.no_open {
            reply.error(FErrno::ENOSYS);
            return;
        }
        let r = self.with(req, |p| {
            let fd = self.node_fd(ino)?;
            p.reopen(
                fd,
                (Self::server_flags(flags.0) & !O_ACCMODE) | O_RDONLY | O_DIRECTORY,
            )
        });
        match r {
            Ok(fd) => reply.opened(FileHandle(fd as u64), FopenFlags::empty()),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn readdir(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let r = self.with(req, |p| {
            self.each_dirent(p, (ino, fh, req.pid()), offset, |_, _, e| {
                Ok(reply.add(
                    INodeNo(self.nodeid(e.d_ino)),
                    e.d_off as u64,
                    kind_of_dtype(e.d_type),
                    OsStr::from_bytes(&e.name),
                ))
            })
        });
        reply.answer(r);
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectoryPlus,
    ) {
        self.counters.readdirplus.fetch_add(1, Ordering::Relaxed);
        let r = self.with(req, |p| {
            self.each_dirent(p, (ino, fh, req.pid()), offset, |p, fd, e| {
                let dot = e.name == b"." || e.name == b"..";
                // The kernel takes no lookup reference for "." and
                // "..": they get their attributes only.
                let attr = if dot {
                    let mut a = self.attr_of(&Stat::default());
                    a.ino = INodeNo(self.nodeid(e.d_ino));
                    a.kind = kind_of_dtype(e.d_type);
                    a
                } else {
                    // Listing needs read permission on the directory, not
                    // search: a caller who may list but not search (mode
                    // 0444) still gets the entries, so the attributes are
                    // looked up as root. That grants nothing: the mount has
                    // default_permissions, so the kernel checks search
                    // permission itself before it uses the names.
                    let found = match self.lookup_in(p, fd, &e.name) {
                        Err(Errno::EACCES) => self.as_root(|r| self.lookup_in(r, fd, &e.name)),
                        r => r,
                    };
                    match found {
                        Ok(a) => a,
                        // Gone since getdents listed it: skip it.
                        Err(Errno::ENOENT) => return Ok(false),
                        Err(err) => return Err(err),
                    }
                };
                let ttl = if dot { Duration::ZERO } else { TTL };
                let full = reply.add(
                    attr.ino,
                    e.d_off as u64,
                    OsStr::from_bytes(&e.name),
                    &ttl,
                    &attr,
                    Generation(0),
                );
                if full && !dot {
                    // Not sent: give back the reference it took.
                    self.forget_n(attr.ino, 1);
                }
                Ok(full)
            })
        });
        reply.answer(r);
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.release_handle(fh);
        reply.ok();
    }

    fn fsyncdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.statfs_reply(reply);
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        // The node's own object (its O_PATH fd, opened without following
        // a symlink), as the caller: `setxattrat(fd, "", AT_EMPTY_PATH)`.
        let r = self.with(req, |p| {
            p.setxattrat(
                self.node_fd(ino)?,
                "",
                AT_EMPTY_PATH,
                name_bytes(name),
                value,
                flags,
            )
        });
        reply.answer(r);
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        // Size 0 asks for the value's length; a buffer too small is ERANGE,
        // as the library answers it.
        let mut buf = vec![0u8; size as usize];
        let r = self.with(req, |p| {
            p.getxattrat(
                self.node_fd(ino)?,
                "",
                AT_EMPTY_PATH,
                name_bytes(name),
                &mut buf,
            )
        });
        match r {
            Ok(n) if size == 0 => reply.size(n as u32),
            Ok(n) => reply.data(&buf[..n]),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        let mut buf = vec![0u8; size as usize];
        let r = self.with(req, |p| {
            p.listxattrat(self.node_fd(ino)?, "", AT_EMPTY_PATH, &mut buf)
        });
        match r {
            Ok(n) if size == 0 => reply.size(n as u32),
            Ok(n) => reply.data(&buf[..n]),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let r = self.with(req, |p| {
            p.removexattrat(self.node_fd(ino)?, "", AT_EMPTY_PATH, name_bytes(name))
        });
        reply.answer(r);
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let r = self.with(req, |p| {
            p.faccessat(self.node_fd(ino)?, "", mask.bits(), AT_EMPTY_PATH)
        });
        reply.answer(r);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let r = self.with(req, |p| {
            let dfd = self.node_fd(parent)?;
            // Non-blocking: a FIFO already at the name must not park a
            // worker in its open's rendezvous (tmpfs files ignore it).
            let fd = self.with_umask(p, umask, |p| {
                p.openat(
                    dfd,
                    name_bytes(name),
                    Self::server_flags(flags) | O_CREAT | O_NONBLOCK,
                    mode & 0o7777,
                )
            })?;
            // (Also where the name was there already: a spare drop.)
            self.dir_changed(parent);
            let attr = p.reopen(fd, O_PATH).and_then(|pfd| self.remember(p, pfd));
            match attr {
                // No-open mode: the create made the file and checked the
                // caller's rights (the O_EXCL, O_TRUNC and umask rules are
                // the server's here); its I/O goes through the inode's own
                // handle like any other open's, so the kernel gets fh 0 and
                // the per-open file is closed at once. The kernel still
                // sends a RELEASE for it (fh 0: nothing to close).
                Ok(a) if self.no_open => {
                    let _ = p.close(fd);
                    Ok((0, a, false))
                }
                Ok(a) if self.writeback && flags & O_ACCMODE == O_WRONLY => {
                    Ok((Self::widen_to_rdwr(p, fd)?, a, false))
                }
                Ok(a) => {
                    let uino = self.ino(a.ino);
                    let pt = self.pt_attach(p, uino, fd, |k| reply.open_backing(k));
                    Ok((fd, a, pt))
                }
                Err(e) => {
                    let _ = p.close(fd);
                    Err(e)
                }
            }
        });
        match r {
            Ok((fd, attr, true)) => {
                let files = self.pt.lock();
                match files.get(&self.ino(attr.ino)) {
                    Some(f) => reply.created_passthrough(
                        &TTL,
                        &attr,
                        Generation(0),
                        FileHandle(fd as u64),
                        FopenFlags::empty(),
                        &f.backing,
                    ),
                    None => reply.error(FErrno::EIO),
                }
            }
            Ok((fd, attr, false)) => reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(fd as u64),
                FopenFlags::FOPEN_KEEP_CACHE,
            ),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let uino = self.ino(ino);
        let r = self.with(req, |p| {
            let fd = self.io_fd(p, ino, fh)?;
            self.pt_sync(p, uino, fd);
            let r = p.fallocate(fd, mode, offset as i64, length as i64);
            self.pt.absorb(uino);
            r
        });
        reply.answer(r);
    }

    fn lseek(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        // Writeback cache: data the kernel still holds dirty is not in
        // uvfs yet, so uvfs's holes may be data (a pwrite past the end
        // not written back: SEEK_DATA answered ENXIO, and `cp` would
        // copy zeros). ENOSYS makes the kernel answer every SEEK_DATA and
        // SEEK_HOLE itself for the rest of the mount, seeing the whole
        // file as data (coarser than tmpfs, never wrong; docs/fuse.md).
        if self.writeback {
            reply.error(FErrno::ENOSYS);
            return;
        }
        // The kernel sends only SEEK_DATA and SEEK_HOLE; the handle's own
        // position is the server's, never the caller's (so a no-open
        // inode's shared handle may answer several callers).
        let r = self.with(req, |p| {
            let fd = self.io_fd(p, ino, fh)?;
            p.lseek(fd, offset, whence)
        });
        match r {
            Ok(off) => reply.offset(off),
            Err(e) => reply.error(ferr(e)),
        }
    }

    fn copy_file_range(
        &self,
        req: &Request,
        ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        if !flags.is_empty() {
            reply.error(FErrno::EINVAL);
            return;
        }
        // uvfs has no copy_file_range of its own: copy in the server
        // (the data never crosses to the caller and back). The kernel
        // checked the handles' modes, the ranges and the overlap.
        let uino = self.ino(ino_out);
        let r = self.with(req, |p| {
            let fh_in = FileHandle(self.io_fd(p, ino_in, fh_in)? as u64);
            let fh_out = FileHandle(self.io_fd(p, ino_out, fh_out)? as u64);
            self.pt_sync(p, uino, fh_out.0 as i32);
            let r = self.copy_range(p, fh_in, offset_in, fh_out, offset_out, len);
            self.pt.absorb(uino);
            r
        });
        reply.answer(r.map(|n| n as usize));
    }
}
