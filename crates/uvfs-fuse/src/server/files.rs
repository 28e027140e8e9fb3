//! The server's file-handle and attribute work behind the handlers: the
//! flags and the permission check of a server-side open, passthrough's
//! bookkeeping (the memfd's ctime watched for writes that went past the
//! server, the backing file attached to an open), set-ID removal,
//! setattr, and COPY_FILE_RANGE's copy inside the server.

use super::*;
use crate::passthrough::Past;

impl UvfsFuse {
    /// The flags a server-side open uses for a request's open flags:
    /// `O_APPEND` goes (the kernel computes the offset of every write from
    /// its own size, and a page written back through this handle must land
    /// where it belongs), and so do `O_DIRECT` (the kernel does direct I/O
    /// itself), `O_NOFOLLOW` (the kernel resolved the path; a reopen with
    /// it would be `ELOOP`, as through `/proc/self/fd`) and the flags only
    /// the caller's file knows.
    pub(super) fn server_flags(flags: i32) -> i32 {
        flags
            & !(O_APPEND | O_DIRECT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_ASYNC | FMODE_EXEC_FLAG)
    }

    /// Opens the node `fd` for a request: as [`Process::reopen`], but an
    /// execve's open (`__FMODE_EXEC`) is checked for execute permission,
    /// as Linux checks it, and then opened for reading as root.
    pub(super) fn open_node(&self, p: &mut Process, fd: i32, flags: i32) -> Result<i32, Errno> {
        let mut sflags = Self::server_flags(flags);
        // The kernel keeps a FIFO's I/O to itself and never asks the server
        // to open one; a request that does (a raw client) must not park a
        // worker in the open's rendezvous: opened non-blocking, it gets
        // the non-blocking answers (and the server reads and writes only
        // at offsets: `ESPIPE`).
        if p.fstat(fd).is_ok_and(|st| st.st_mode & S_IFMT == S_IFIFO) {
            sflags |= O_NONBLOCK;
        }
        if flags & FMODE_EXEC_FLAG != 0 && p.cred().fsuid != 0 {
            p.faccessat(fd, "", X_OK, AT_EMPTY_PATH | AT_EACCESS)?;
            let cred = p.cred().clone();
            p.set_cred(Cred::root());
            let r = p.reopen(fd, sflags);
            p.set_cred(cred);
            return r;
        }
        p.reopen(fd, sflags)
    }

    /// Writeback cache: the kernel fills a partly written page by reading
    /// it through the handle the writer opened, so a write-only open is
    /// served by a read-write handle. The caller's open (`h`, write-only)
    /// made the permission checks; the wider handle is opened as root and
    /// with `O_NOATIME` (those page fills are no read of the caller's), and
    /// `h` is closed.
    pub(super) fn widen_to_rdwr(p: &mut Process, h: i32) -> Result<i32, Errno> {
        let cred = p.cred().clone();
        p.set_cred(Cred::root());
        let r = p.reopen(h, O_RDWR | O_NOATIME);
        let _ = p.close(h);
        p.set_cred(cred);
        r
    }

    /// A write went past the server onto an inode's memfd (passthrough):
    /// stamps mtime and ctime as the write would have (see the
    /// `passthrough` module). `fd` is a handle on the inode; runs as root.
    pub(super) fn apply_write(&self, p: &mut Process, fd: i32) {
        let cred = p.cred().clone();
        p.set_cred(Cred::root());
        let omit = Timespec {
            tv_sec: 0,
            tv_nsec: uvfs::cred::UTIME_OMIT,
        };
        let now = Timespec {
            tv_sec: 0,
            tv_nsec: uvfs::cred::UTIME_NOW,
        };
        let _ = p.utimensat(fd, "", Some([omit, now]), AT_EMPTY_PATH);
        p.set_cred(cred);
    }

    /// Updates atime as a read through the node `fd` by the caller would
    /// have: one byte read through uvfs as root (uvfs's relatime rules
    /// decide; ctime stays).
    pub(super) fn apply_read(&self, p: &mut Process, fd: i32) {
        let cred = p.cred().clone();
        p.set_cred(Cred::root());
        if let Ok(fh) = p.reopen(fd, O_RDONLY) {
            let _ = p.read(fh, &mut [0u8; 1]);
            let _ = p.close(fh);
        }
        p.set_cred(cred);
    }

