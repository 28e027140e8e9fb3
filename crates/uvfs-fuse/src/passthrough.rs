//! FUSE passthrough (Linux's `fs/fuse/passthrough.c` and
//! `fs/fuse/backing.c`, since 6.9): the kernel reads, writes and maps a
//! regular file opened through the mount directly on a *backing file*
//! the server registered, with no request to the server.
//!
//! uvfs's tmpfs can hold a file's data in a kernel memfd (the library's
//! `tmpfs::memfd`, made for `mmap`): an open of a regular file through the
//! mount promotes the inode's data to its memfd (`FileSystem::mmap_file`),
//! (with `--size`, a file in a private kernel tmpfs instead: see
//! [`backing`](crate::backing); "memfd" below means either),
//! registers that memfd once per inode with `FUSE_DEV_IOC_BACKING_OPEN`
//! and answers `FOPEN_PASSTHROUGH` with it. The [`BackingId`] is kept
//! while the kernel knows the inode (until its `FORGET`), not only while
//! a handle is open: every open of the inode must name the same backing
//! file while another is open, and a close-and-reopen loop then costs no
//! new registration (a reopen of the memfd, an ioctl, and their undoing:
//! `open1` ran at half the speed of `--passthrough off` when the id went
//! with the last handle). Reads, writes and `mmap` then
//! run on the memfd's own page cache: the page cache of a program that
//! mapped the same memfd inside the server's process (the shim's tree)
//! is the one the mount's users see.
//!
//! **Every open of a regular file** goes through passthrough, not only
//! writers or large files: the kernel keeps an inode in one I/O mode at a
//! time (`fs/fuse/iomode.c`): while one file of it is open for
//! passthrough, an open answered without it fails with `EIO`, and the
//! other way round. A choice per open would make opens fail at random.
//!
//! **What the kernel leaves to the server.** A passthrough write updates
//! the FUSE inode's size itself and marks its times, size and blocks
//! stale (`fuse_write_update_attr`), so the next `stat` asks the server;
//! it does not tell the server that anything was written. So the server
//! watches the memfd's ctime: it records it after every change of its
//! own, and when a `GETATTR`, `SETATTR`, lookup or the inode's `FORGET`
//! finds it moved, a write went past the server, and it stamps mtime and
//! ctime as the write would have. A passthrough read likewise moves only
//! the memfd's atime (by the kernel's relatime rules for it); when the
//! server finds that moved, it reads one byte of the file through uvfs as
//! root, which updates uvfs's atime by the same rules and leaves ctime
//! alone (a time set with `utimensat` would move ctime). A read and a
//! write found together are replayed in the order the memfd's atime and
//! ctime tell. Size and blocks come from the memfd
//! already (`fstat` of it). Set-ID removal needs nothing more: before a
//! passthrough write the kernel removes privileges on the FUSE file as on
//! any write (`file_remove_privs`), which with `FUSE_HANDLE_KILLPRIV_V2`
//! reaches the server as a `SETATTR` that sets nothing, sent as the
//! writer (see `UvfsFuse::setattr`).

use fuser::BackingId;
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `uvfs mount --passthrough`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Passthrough {
    /// On when the kernel offers `FUSE_PASSTHROUGH` at `FUSE_INIT` and the
    /// server holds `CAP_SYS_ADMIN` (registering a backing file needs it);
    /// off otherwise. Which, and why, is said once on stderr.
    Auto,
    /// On, or the mount fails (the reason on stderr; exit status 2 when it
    /// is known before mounting, 1 when the kernel refuses at `FUSE_INIT`).
    On,
    /// Every read and write is a request to the server.
    Off,
}

/// `CAP_SYS_ADMIN`'s bit number.
const CAP_SYS_ADMIN: u32 = 21;

/// Whether this process holds `CAP_SYS_ADMIN` in its effective set (the
/// `CapEff:` line of `/proc/self/status`, bit 21).
pub fn has_cap_sys_admin() -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// A kernel file's ctime and atime as (seconds, nanoseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Times {
    ctime: (i64, i64),
    atime: (i64, i64),
}

/// A kernel file's [`Times`] (`fstat`), or `(0, -1)` for both if they
/// cannot be read.
fn times_of(fd: &OwnedFd) -> Times {
    // SAFETY: an all-zero `struct stat` is a valid value.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable `struct stat`; the fd is open.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Times {
            ctime: (0, -1),
            atime: (0, -1),
        };
    }
    Times {
        ctime: (st.st_ctime, st.st_ctime_nsec),
        atime: (st.st_atime, st.st_atime_nsec),
    }
}

/// What reached a backing file past the server since it last looked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Past {
    /// A write: its ctime moved.
    pub(crate) wrote: bool,
    /// A read that moved its atime (the kernel decides that by the backing
    /// file's own mount, relatime, and the reader's `O_NOATIME`).
    pub(crate) read: bool,
    /// The last read came after the last write (its atime is later than
    /// its ctime), which is the order the server replays them in.
    pub(crate) read_last: bool,
}

/// One inode opened through passthrough (while the kernel knows it).
pub(crate) struct PtFile {
    /// The registered memfd (closed with `FUSE_DEV_IOC_BACKING_CLOSE` on
    /// drop).
    pub(crate) backing: BackingId,
    /// The server's own fd on the memfd (its ctime and atime are watched).
    kfd: OwnedFd,
    /// The memfd's times when the server last looked.
    seen: Times,
}

