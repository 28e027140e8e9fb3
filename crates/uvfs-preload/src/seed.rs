//! Getting files in and out of a process's private uvfs: `UVFS_SEED=DIR`
//! copies the host directory `DIR` into the uvfs root when uvfs is built
//! (files, directories, symlinks, modes, extended attributes and POSIX
//! ACLs, times); `UVFS_DUMP=DIR` copies the uvfs tree out to the host
//! directory `DIR` (created if missing; extended attributes too) when the
//! process that loaded the shim exits through `exit()` (not its forks, not
//! `_exit`). Both run with the shim's guard set, so the std::fs calls they
//! make go to the kernel.

use crate::guard::{Busy, busy};
use crate::state::with_state;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use uvfs::Process;
use uvfs::uapi::{
    AT_FDCWD, AT_SYMLINK_NOFOLLOW, O_CREAT, O_DIRECTORY, O_RDONLY, O_WRONLY, Timespec,
};

/// Copies `UVFS_SEED` into the fresh uvfs root (best effort: a file that
/// cannot be read is skipped).
pub(crate) fn seed(p: &mut Process) {
    let Some(dir) = std::env::var_os("UVFS_SEED") else {
        return;
    };
    copy_in(p, Path::new(&dir), b"");
}

fn copy_in(p: &mut Process, host: &Path, at: &[u8]) {
    let Ok(rd) = std::fs::read_dir(host) else {
        return;
    };
    let mut entries: Vec<_> = rd.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let mut path = at.to_vec();
        path.push(b'/');
        path.extend_from_slice(e.file_name().as_bytes());
        let Ok(md) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        let ft = md.file_type();
        if ft.is_dir() {
            let _ = p.mkdir(&path, 0o700);
            copy_in(p, &e.path(), &path);
        } else if ft.is_symlink() {
            if let Ok(t) = std::fs::read_link(e.path()) {
                let _ = p.symlink(t.as_os_str().as_bytes(), &path);
            }
            continue;
        } else if ft.is_file() {
            let Ok(data) = std::fs::read(e.path()) else {
                continue;
            };
            let Ok(fd) = p.open(&path, O_CREAT | O_WRONLY, 0o600) else {
                continue;
            };
            let mut off = 0;
            while off < data.len() {
                match p.write(fd, &data[off..]) {
                    Ok(n) if n > 0 => off += n,
                    _ => break,
                }
            }
            let _ = p.close(fd);
        } else {
            continue;
        }
        let _ = p.chmod(&path, md.mode() & 0o7777);
        let _ = uvfs_fuse::tree::xattrs_in(p, &e.path(), &path, "uvfs-preload: UVFS_SEED");
        let t = [
            Timespec {
                tv_sec: md.atime(),
                tv_nsec: md.atime_nsec(),
            },
            Timespec {
                tv_sec: md.mtime(),
                tv_nsec: md.mtime_nsec(),
            },
        ];
        let _ = p.utimensat(AT_FDCWD, &path, Some(t), AT_SYMLINK_NOFOLLOW);
    }
}

static OWNER_PID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn at_exit() {
    // SAFETY: getpid has no preconditions.
    if OWNER_PID.load(std::sync::atomic::Ordering::Relaxed) != unsafe { libc::getpid() } {
        return;
    }
    // Flush stdio first: cookie streams on uvfs files write through the
    // shim, and glibc flushes only after the atexit handlers.
    // SAFETY: fflush(NULL) flushes every stream.
    unsafe { libc::fflush(std::ptr::null_mut()) };
    dump();
}

/// `_exit` and `_Exit` of the process that owns `UVFS_DUMP` (shells such
/// as dash leave with `_exit`, which runs no atexit handler): the dump is
/// made then, once, without flushing stdio (which `_exit` does not do).
pub(crate) fn at_underscore_exit() {
    // SAFETY: getpid has no preconditions.
    if OWNER_PID.load(std::sync::atomic::Ordering::Relaxed) == unsafe { libc::getpid() } {
        dump();
    }
}

