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
        let cred = p.cred().clone();
        p.set_cred(Cred::root());
        let r = p.reopen(pfd, O_RDWR | O_NONBLOCK);
        p.set_cred(cred);
        let fd = r?;
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
    ) -> Result<(i32, bool), Errno> {
        if fh.0 != 0 || !self.no_open {
            return Ok((fh.0 as i32, false));
        }
        let pfd = self.node_fd(nodeid)?;
        let cred = p.cred().clone();
        p.set_cred(Cred::root());
        let r = p.reopen(pfd, O_RDONLY | O_DIRECTORY);
        p.set_cred(cred);
        Ok((r?, true))
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