impl PtFile {
    /// What reached the memfd since the server last looked; looks now.
    fn take(&mut self) -> Past {
        let now = times_of(&self.kfd);
        let past = Past {
            wrote: now.ctime != self.seen.ctime,
            read: now.atime != self.seen.atime,
            read_last: now.atime > now.ctime,
        };
        self.seen = now;
        past
    }
}

/// The passthrough state of a server.
pub(crate) struct PtTable {
    mode: Passthrough,
    /// The private tmpfs's size when the files live there (`--size`).
    pub(crate) kernel_limit: Option<u64>,
    /// Whether `auto` says on stderr that it turned passthrough on (the
    /// "off" messages, which explain a slower mode, are always said).
    pub(crate) say_on: bool,
    on: AtomicBool,
    /// Said on stderr that the kernel refused a backing file.
    said: AtomicBool,
    /// Entries in `files` (a lock-free "none" for the common checks).
    count: AtomicUsize,
    files: Mutex<HashMap<u64, PtFile>>,
}

impl PtTable {
    pub(crate) fn new(mode: Passthrough) -> PtTable {
        PtTable {
            mode,
            kernel_limit: None,
            say_on: true,
            on: AtomicBool::new(false),
            said: AtomicBool::new(false),
            count: AtomicUsize::new(0),
            files: Mutex::new(HashMap::new()),
        }
    }

    /// Whether new opens go through passthrough.
    pub(crate) fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// Whether any inode is open through passthrough.
    pub(crate) fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// At `FUSE_INIT`: whether to ask for passthrough, given whether the
    /// kernel offers it. Says the outcome of `auto` on stderr; `on` that
    /// cannot be had is an error (the handshake fails).
    pub(crate) fn decide(&self, offered: bool) -> std::io::Result<bool> {
        let why_not = if !offered {
            Some(
                "the kernel does not offer FUSE_PASSTHROUGH (Linux 6.9 and CONFIG_FUSE_PASSTHROUGH are needed)",
            )
        } else if !has_cap_sys_admin() {
            Some("registering a backing file needs CAP_SYS_ADMIN (run the server as root)")
        } else {
            None
        };
        let on = match (self.mode, why_not) {
            (Passthrough::Off, _) => false,
            (Passthrough::On, Some(why)) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    format!("--passthrough=on: {why}"),
                ));
            }
            (Passthrough::On, None) => true,
            (Passthrough::Auto, Some(why)) => {
                eprintln!("uvfs: FUSE passthrough off: {why}");
                false
            }
            (Passthrough::Auto, None) => {
                match self.kernel_limit.filter(|_| self.say_on) {
                    Some(size) => eprintln!(
                        "uvfs: FUSE passthrough on: the kernel reads, writes and maps regular files on their backing files, in a private tmpfs of size={size} that holds them to --size"
                    ),
                    None if self.say_on => eprintln!(
                        "uvfs: FUSE passthrough on: the kernel reads, writes and maps regular files on their memfds"
                    ),
                    None => {}
                }
                true
            }
        };
        self.on.store(on, Ordering::Relaxed);
        Ok(on)
    }

    /// The kernel refused to register a backing file: passthrough goes
    /// off for inodes not already open through it (said once).
    pub(crate) fn refused(&self, e: &std::io::Error) {
        self.on.store(false, Ordering::Relaxed);
        if !self.said.swap(true, Ordering::Relaxed) {
            eprintln!("uvfs: FUSE passthrough off: the kernel refused a backing file: {e}");
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<u64, PtFile>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether inode `ino` has its backing file already.
    pub(crate) fn has(&self, ino: u64) -> bool {
        self.any() && self.lock().contains_key(&ino)
    }

    /// Gives inode `ino` its backing file if it has none: the memfd
    /// `kfd()` gives, registered with `backing`. Whether the open is to
    /// be answered with passthrough.
    pub(crate) fn attach(
        &self,
        ino: u64,
        kfd: impl FnOnce() -> Option<OwnedFd>,
        backing: impl FnOnce(&OwnedFd) -> std::io::Result<BackingId>,
    ) -> bool {
        let mut files = self.lock();
        if files.contains_key(&ino) {
            return true;
        }
        if !self.on() {
            return false;
        }
        let Some(kfd) = kfd() else {
            return false;
        };
        match backing(&kfd) {
            Ok(b) => {
                let seen = times_of(&kfd);
                files.insert(
                    ino,
                    PtFile {
                        backing: b,
                        kfd,
                        seen,
                    },
                );
                self.count.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(e) => {
                self.refused(&e);
                false
            }
        }
    }

    /// The kernel forgot `ino`: its entry, if it had one (the caller
    /// settles a last write, then drops it).
    pub(crate) fn remove(&self, ino: u64) -> Option<PtFile> {
        if !self.any() {
            return None;
        }
        let f = self.lock().remove(&ino)?;
        self.count.fetch_sub(1, Ordering::Relaxed);
        Some(f)
    }

    /// What reached `ino`'s memfd past the server since it last looked
    /// (it has looked now).
    pub(crate) fn take(&self, ino: u64) -> Past {
        if !self.any() {
            return Past::default();
        }
        self.lock()
            .get_mut(&ino)
            .map(PtFile::take)
            .unwrap_or_default()
    }

    /// The server changed or read `ino`'s memfd itself: what it looks like
    /// now came through the server.
    pub(crate) fn absorb(&self, ino: u64) {
        if !self.any() {
            return;
        }
        if let Some(f) = self.lock().get_mut(&ino) {
            f.seen = times_of(&f.kfd);
        }
    }
}

/// What reached a dropped entry's memfd past the server since the server
/// last looked.
pub(crate) fn last(mut f: PtFile) -> Past {
    f.take()
}