    /// Replays what reached `ino`'s backing file past the server (`past`)
    /// through the node `fd`, in the order it happened.
    pub(super) fn settle(&self, p: &mut Process, ino: u64, fd: i32, past: Past) {
        if past.read && !past.read_last {
            self.apply_read(p, fd);
        }
        if past.wrote {
            self.apply_write(p, fd);
        }
        if past.read && past.read_last {
            self.apply_read(p, fd);
        }
        if past.read {
            // The replayed read may itself have moved the backing file's
            // atime: that one came through the server.
            self.pt.absorb(ino);
        }
    }

    /// Settles reads and writes past the server on `ino` (if it is open
    /// through passthrough and any happened), through the handle `fd`.
    pub(super) fn pt_sync(&self, p: &mut Process, ino: u64, fd: i32) {
        let past = self.pt.take(ino);
        self.settle(p, ino, fd, past);
    }

    /// `fstat` of the node `fd` after settling reads and writes past the
    /// server.
    pub(super) fn fresh_stat(&self, p: &mut Process, fd: i32) -> Result<Stat, Errno> {
        let st = Self::fstat(p, fd)?;
        let past = self.pt.take(st.st_ino);
        if past != Past::default() {
            self.settle(p, st.st_ino, fd, past);
            return Self::fstat(p, fd);
        }
        Ok(st)
    }

    /// Whether an open of inode `ino` with handle `fh` (a uvfs fd) is to
    /// be answered through passthrough: yes if the inode has its backing
    /// file already, else if passthrough is on, `fh` is a regular file
    /// and its memfd could be registered (with `backing`); else it is a
    /// cached open.
    pub(super) fn pt_attach(
        &self,
        p: &mut Process,
        ino: u64,
        fh: i32,
        backing: impl FnOnce(&std::os::fd::OwnedFd) -> std::io::Result<fuser::BackingId>,
    ) -> bool {
        if self.pt.has(ino) {
            return true;
        }
        if !self.pt.on() {
            return false;
        }
        if !p.fstat(fh).is_ok_and(|st| st.st_mode & S_IFMT == S_IFREG) {
            return false;
        }
        // The memfd the kernel is to use (the inode's data moves into it
        // on the first open); opened as root by the server, read-write:
        // the kernel opens its own backing file on it with the caller's
        // open flags.
        let kfd = || self.fs.mmap_file(ino, O_RDWR).ok();
        self.pt.attach(ino, kfd, backing)
    }

    /// Whether a size-0 SETATTR without a file handle on the node `fd` is,
    /// in no-open mode, an `O_TRUNC` open's truncation of a file that is
    /// already empty. The kernel sends an open's truncation and truncate(2)
    /// alike (size only, no handle, no times: the server's truncation is
    /// to stamp the times), but Linux stamps mtime and ctime at an
    /// `O_TRUNC` open (as at ftruncate) even when the size does not
    /// change, and at truncate(2) only when it does. Where the size
    /// changes both stamp, so only an empty file needs telling apart: by
    /// the system call its caller (the request's thread, blocked in it
    /// until the reply) is in, from `/proc/PID/syscall`. A caller the
    /// server cannot see there (another pid namespace: pid 0) counts as
    /// truncate(2).
    pub(super) fn open_truncation(p: &mut Process, fd: i32, pid: u32) -> bool {
        if pid == 0
            || !Self::fstat(p, fd).is_ok_and(|st| st.st_mode & S_IFMT == S_IFREG && st.st_size == 0)
        {
            return false;
        }
        let Some((nr, _)) = super::nodes::caller_syscall(pid) else {
            return false;
        };
        #[cfg(target_arch = "x86_64")]
        let legacy = nr == libc::SYS_open || nr == libc::SYS_creat;
        #[cfg(not(target_arch = "x86_64"))]
        let legacy = false;
        legacy || nr == libc::SYS_openat || nr == libc::SYS_openat2
    }

