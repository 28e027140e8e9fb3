//! Copying a tree between the host and a uvfs VFS: `--seed-from` (host to
//! uvfs, before the mount is served) and `--dump-to` (uvfs to host, after
//! it is unmounted). Regular files (contents), directories, symlinks and
//! hard links go across with their mode, owner and group, and access and
//! modification times (a directory's times are set after its children
//! are written). FIFOs, sockets and device nodes go across as nodes
//! (mknod, with their device numbers); making a device node on the host
//! needs `CAP_MKNOD`, and one that cannot be made is skipped with a
//! warning on stderr.

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use uvfs::fs::{S_IFDIR, S_IFLNK, S_IFMT, S_IFREG};
use uvfs::stat::Stat;
use uvfs::uapi::*;
use uvfs::{Errno, Process};

/// What a copy did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Copied {
    /// Entries written (the root included).
    pub entries: u64,
    /// Entries skipped (device nodes the host would not let us make).
    pub skipped: u64,
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = dir.to_vec();
    if p.last() != Some(&b'/') {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

fn uerr(what: &str, path: &[u8], e: Errno) -> String {
    format!("{what} {}: {e}", String::from_utf8_lossy(path))
}

fn ts(sec: i64, nsec: i64) -> Timespec {
    Timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

/// Copies the host directory `host` into uvfs's `/` as `p` (root, umask 0).
pub fn seed(p: &mut Process, host: &Path) -> Result<Copied, String> {
    let mut c = Copied::default();
    let mut links = HashMap::new();
    seed_dir(p, host, b"/", &mut links, &mut c)?;
    Ok(c)
}

fn seed_dir(
    p: &mut Process,
    host: &Path,
    upath: &[u8],
    links: &mut HashMap<(u64, u64), Vec<u8>>,
    c: &mut Copied,
) -> Result<(), String> {
    let md = std::fs::symlink_metadata(host).map_err(|e| format!("{}: {e}", host.display()))?;
    let mut entries: Vec<_> = std::fs::read_dir(host)
        .map_err(|e| format!("{}: {e}", host.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", host.display()))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let hp = e.path();
        let name = e.file_name();
        let up = join(upath, name.as_bytes());
        let m = std::fs::symlink_metadata(&hp).map_err(|e| format!("{}: {e}", hp.display()))?;
        let ft = m.file_type();
        if ft.is_dir() {
            p.mkdir(&up, 0o700).map_err(|e| uerr("mkdir", &up, e))?;
            seed_dir(p, &hp, &up, links, c)?;
            continue;
        }
        if ft.is_symlink() {
            let t = std::fs::read_link(&hp).map_err(|e| format!("{}: {e}", hp.display()))?;
            p.symlink(t.as_os_str().as_bytes(), &up)
                .map_err(|e| uerr("symlink", &up, e))?;
        } else if ft.is_file() {
            if m.nlink() > 1 {
                if let Some(first) = links.get(&(m.dev(), m.ino())) {
                    p.link(first, &up).map_err(|e| uerr("link", &up, e))?;
                    c.entries += 1;
                    continue;
                }
                links.insert((m.dev(), m.ino()), up.clone());
            }
            let fd = p
                .open(&up, O_CREAT | O_EXCL | O_WRONLY, 0o600)
                .map_err(|e| uerr("create", &up, e))?;
            let mut f = std::fs::File::open(&hp).map_err(|e| format!("{}: {e}", hp.display()))?;
            let mut buf = vec![0u8; 1 << 20];
            loop {
                let n = f
                    .read(&mut buf)
                    .map_err(|e| format!("{}: {e}", hp.display()))?;
                if n == 0 {
                    break;
                }
                let mut w = 0;
                while w < n {
                    w += p.write(fd, &buf[w..n]).map_err(|e| uerr("write", &up, e))?;
                }
            }
            p.close(fd).map_err(|e| uerr("close", &up, e))?;
        } else {
            // A FIFO, socket or device node.
            p.mknod(&up, (m.mode() & S_IFMT) | 0o600, m.rdev())
                .map_err(|e| uerr("mknod", &up, e))?;
        }
        set_uvfs_meta(p, &up, &m)?;
        c.entries += 1;
    }
    set_uvfs_meta(p, upath, &md)?;
    c.entries += 1;
    Ok(())
}

/// Owner, mode (not for symlinks) and times of a uvfs path from host
/// metadata. The owner first: chown clears set-ID bits.
fn set_uvfs_meta(p: &mut Process, up: &[u8], m: &std::fs::Metadata) -> Result<(), String> {
    p.lchown(up, m.uid(), m.gid())
        .map_err(|e| uerr("chown", up, e))?;
    if m.mode() & S_IFMT != S_IFLNK {
        p.chmod(up, m.mode() & 0o7777)
            .map_err(|e| uerr("chmod", up, e))?;
    }
    let times = [ts(m.atime(), m.atime_nsec()), ts(m.mtime(), m.mtime_nsec())];
    p.utimensat(AT_FDCWD, up, Some(times), AT_SYMLINK_NOFOLLOW)
        .map_err(|e| uerr("utimensat", up, e))
}

/// Copies uvfs's `/` (read as `p`, root) out to the host directory `host`,
/// created if missing; entries already there of the same names are
/// replaced.
pub fn dump(p: &mut Process, host: &Path) -> Result<Copied, String> {
    if !host.exists() {
        std::fs::create_dir(host).map_err(|e| format!("{}: {e}", host.display()))?;
    }
    let mut c = Copied::default();
    let mut links = HashMap::new();
    dump_dir(p, b"/", host, &mut links, &mut c)?;
    Ok(c)
}

fn cpath(p: &Path) -> Result<CString, String> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| format!("{}: NUL in path", p.display()))
}

fn dump_dir(
    p: &mut Process,
    upath: &[u8],
    host: &Path,
    links: &mut HashMap<u64, std::path::PathBuf>,
    c: &mut Copied,
) -> Result<(), String> {
    let st = p.lstat(upath).map_err(|e| uerr("stat", upath, e))?;
    let dfd = p
        .open(upath, O_RDONLY | O_DIRECTORY, 0)
        .map_err(|e| uerr("opendir", upath, e))?;
    let names: Vec<Vec<u8>> = p
        .readdir(dfd)
        .filter_map(|e| e.ok())
        .map(|e| e.name)
        .filter(|n| n != b"." && n != b"..")
        .collect();
    p.close(dfd).map_err(|e| uerr("close", upath, e))?;
    for name in names {
        let up = join(upath, &name);
        let hp = host.join(OsStr::from_bytes(&name));
        let s = p.lstat(&up).map_err(|e| uerr("stat", &up, e))?;
        match s.st_mode & S_IFMT {
            S_IFDIR => {
                if !hp.is_dir() {
                    let _ = std::fs::remove_file(&hp);
                    std::fs::create_dir(&hp).map_err(|e| format!("{}: {e}", hp.display()))?;
                }
                dump_dir(p, &up, &hp, links, c)?;
                continue;
            }
            S_IFLNK => {
                let mut buf = vec![0u8; 4096];
                let n = p
                    .readlink(&up, &mut buf)
                    .map_err(|e| uerr("readlink", &up, e))?;
                let _ = std::fs::remove_file(&hp);
                std::os::unix::fs::symlink(OsStr::from_bytes(&buf[..n]), &hp)
                    .map_err(|e| format!("{}: {e}", hp.display()))?;
            }
            S_IFREG => {
                if s.st_nlink > 1 {
                    if let Some(first) = links.get(&s.st_ino) {
                        let _ = std::fs::remove_file(&hp);
                        std::fs::hard_link(first, &hp)
                            .map_err(|e| format!("{}: {e}", hp.display()))?;
                        c.entries += 1;
                        continue;
                    }
                    links.insert(s.st_ino, hp.clone());
                }
                let _ = std::fs::remove_file(&hp);
                let mut f =
                    std::fs::File::create(&hp).map_err(|e| format!("{}: {e}", hp.display()))?;
                let fd = p.open(&up, O_RDONLY, 0).map_err(|e| uerr("open", &up, e))?;
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = p.read(fd, &mut buf).map_err(|e| uerr("read", &up, e))?;
                    if n == 0 {
                        break;
                    }
                    f.write_all(&buf[..n])
                        .map_err(|e| format!("{}: {e}", hp.display()))?;
                }
                p.close(fd).map_err(|e| uerr("close", &up, e))?;
            }
            ftype => {
                let _ = std::fs::remove_file(&hp);
                let cp = cpath(&hp)?;
                // SAFETY: `cp` is a NUL-terminated path.
                if unsafe { libc::mknod(cp.as_ptr(), ftype | 0o600, s.st_rdev) } != 0 {
                    eprintln!(
                        "uvfs mount: --dump-to: skipping {}: mknod: {}",
                        hp.display(),
                        std::io::Error::last_os_error()
                    );
                    c.skipped += 1;
                    continue;
                }
            }
        }
        set_host_meta(&hp, &s)?;
        c.entries += 1;
    }
    set_host_meta(host, &st)?;
    c.entries += 1;
    Ok(())
}

