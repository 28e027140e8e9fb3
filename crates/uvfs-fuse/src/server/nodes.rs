//! FUSE's inode world on the server's side, and each request's context:
//! node ids and uvfs inode numbers, the table of looked-up inodes (an
//! `O_PATH` fd each, with the kernel's lookup count, sharded), `forget`,
//! the handles that requests without a file handle use (no-open I/O,
//! directories), and the per-request `Process` with its caller's
//! credentials.

use super::*;

impl UvfsFuse {
    /// FUSE node id of a uvfs inode number.
    pub(super) fn nodeid(&self, ino: u64) -> u64 {
        if ino == self.root_ino { 1 } else { ino }
    }

    /// uvfs inode number of a FUSE node id.
    pub(super) fn ino(&self, nodeid: INodeNo) -> u64 {
        if nodeid.0 == 1 {
            self.root_ino
        } else {
            nodeid.0
        }
    }

    pub(super) fn shard(&self, ino: u64) -> &Mutex<HashMap<u64, Node>> {
        &self.nodes[(ino as usize) % SHARDS]
    }

    /// The `O_PATH` fd of a node the kernel looked up (`ESTALE` if none:
    /// the kernel never names a node it forgot).
    pub(super) fn node_fd(&self, nodeid: INodeNo) -> Result<i32, Errno> {
        let ino = self.ino(nodeid);
        self.shard(ino)
            .lock()
            .unwrap()
            .get(&ino)
            .map(|n| n.fd)
            .ok_or(Errno::ESTALE)
    }

    /// Runs `f` with a worker handle acting with the request's caller's
    /// credentials.
    pub(super) fn with<R>(&self, req: &Request, f: impl FnOnce(&mut Process) -> R) -> R {
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let mut p = self.take_proc();
        let cred = self.creds.cred(req.pid(), req.uid(), req.gid());
        if *p.cred() != cred {
            p.set_cred(cred);
        }
        let r = f(&mut p);
        self.procs.lock().unwrap().push(p);
        r
    }

    pub(super) fn take_proc(&self) -> Process {
        if let Some(p) = self.procs.lock().unwrap().pop() {
            return p;
        }
        let mut p = self.template.lock().unwrap().new_thread();
        // Its own umask (a create's, see `with_umask`), not the others'.
        p.unshare_fs();
        p
    }

    /// Runs `f` (a create, mkdir or mknod) under the request's umask when
    /// the server applies it (`FUSE_DONT_MASK`), else under 0 (the kernel
    /// applied it to the mode).
    pub(super) fn with_umask<R>(
        &self,
        p: &mut Process,
        umask: u32,
        f: impl FnOnce(&mut Process) -> R,
    ) -> R {
        if !self.posix_acl {
            return f(p);
        }
        p.umask(umask & 0o777);
        let r = f(p);
        p.umask(0);
        r
    }

    /// Runs `f` as root (the server's own bookkeeping: closing handles).
    pub(super) fn as_root<R>(&self, f: impl FnOnce(&mut Process) -> R) -> R {
        let mut p = self.take_proc();
        if p.cred().fsuid != 0 {
            p.set_cred(Cred::root());
        }
        let r = f(&mut p);
        self.procs.lock().unwrap().push(p);
        r
    }

    pub(super) fn attr_of(&self, st: &Stat) -> FileAttr {
        FileAttr {
            ino: INodeNo(self.nodeid(st.st_ino)),
            size: st.st_size as u64,
            blocks: st.st_blocks as u64,
            atime: to_system_time(st.st_atime, st.st_atime_nsec),
            mtime: to_system_time(st.st_mtime, st.st_mtime_nsec),
            ctime: to_system_time(st.st_ctime, st.st_ctime_nsec),
            crtime: UNIX_EPOCH,
            kind: kind_of(st.st_mode),
            perm: (st.st_mode & 0o7777) as u16,
            nlink: st.st_nlink as u32,
            uid: st.st_uid,
            gid: st.st_gid,
            rdev: st.st_rdev as u32,
            blksize: st.st_blksize as u32,
            flags: 0,
        }
    }

    pub(super) fn fstat(p: &mut Process, fd: i32) -> Result<Stat, Errno> {
        p.fstatat(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)
    }