    /// A SETATTR that sets nothing: chown(-1, -1), or a write's removal
    /// of set-ID bits. Before a write by a caller without `CAP_FSETID` to
    /// a set-ID file (through passthrough or not), the kernel removes
    /// privileges on the FUSE file (`file_remove_privs`); with
    /// `FUSE_HANDLE_KILLPRIV_V2` that reaches the server as this empty
    /// SETATTR, sent as the writer, who need not own the file. A chown
    /// (-1, -1) of a set-ID file by a non-owner never gets here: the
    /// kernel's own check (`default_permissions`) refuses it with `EPERM`.
    /// So: the chown as the caller, which stamps ctime and applies
    /// chown's set-ID rules; where it is refused, the write's rules
    /// (`remove_privs_on_write`) as root, or `EPERM` if they change
    /// nothing.
    pub(super) fn kill_or_chown(&self, p: &mut Process, fd: i32) -> Result<(), Errno> {
        let e = match p.fchownat(
            fd,
            "",
            u32::MAX,
            u32::MAX,
            AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
        ) {
            Err(Errno::EPERM) => Errno::EPERM,
            r => return r,
        };
        let st = Self::fstat(p, fd)?;
        let Ok(attr) = self.fs.getattr(st.st_ino) else {
            return Err(e);
        };
        let Some(mode) = uvfs::cred::remove_privs_on_write(p.cred(), &attr) else {
            return Err(e);
        };
        let cred = p.cred().clone();
        p.set_cred(Cred::root());
        let r = p.fchmodat(fd, "", mode & 0o7777, AT_EMPTY_PATH);
        p.set_cred(cred);
        r
    }

    /// The changes of one SETATTR on the node `fd`, as the caller.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn setattr_node(
        &self,
        p: &mut Process,
        fd: i32,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        fh: Option<FileHandle>,
    ) -> Result<Stat, Errno> {
        if let Some(mode) = mode {
            p.fchmodat(fd, "", mode & 0o7777, AT_EMPTY_PATH)?;
        }
        // A setattr that sets nothing is chown(-1, -1) (the kernel
        // sends FATTR_CTIME only with a writeback cache): Linux still
        // stamps ctime (and applies chown's set-ID rules), which
        // uvfs's fchownat(-1, -1) does as the caller.
        let nothing = mode.is_none() && size.is_none() && atime.is_none() && mtime.is_none();
        if nothing && uid.is_none() && gid.is_none() {
            self.kill_or_chown(p, fd)?;
        } else if uid.is_some() || gid.is_some() {
            p.fchownat(
                fd,
                "",
                uid.unwrap_or(u32::MAX),
                gid.unwrap_or(u32::MAX),
                AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
            )?;
        }
        if let Some(size) = size {
            let len = i64::try_from(size).map_err(|_| Errno::EINVAL)?;
            match fh {
                Some(fh) => p.ftruncate(fh.0 as i32, len)?,
                // truncate(2): write permission on the file, times
                // stamped only if the size changes.
                None => p.truncateat(fd, "", len, AT_EMPTY_PATH)?,
            }
        }
        if atime.is_some() || mtime.is_some() {
            let times = [timespec_of(atime), timespec_of(mtime)];
            p.utimensat(fd, "", Some(times), AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)?;
        }
        Self::fstat(p, fd)
    }
}

impl UvfsFuse {
    /// COPY_FILE_RANGE's copy, inside the server.
    pub(super) fn copy_range(
        &self,
        p: &mut Process,
        fh_in: FileHandle,
        offset_in: u64,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
    ) -> Result<u64, Errno> {
        {
            let mut buf = vec![0u8; (len.min(1 << 20)) as usize];
            let mut done: u64 = 0;
            // A FUSE reply counts bytes in 32 bits.
            let len = len.min(u64::from(u32::MAX) & !0xfff);
            while done < len {
                let want = (len - done).min(buf.len() as u64) as usize;
                let n = p.pread(fh_in.0 as i32, &mut buf[..want], (offset_in + done) as i64)?;
                if n == 0 {
                    break;
                }
                let mut w = 0;
                while w < n {
                    match p.pwrite(
                        fh_out.0 as i32,
                        &buf[w..n],
                        (offset_out + done + w as u64) as i64,
                    ) {
                        Ok(k) => w += k,
                        Err(e) if done + w as u64 == 0 => return Err(e),
                        Err(_) => return Ok(done + w as u64),
                    }
                }
                done += n as u64;
            }
            Ok(done)
        }
    }
}