fn set_host_meta(hp: &Path, s: &Stat) -> Result<(), String> {
    let c = cpath(hp)?;
    let fail = |what: &str| {
        format!(
            "{what} {}: {}",
            hp.display(),
            std::io::Error::last_os_error()
        )
    };
    // SAFETY: `c` is a NUL-terminated path.
    if unsafe { libc::lchown(c.as_ptr(), s.st_uid, s.st_gid) } != 0 {
        return Err(fail("chown"));
    }
    if s.st_mode & S_IFMT != S_IFLNK {
        std::fs::set_permissions(hp, std::fs::Permissions::from_mode(s.st_mode & 0o7777))
            .map_err(|e| format!("chmod {}: {e}", hp.display()))?;
    }
    let times = [
        libc::timespec {
            tv_sec: s.st_atime,
            tv_nsec: s.st_atime_nsec,
        },
        libc::timespec {
            tv_sec: s.st_mtime,
            tv_nsec: s.st_mtime_nsec,
        },
    ];
    // SAFETY: `c` is a NUL-terminated path and `times` two timespecs.
    if unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    } != 0
    {
        return Err(fail("utimensat"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use uvfs::{FastPaths, Vfs};

    #[test]
    fn seed_then_dump_keeps_the_tree() {
        let base = std::env::temp_dir().join(format!("uvfs-fuse-tree-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let src = base.join("src");
        std::fs::create_dir_all(src.join("d/e")).unwrap();
        std::fs::write(src.join("d/f"), b"hello").unwrap();
        std::fs::set_permissions(src.join("d/f"), std::fs::Permissions::from_mode(0o640)).unwrap();
        std::fs::hard_link(src.join("d/f"), src.join("g")).unwrap();
        symlink("d/f", src.join("l")).unwrap();
        std::fs::write(src.join("d/e/big"), vec![7u8; 3 << 20]).unwrap();
        let vfs = Vfs::new(FastPaths::seeds());
        let mut p = Process::new(&vfs).unwrap();
        p.umask(0);
        let c = seed(&mut p, &src).unwrap();
        assert_eq!(c.entries, 7);
        assert_eq!(p.stat("/g").unwrap().st_ino, p.stat("/d/f").unwrap().st_ino);
        assert_eq!(p.stat("/d/f").unwrap().st_mode & 0o7777, 0o640);
        let dst = base.join("dst");
        let c = dump(&mut p, &dst).unwrap();
        assert_eq!(c.entries, 7);
        for rel in ["d/f", "g", "d/e/big"] {
            assert_eq!(
                std::fs::read(src.join(rel)).unwrap(),
                std::fs::read(dst.join(rel)).unwrap(),
                "{rel}"
            );
            let (a, b) = (
                std::fs::metadata(src.join(rel)).unwrap(),
                std::fs::metadata(dst.join(rel)).unwrap(),
            );
            assert_eq!(
                (a.mode(), a.mtime(), a.mtime_nsec()),
                (b.mode(), b.mtime(), b.mtime_nsec())
            );
        }
        assert_eq!(std::fs::read_link(dst.join("l")).unwrap(), Path::new("d/f"));
        assert_eq!(
            std::fs::metadata(dst.join("g")).unwrap().ino(),
            std::fs::metadata(dst.join("d/f")).unwrap().ino()
        );
        let (a, b) = (
            std::fs::metadata(src.join("d")).unwrap(),
            std::fs::metadata(dst.join("d")).unwrap(),
        );
        assert_eq!(
            (a.mode(), a.mtime(), a.mtime_nsec()),
            (b.mode(), b.mtime(), b.mtime_nsec())
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