    /// Takes one lookup reference on the inode `fd` (an `O_PATH` fd the
    /// caller opened) refers to: the fd becomes the node's handle if the
    /// node is new, else it is closed. Returns its attributes.
    pub(super) fn remember(&self, p: &mut Process, fd: i32) -> Result<FileAttr, Errno> {
        let st = match self.fresh_stat(p, fd) {
            Ok(st) => st,
            Err(e) => {
                let _ = p.close(fd);
                return Err(e);
            }
        };
        let dup = {
            let mut shard = self.shard(st.st_ino).lock().unwrap();
            match shard.get_mut(&st.st_ino) {
                Some(n) => {
                    n.nlookup += 1;
                    true
                }
                None => {
                    shard.insert(
                        st.st_ino,
                        Node {
                            fd,
                            nlookup: 1,
                            io: -1,
                            listed: false,
                        },
                    );
                    false
                }
            }
        };
        if dup {
            let _ = p.close(fd);
        } else {
            self.counters.nodes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(self.attr_of(&st))
    }

    /// Looks `name` up in the directory `dirfd` as the caller (search
    /// permission on the directory decides) and takes a lookup reference.
    /// A node made in `parent` under the caller's `umask` (mknod,
    /// mkdir), then looked up for the entry the kernel is given.
    pub(super) fn make_entry(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        umask: u32,
        make: impl FnOnce(&mut Process, i32, &[u8]) -> Result<(), Errno>,
    ) -> Result<FileAttr, Errno> {
        self.with(req, |p| {
            let dfd = self.node_fd(parent)?;
            self.with_umask(p, umask, |p| make(p, dfd, name_bytes(name)))?;
            self.dir_changed(parent);
            self.lookup_in(p, dfd, name_bytes(name))
        })
    }

    pub(super) fn lookup_in(
        &self,
        p: &mut Process,
        dirfd: i32,
        name: &[u8],
    ) -> Result<FileAttr, Errno> {
        let fd = p.openat(dirfd, name, O_PATH | O_NOFOLLOW, 0)?;
        self.remember(p, fd)
    }

    /// Drops `n` lookup references on a node; the last closes its handle.
    pub(super) fn forget_n(&self, nodeid: INodeNo, n: u64) {
        let ino = self.ino(nodeid);
        let fd = {
            let mut shard = self.shard(ino).lock().unwrap();
            let Some(node) = shard.get_mut(&ino) else {
                return;
            };
            node.nlookup = node.nlookup.saturating_sub(n);
            if node.nlookup > 0 {
                return;
            }
            // Its backing file goes with it, under the shard's lock: a
            // new lookup of the same inode (a new kernel inode) must not
            // find the old one.
            shard
                .remove(&ino)
                .map(|n| (n.fd, n.io, self.pt.remove(ino)))
        };
        if let Some((fd, io, pt)) = fd {
            self.counters.nodes.fetch_sub(1, Ordering::Relaxed);
            self.as_root(|p| {
                // Reads and writes past the server since it last looked
                // are settled before the backing file goes.
                if let Some(f) = pt {
                    let past = crate::passthrough::last(f);
                    self.settle(p, ino, fd, past);
                }
                let _ = p.close(fd);
                if io >= 0 {
                    self.counters.io_handles.fetch_sub(1, Ordering::Relaxed);
                    let _ = p.close(io);
                }
            });
        }
    }

    /// The uvfs fd a request's file handle stands for: the handle itself,
    /// or in no-open mode for fh 0 (the kernel opened the file without
    /// asking) the inode's own I/O handle, opened `O_RDWR` as root on
    /// first use. The kernel checked the caller's open, and checks each
    /// read and write against the open file's mode; the request then runs
    /// as the caller (set-ID removal on write is the caller's).
    pub(super) fn io_fd(
        &self,
        p: &mut Process,
        nodeid: INodeNo,
        fh: FileHandle,
    ) -> Result<i32, Errno> {
        if fh.0 != 0 || !self.no_open {
            return Ok(fh.0 as i32);
        }
        let ino = self.ino(nodeid);
        let pfd = {
            let shard = self.shard(ino).lock().unwrap();
            let n = shard.get(&ino).ok_or(Errno::ESTALE)?;
            if n.io >= 0 {
                return Ok(n.io);
            }
            n.fd
        };
        let fd = self.root_reopen(p, pfd, O_RDWR | O_NONBLOCK, false)?;
        let mut shard = self.shard(ino).lock().unwrap();
        match shard.get_mut(&ino) {
            Some(n) if n.io < 0 => {
                n.io = fd;
                self.counters.io_handles.fetch_add(1, Ordering::Relaxed);
                Ok(fd)
            }
            // Another worker opened it first: use theirs.
            Some(n) => {
                let io = n.io;
                drop(shard);
                let _ = p.close(fd);
                Ok(io)
            }
            // Cannot be: the kernel holds the inode while it sends I/O.
            None => {
                drop(shard);
                let _ = p.close(fd);
                Err(Errno::ESTALE)
            }
        }
    }

    /// A directory handle for one READDIR(PLUS) in no-open mode (fh 0):
    /// a fresh fd on the node, closed after the request, so two readers
    /// of one directory never share a position; the listing starts at the
    /// kernel's cookie as usual. Opened as root: the kernel checked the
    /// caller's opendir.
    pub(super) fn dir_fd(
        &self,
        p: &mut Process,
        nodeid: INodeNo,
        fh: FileHandle,
        pid: u32,
    ) -> Result<(i32, bool), Errno> {
        if fh.0 != 0 || !self.no_open {
            return Ok((fh.0 as i32, false));
        }
        let pfd = self.node_fd(nodeid)?;
        // Before the listing is read: a change made after this is sure to
        // see the mark (`dir_changed`).
        self.mark_listed(nodeid);
        // The caller's `O_NOATIME` (no OPENDIR brought its flags, and
        // fuser does not pass READDIR's): asked only where the listing
        // would stamp atime.
        let noatime = Self::atime_due(p, pfd) && caller_fd_noatime(pid, DIR_READ_CALLS);
        self.root_reopen(p, pfd, O_RDONLY | O_DIRECTORY, noatime)
            .map(|fd| (fd, true))
    }

    /// A reopen of the node's `O_PATH` fd `pfd` as root, with `O_NOATIME`
    /// if `noatime` (root may set it on any file).
    pub(super) fn root_reopen(
        &self,
        p: &mut Process,
        pfd: i32,
        flags: i32,
        noatime: bool,
    ) -> Result<i32, Errno> {
        let cred = p.cred().clone();
        p.set_cred(Cred::root());
        let r = p.reopen(pfd, flags | if noatime { O_NOATIME } else { 0 });
        p.set_cred(cred);
        r
    }

    /// Whether a read of the inode behind `fd` would stamp its atime under
    /// relatime (atime not after mtime or ctime, or a day old); when in
    /// doubt (no attributes), yes.
    pub(super) fn atime_due(p: &mut Process, fd: i32) -> bool {
        let Ok(st) = Self::fstat(p, fd) else {
            return true;
        };
        let a = (st.st_atime, st.st_atime_nsec);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(i64::MAX, |d| d.as_secs() as i64);
        a <= (st.st_mtime, st.st_mtime_nsec)
            || a <= (st.st_ctime, st.st_ctime_nsec)
            || now.saturating_sub(st.st_atime) >= 24 * 60 * 60
    }

    pub(super) fn reply_entry(&self, r: Result<FileAttr, Errno>, reply: ReplyEntry) {
        match r {
            Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
            Err(Errno::ENOENT) => {
                // A negative entry: node id 0 with a timeout.
                let mut attr = self.attr_of(&Stat::default());
                attr.ino = INodeNo(0);
                reply.entry(&TTL, &attr, Generation(0));
            }
            Err(e) => reply.error(ferr(e)),
        }
    }

    pub(super) fn statfs_reply(&self, reply: ReplyStatfs) {
        let s = self.fs.statfs();
        reply.statfs(
            s.blocks,
            s.bfree,
            s.bfree,
            s.files,
            s.ffree,
            s.bsize as u32,
            s.namemax as u32,
            s.bsize as u32,
        );
    }
}

/// The system calls that list a directory, whose first argument is the fd.
#[cfg(target_arch = "x86_64")]
pub(super) const DIR_READ_CALLS: &[i64] = &[libc::SYS_getdents64, libc::SYS_getdents];
#[cfg(not(target_arch = "x86_64"))]
pub(super) const DIR_READ_CALLS: &[i64] = &[libc::SYS_getdents64];

/// Whether the caller of a request (its thread `pid`, blocked in the
/// system call until the reply) is in one of `calls` on an fd opened with
/// `O_NOATIME`: from `/proc/PID/syscall` (the call and its first argument)
/// and `/proc/PID/fdinfo/FD` (the open's flags). No-open mode has no
/// per-open handle to carry the flag, and a READDIR's flags do not reach
/// fuser's handler. Unknown (pid 0: another pid namespace; another call,
/// such as an io_uring worker's) counts as no.
pub(super) fn caller_fd_noatime(pid: u32, calls: &[i64]) -> bool {
    let Some((nr, Some(fd))) = caller_syscall(pid) else {
        return false;
    };
    if !calls.contains(&nr) {
        return false;
    }
    let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else {
        return false;
    };
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| i32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|f| f & O_NOATIME != 0)
}

