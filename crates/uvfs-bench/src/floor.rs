//! The floor: a trivial FUSE server (fuser 0.18, mounted with mount(2) as
//! root, no libfuse) that stores no data, so that a test run through it
//! costs the FUSE crossing and nothing else. `uvfs-bench fuse` measures
//! uvfs's mount against it.
//!
//! What it keeps: the names the lab's tests make (work directories, their
//! files and directories) in one small table, so that the kernel sends it
//! the same requests it sends any correct server (a `CREATE` for a name
//! that was unlinked, `ENOENT` for a missing one, `ENOTEMPTY` for a full
//! directory), and each file's size (the largest offset written or the
//! size set), so that reads stop at the end of the file. No data: a write
//! is accepted and dropped, a read returns zeros. Attributes are constants
//! (times, link counts), with the mode and owner given at creation.
//!
//! The settings, the ones recommended for `uvfs mount` (see
//! docs/lab-fuse.md), so that the floor and uvfs differ only in the
//! server's work:
//! - entry, attribute and negative-entry timeouts of [`FloorOptions::ttl`]
//!   (default 1 hour: the server is the only writer behind the mount);
//! - no-open: `OPEN` and `OPENDIR` answered `ENOSYS` (the kernel stops
//!   sending them and their `RELEASE`, and keeps the page cache as with
//!   `FOPEN_KEEP_CACHE`), `FLUSH` answered `ENOSYS` (the kernel stops
//!   sending it); `CREATE` replies carry `FOPEN_KEEP_CACHE`;
//! - the writeback cache (`FUSE_WRITEBACK_CACHE`), parallel directory
//!   operations, `max_write` 1 MiB;
//! - `--threads N` workers, each with its own `/dev/fuse` fd (clone_fd).
//!
//! `--kernel-open` answers `OPEN`/`OPENDIR` instead (`FLUSH` stays `ENOSYS`; with
//! `FOPEN_KEEP_CACHE`), `--ttl 0` turns the kernel's name and attribute
//! caches off and `--no-writeback` the writeback cache, to measure what
//! each setting is worth.

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, MountOption, OpenFlags, RenameFlags, ReplyAttr,
    ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, Session, TimeOrNow, WriteFlags,
};
use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The mount's source (`uvfs-floor` in /proc/self/mountinfo).
pub const FSNAME: &str = "uvfs-floor";

/// The largest read or write request the floor asks for.
const MAX_IO: usize = 1024 * 1024;

/// How the floor is mounted and answers.
#[derive(Clone, Debug, PartialEq)]
pub struct FloorOptions {
    /// Worker threads reading `/dev/fuse`.
    pub threads: usize,
    /// Entry, attribute and negative-entry timeout.
    pub ttl: Duration,
    /// Answer `OPEN` and `OPENDIR` with `ENOSYS` (no-open). `FLUSH` is
    /// answered `ENOSYS` either way, as uvfs's server answers it.
    pub no_open: bool,
    /// Ask for the writeback cache.
    pub writeback: bool,
    /// FUSE passthrough: each created file gets a backing file in this
    /// directory (unlinked at once, kept open), and its reads and writes
    /// go from the kernel to that file without reaching the server. The
    /// kernel allows it only without the writeback cache (which is then
    /// not asked for) and without `FOPEN_KEEP_CACHE` on those replies.
    pub passthrough: Option<std::path::PathBuf>,
    /// Mount with `default_permissions`, as uvfs's mounts are: the kernel
    /// checks each access against the attributes it holds, and after a
    /// create or unlink in a directory (which marks the directory's
    /// attributes stale) it fetches them with a `GETATTR` before the next
    /// check there. Without it the floor and the kernel check nothing.
    pub default_permissions: bool,
}

impl Default for FloorOptions {
    fn default() -> FloorOptions {
        FloorOptions {
            threads: 2,
            ttl: Duration::from_secs(3600),
            no_open: true,
            writeback: true,
            passthrough: None,
            default_permissions: true,
        }
    }
}

impl FloorOptions {
    /// One line describing the settings (for reports).
    pub fn describe(&self) -> String {
        format!(
            "{} worker thread(s) with clone_fd; entry/attr/negative timeouts {} s; {}; {}; \
             parallel dirops; max_write 1 MiB; KEEP_CACHE{}{}",
            self.threads,
            self.ttl.as_secs_f64(),
            if self.no_open {
                "no-open (OPEN, OPENDIR, FLUSH answered ENOSYS)"
            } else {
                "OPEN/OPENDIR answered, FLUSH ENOSYS"
            },
            match (self.writeback, &self.passthrough) {
                (true, None) => "writeback cache",
                (true, Some(_)) => "write-through (passthrough excludes the writeback cache)",
                (false, _) => "write-through",
            },
            match &self.passthrough {
                Some(d) => format!(
                    "; passthrough of created files to {} (their replies without KEEP_CACHE, \
                     which the kernel refuses with passthrough)",
                    d.display()
                ),
                None => String::new(),
            },
            if self.default_permissions {
                "; default_permissions"
            } else {
                "; no default_permissions"
            }
        )
    }
}