/// Copies the uvfs tree to `UVFS_DUMP`, once per process.
fn dump() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if DONE.swap(true, std::sync::atomic::Ordering::AcqRel) {
        return;
    }
    let Some(dir) = std::env::var_os("UVFS_DUMP") else {
        return;
    };
    if busy() {
        return;
    }
    if crate::path::is_client() {
        // The tree's uvfs is the mount at the prefix: copied with the
        // kernel's calls.
        if let Some(pre) = crate::path::prefix_raw() {
            let _busy = Busy::enter();
            let _ = std::fs::create_dir_all(&dir);
            copy_mounted(Path::new(std::ffi::OsStr::from_bytes(pre)), Path::new(&dir));
        }
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        with_state(|s| {
            let _busy = Busy::enter();
            let p = s.p();
            let _ = std::fs::create_dir_all(&dir);
            copy_out(p, b"/", Path::new(&dir));
        })
    });
}

fn copy_out(p: &mut Process, at: &[u8], host: &Path) {
    let Ok(fd) = p.open(at, O_RDONLY | O_DIRECTORY, 0) else {
        return;
    };
    let mut names = Vec::new();
    let mut buf = vec![0u8; 65536];
    while let Ok(n) = p.getdents64(fd, &mut buf) {
        if n == 0 {
            break;
        }
        for d in uvfs::stat::parse_dirents64(&buf[..n]) {
            if d.name != b"." && d.name != b".." {
                names.push(d.name);
            }
        }
    }
    let _ = p.close(fd);
    for name in names {
        let mut path = at.to_vec();
        if path != b"/" {
            path.push(b'/');
        }
        path.extend_from_slice(&name);
        let hp = host.join(std::ffi::OsStr::from_bytes(&name));
        let Ok(st) = p.lstat(&path) else { continue };
        match st.st_mode & libc::S_IFMT {
            libc::S_IFDIR => {
                let _ = std::fs::create_dir(&hp);
                copy_out(p, &path, &hp);
            }
            libc::S_IFLNK => {
                let mut t = vec![0u8; 4096];
                if let Ok(n) = p.readlink(&path, &mut t) {
                    let _ = std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&t[..n]), &hp);
                }
                continue;
            }
            _ => {
                let Ok(fd) = p.open(&path, O_RDONLY, 0) else {
                    continue;
                };
                let mut data = Vec::new();
                let mut chunk = vec![0u8; 65536];
                while let Ok(n) = p.read(fd, &mut chunk) {
                    if n == 0 {
                        break;
                    }
                    data.extend_from_slice(&chunk[..n]);
                }
                let _ = p.close(fd);
                let _ = std::fs::write(&hp, &data);
            }
        }
        let _ = std::fs::set_permissions(&hp, std::fs::Permissions::from_mode(st.st_mode & 0o7777));
        let _ = uvfs_fuse::tree::xattrs_out(p, &path, &hp, "uvfs-preload: UVFS_DUMP");
    }
}

/// Copies the mounted tree `from` into host directory `to` (files,
/// directories, symlinks, permission bits), as `copy_out` does from uvfs.
fn copy_mounted(from: &Path, to: &Path) {
    let Ok(rd) = std::fs::read_dir(from) else {
        return;
    };
    for e in rd.flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let Ok(md) = std::fs::symlink_metadata(&src) else {
            continue;
        };
        if md.is_dir() {
            let _ = std::fs::create_dir(&dst);
            copy_mounted(&src, &dst);
        } else if md.file_type().is_symlink() {
            if let Ok(t) = std::fs::read_link(&src) {
                let _ = std::os::unix::fs::symlink(t, &dst);
            }
            continue;
        } else {
            let _ = std::fs::copy(&src, &dst);
        }
        let _ = std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(md.mode() & 0o7777));
        let _ = uvfs_fuse::tree::xattrs_between(&src, &dst, "uvfs-preload: UVFS_DUMP");
    }
}

/// At load (the library constructor): when `UVFS_DUMP` is set, remember
/// which process owns the dump and register the exit handler.
pub(crate) fn register_dump() {
    // A process that starts as a client of its tree is not the one that
    // loaded the shim for the tree: the tree's first process dumps (after
    // an exec of its own too, as `sh -c cmd` does).
    if std::env::var_os("UVFS_DUMP").is_some()
        && (!crate::path::is_client() || crate::namespace::is_tree_first())
    {
        // SAFETY: getpid has no preconditions; atexit takes a plain function
        // of this library, which is never unloaded.
        unsafe {
            OWNER_PID.store(libc::getpid(), std::sync::atomic::Ordering::Relaxed);
            libc::atexit(at_exit);
        }
    }
}