impl UvfsFuse {
    /// Notes that the kernel may now cache a listing of the directory
    /// `nodeid` (no-open mode: see [`Self::dir_changed`]).
    fn mark_listed(&self, nodeid: INodeNo) {
        let ino = self.ino(nodeid);
        if let Some(n) = self.shard(ino).lock().unwrap().get_mut(&ino) {
            n.listed = true;
        }
    }

    /// The directory `nodeid` changed (an entry made, removed or renamed,
    /// or its ".." moved). In no-open mode the kernel caches a listing of
    /// each directory it lists (it gives a directory opened without
    /// OPENDIR `FOPEN_CACHE_DIR`): it checks that cache against its own
    /// record of the directory's changes only when a listing starts at
    /// offset 0, so a reader that continues or seeks (`lseek` to a cookie,
    /// `seekdir`) would read the old listing, and a moved directory's
    /// cache keeps its old "..". Where such a cache may exist (a READDIR
    /// since the last change), it is dropped before the reply
    /// (`FUSE_NOTIFY_INVAL_INODE`), so the caller's next listing asks the
    /// server. A node the kernel no longer knows (ENOENT) has no cache;
    /// another refusal is said once on stderr.
    pub(super) fn dir_changed(&self, nodeid: INodeNo) {
        if !self.no_open {
            return;
        }
        let ino = self.ino(nodeid);
        let was = match self.shard(ino).lock().unwrap().get_mut(&ino) {
            Some(n) => std::mem::replace(&mut n.listed, false),
            None => false,
        };
        let Some(notifier) = self.notifier.get().filter(|_| was) else {
            return;
        };
        match notifier.inval_inode(nodeid, 0, 0) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {}
            Err(e) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| {
                    eprintln!("uvfs: the kernel refused to drop a directory's cached listing: {e}")
                });
            }
        }
    }

    /// [`Self::dir_changed`] where the call (its result `r`) made a change.
    pub(super) fn changed_if_ok<T>(&self, r: &Result<T, Errno>, nodeid: INodeNo) {
        if r.is_ok() {
            self.dir_changed(nodeid);
        }
    }

    /// [`Self::dir_changed`] for `name` in the directory open as `dfd`,
    /// if it is a directory: one moved to another parent, whose ".."
    /// changed.
    pub(super) fn moved_dir_changed(&self, p: &mut Process, dfd: i32, name: &OsStr) {
        if let Ok(st) = p.fstatat(dfd, name_bytes(name), AT_SYMLINK_NOFOLLOW)
            && st.st_mode & S_IFMT == S_IFDIR
        {
            self.dir_changed(INodeNo(self.nodeid(st.st_ino)));
        }
    }
}

/// The system call the caller of a request (its thread `pid`, blocked in
/// it until the reply) is in, with its first argument, from
/// `/proc/PID/syscall`; `None` for pid 0 (another pid namespace) or an
/// unreadable file.
pub(super) fn caller_syscall(pid: u32) -> Option<(i64, Option<u32>)> {
    if pid == 0 {
        return None;
    }
    let s = std::fs::read_to_string(format!("/proc/{pid}/syscall")).ok()?;
    let mut words = s.split_whitespace();
    let nr = words.next()?.parse::<i64>().ok()?;
    let arg0 = words
        .next()
        .and_then(|w| w.strip_prefix("0x"))
        .and_then(|h| u32::from_str_radix(h, 16).ok());
    Some((nr, arg0))
}