/// One inode.
#[derive(Clone, Debug)]
struct Node {
    dir: bool,
    /// Permission bits.
    perm: u16,
    uid: u32,
    gid: u32,
    size: u64,
    /// Names pointing at it (0 once unlinked).
    links: u32,
    /// Entries in it (directories).
    children: u32,
    /// Lookups the kernel holds (entry replies minus forgets).
    lookups: u64,
}

/// The names and inodes.
#[derive(Debug)]
struct State {
    names: BTreeMap<(u64, OsString), u64>,
    nodes: HashMap<u64, Node>,
    next: u64,
    /// Passthrough: each created file's backing file and id, dropped with
    /// the inode.
    backing: HashMap<u64, (std::fs::File, fuser::BackingId)>,
}

/// The floor file system.
#[derive(Debug)]
pub struct Floor {
    opts: FloorOptions,
    state: Mutex<State>,
    zeros: Vec<u8>,
}

/// A fixed time for every inode.
fn epoch() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

impl Floor {
    /// A floor with only its root, owned by this process's user.
    pub fn new(opts: FloorOptions) -> Floor {
        let mut nodes = HashMap::new();
        // SAFETY: getuid/getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        nodes.insert(
            1,
            Node {
                dir: true,
                perm: 0o755,
                uid,
                gid,
                size: 0,
                links: 2,
                children: 0,
                lookups: 1,
            },
        );
        Floor {
            opts,
            state: Mutex::new(State {
                names: BTreeMap::new(),
                nodes,
                next: 2,
                backing: HashMap::new(),
            }),
            zeros: vec![0; MAX_IO],
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn open_flags(&self) -> FopenFlags {
        FopenFlags::FOPEN_KEEP_CACHE
    }
}

fn attr(ino: u64, n: &Node) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: n.size,
        blocks: n.size.div_ceil(512),
        atime: epoch(),
        mtime: epoch(),
        ctime: epoch(),
        crtime: epoch(),
        kind: if n.dir {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: n.perm,
        nlink: if n.dir { 2 } else { n.links },
        uid: n.uid,
        gid: n.gid,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// A negative entry: the kernel caches the name's absence for the timeout.
fn negative() -> FileAttr {
    attr(
        0,
        &Node {
            dir: false,
            perm: 0,
            uid: 0,
            gid: 0,
            size: 0,
            links: 0,
            children: 0,
            lookups: 0,
        },
    )
}

impl State {
    /// Adds `name` in `parent` as a new inode; its attributes, or an errno.
    fn add(
        &mut self,
        parent: u64,
        name: &OsStr,
        dir: bool,
        mode: u32,
        req: &Request,
    ) -> Result<FileAttr, Errno> {
        match self.nodes.get(&parent) {
            Some(p) if p.dir && p.links > 0 => {}
            Some(p) if p.dir => return Err(Errno::ENOENT),
            Some(_) => return Err(Errno::ENOTDIR),
            None => return Err(Errno::ENOENT),
        }
        let key = (parent, name.to_os_string());
        if self.names.contains_key(&key) {
            return Err(Errno::EEXIST);
        }
        let ino = self.next;
        self.next += 1;
        let node = Node {
            dir,
            perm: (mode & 0o7777) as u16,
            uid: req.uid(),
            gid: req.gid(),
            size: 0,
            links: 1,
            children: 0,
            lookups: 1,
        };
        let a = attr(ino, &node);
        self.nodes.insert(ino, node);
        self.names.insert(key, ino);
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.children += 1;
        }
        Ok(a)
    }

    /// Removes `name` from `parent` (a directory if `dir`).
    fn remove(&mut self, parent: u64, name: &OsStr, dir: bool) -> Result<(), Errno> {
        let key = (parent, name.to_os_string());
        let ino = *self.names.get(&key).ok_or(Errno::ENOENT)?;
        let node = self.nodes.get(&ino).ok_or(Errno::ENOENT)?;
        match (dir, node.dir) {
            (true, false) => return Err(Errno::ENOTDIR),
            (false, true) => return Err(Errno::EISDIR),
            (true, true) if node.children > 0 => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        self.names.remove(&key);
        if let Some(p) = self.nodes.get_mut(&parent) {
            p.children -= 1;
        }
        self.unlinked(ino);
        Ok(())
    }

    /// One name of `ino` is gone; the inode goes with its last name and
    /// the kernel's last lookup.
    fn unlinked(&mut self, ino: u64) {
        if let Some(n) = self.nodes.get_mut(&ino) {
            n.links = n.links.saturating_sub(1);
            if n.links == 0 && n.lookups == 0 {
                self.nodes.remove(&ino);
                self.backing.remove(&ino);
            }
        }
    }
}

impl Filesystem for Floor {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let mut want = InitFlags::FUSE_PARALLEL_DIROPS;
        // The kernel refuses passthrough on a connection with the
        // writeback cache (the backing-id ioctl fails with EPERM).
        if self.opts.writeback && self.opts.passthrough.is_none() {
            want |= InitFlags::FUSE_WRITEBACK_CACHE;
        }
        if self.opts.no_open {
            want |= InitFlags::FUSE_NO_OPEN_SUPPORT | InitFlags::FUSE_NO_OPENDIR_SUPPORT;
        }
        if self.opts.passthrough.is_some() {
            want |= InitFlags::FUSE_PASSTHROUGH;
            if config.set_max_stack_depth(1).is_err()
                || !config.capabilities().contains(InitFlags::FUSE_PASSTHROUGH)
            {
                eprintln!("uvfs-bench fuse-floor: this kernel offers no FUSE passthrough");
            }
        }
        // Flags this kernel lacks are left out (the floor still works).
        let have = config.capabilities();
        let _ = config.add_capabilities(want & have);
        let _ = config.set_max_write(MAX_IO as u32);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let mut s = self.state();
        let ino = s.names.get(&(parent.0, name.to_os_string())).copied();
        match ino.and_then(|i| s.nodes.get_mut(&i).map(|n| (i, n))) {
            Some((ino, n)) => {
                n.lookups += 1;
                let a = attr(ino, n);
                drop(s);
                reply.entry(&self.opts.ttl, &a, Generation(0));
            }
            None => {
                drop(s);
                reply.entry(&self.opts.ttl, &negative(), Generation(0));
            }
        }
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        let mut s = self.state();
        if let Some(n) = s.nodes.get_mut(&ino.0) {
            n.lookups = n.lookups.saturating_sub(nlookup);
            if n.lookups == 0 && n.links == 0 {
                s.nodes.remove(&ino.0);
                s.backing.remove(&ino.0);
            }
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let a = self.state().nodes.get(&ino.0).map(|n| attr(ino.0, n));
        match a {
            Some(a) => reply.attr(&self.opts.ttl, &a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut s = self.state();
        let Some(n) = s.nodes.get_mut(&ino.0) else {
            drop(s);
            return reply.error(Errno::ENOENT);
        };
        if let Some(m) = mode {
            n.perm = (m & 0o7777) as u16;
        }
        if let Some(u) = uid {
            n.uid = u;
        }
        if let Some(g) = gid {
            n.gid = g;
        }
        if let Some(sz) = size {
            n.size = sz;
        }
        let a = attr(ino.0, n);
        drop(s);
        reply.attr(&self.opts.ttl, &a);
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let r = self.state().add(parent.0, name, true, mode, req);
        match r {
            Ok(a) => reply.entry(&self.opts.ttl, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.state().remove(parent.0, name, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.state().remove(parent.0, name, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        if !flags.is_empty() {
            return reply.error(Errno::EINVAL);
        }
        let mut s = self.state();
        let r = (|| {
            let ino = *s
                .names
                .get(&(parent.0, name.to_os_string()))
                .ok_or(Errno::ENOENT)?;
            let dir = s.nodes.get(&ino).is_some_and(|n| n.dir);
            if let Some(&old) = s.names.get(&(newparent.0, newname.to_os_string())) {
                if old == ino {
                    return Ok(());
                }
                s.remove(newparent.0, newname, dir)?;
            }
            s.names.remove(&(parent.0, name.to_os_string()));
            s.names.insert((newparent.0, newname.to_os_string()), ino);
            if let Some(p) = s.nodes.get_mut(&parent.0) {
                p.children -= 1;
            }
            if let Some(p) = s.nodes.get_mut(&newparent.0) {
                p.children += 1;
            }
            Ok(())
        })();
        drop(s);
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.opts.no_open {
            return reply.error(Errno::ENOSYS);
        }
        let s = self.state();
        if !s.nodes.contains_key(&ino.0) {
            drop(s);
            return reply.error(Errno::ENOENT);
        }
        match s.backing.get(&ino.0) {
            Some((_, id)) => reply.opened_passthrough(FileHandle(0), FopenFlags::empty(), id),
            None => reply.opened(FileHandle(0), self.open_flags()),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let len = self.state().nodes.get(&ino.0).map(|n| n.size);
        match len {
            Some(len) => {
                let n = len.saturating_sub(offset).min(u64::from(size)) as usize;
                reply.data(&self.zeros[..n.min(self.zeros.len())]);
            }
            None => reply.error(Errno::ENOENT),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut s = self.state();
        match s.nodes.get_mut(&ino.0) {
            Some(n) => {
                n.size = n.size.max(offset + data.len() as u64);
                drop(s);
                reply.written(data.len() as u32);
            }
            None => {
                drop(s);
                reply.error(Errno::ENOENT);
            }
        }
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Nothing to flush at close, and no POSIX locks kept here: ENOSYS,
        // and the kernel stops sending FLUSH (uvfs's server answers it so
        // in every mode, so the floor does too).
        reply.error(Errno::ENOSYS);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.opts.no_open {
            reply.error(Errno::ENOSYS);
        } else {
            reply.opened(FileHandle(0), FopenFlags::empty());
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        // Offsets: 1 and 2 for . and .., then 3 + the entry's position
        // (the floor's directories only change under the lab's cleanup).
        let s = self.state();
        if !s.nodes.get(&ino.0).is_some_and(|n| n.dir) {
            drop(s);
            return reply.error(Errno::ENOTDIR);
        }
        let mut entries: Vec<(u64, FileType, OsString)> = vec![
            (ino.0, FileType::Directory, ".".into()),
            (1, FileType::Directory, "..".into()),
        ];
        let lo = (ino.0, OsString::new());
        for ((parent, name), &child) in s.names.range(lo..) {
            if *parent != ino.0 {
                break;
            }
            let kind = if s.nodes.get(&child).is_some_and(|n| n.dir) {
                FileType::Directory
            } else {
                FileType::RegularFile
            };
            entries.push((child, kind, name.clone()));
        }
        drop(s);
        for (i, (child, kind, name)) in entries.into_iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(child), (i + 1) as u64, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        reply.ok();
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        reply.statfs(1 << 20, 1 << 20, 1 << 20, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        let mut s = self.state();
        let a = match s.add(parent.0, name, false, mode, req) {
            Ok(a) => a,
            Err(e) => {
                drop(s);
                return reply.error(e);
            }
        };
        let Some(dir) = &self.opts.passthrough else {
            drop(s);
            return reply.created(
                &self.opts.ttl,
                &a,
                Generation(0),
                FileHandle(0),
                self.open_flags(),
            );
        };
        let backing = (|| {
            let path = dir.join(format!("floor-backing.{}.{}", std::process::id(), a.ino.0));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            let id = reply.open_backing(&f)?;
            Ok::<_, std::io::Error>((f, id))
        })();
        match backing {
            Ok((f, id)) => {
                let entry = s.backing.entry(a.ino.0).or_insert((f, id));
                reply.created_passthrough(
                    &self.opts.ttl,
                    &a,
                    Generation(0),
                    FileHandle(0),
                    FopenFlags::empty(),
                    &entry.1,
                );
            }
            Err(e) => {
                eprintln!("uvfs-bench fuse-floor: passthrough backing file: {e}");
                let _ = s.remove(parent.0, name, false);
                drop(s);
                reply.error(Errno::EIO);
            }
        }
    }
}

/// Mounts the floor at `dir` and serves it on this thread until the mount
/// goes (`umount DIR`, or a lazy unmount) or SIGINT/SIGTERM arrives (then
/// it unmounts lazily itself). `Err` when it cannot mount.
pub fn serve(dir: &Path, opts: FloorOptions) -> Result<(), String> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName(FSNAME.into()),
        MountOption::Subtype(FSNAME.into()),
        MountOption::NoAtime,
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    if opts.default_permissions {
        config.mount_options.push(MountOption::DefaultPermissions);
    }
    config.acl = fuser::SessionACL::All;
    config.n_threads = Some(opts.threads.max(1));
    config.clone_fd = true;
    // Signals: blocked here before any thread starts (the workers inherit
    // the mask) and taken by one thread with sigwait.
    let set = signal_set();
    // SAFETY: `set` is an initialised signal set; the old mask is not
    // wanted.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    let session = Session::new(Floor::new(opts), dir, &config)
        .map_err(|e| format!("mounting the floor at {}: {e}", dir.display()))?;
    let target = crate::backend::cpath(dir.as_os_str().as_encoded_bytes());
    std::thread::Builder::new()
        .name("floor-signals".into())
        .spawn(move || {
            let mut sig = 0;
            // SAFETY: `set` is initialised and `sig` is a writable int.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                // SAFETY: `target` is NUL-terminated; a lazy unmount
                // ends the session's reads with ENODEV.
                unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
            }
        })
        .map_err(|e| format!("signal thread: {e}"))?;
    session
        .run()
        .map_err(|e| format!("serving the floor at {}: {e}", dir.display()))
}

/// SIGINT and SIGTERM.
fn signal_set() -> libc::sigset_t {
    // SAFETY: an all-zero sigset_t is a valid value to initialise.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable sigset_t.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
    }
    set
}
