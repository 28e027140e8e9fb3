//! Copying a tree between the host and a uvfs VFS: `--seed-from` (host to
//! uvfs, before the mount is served) and `--dump-to` (uvfs to host, after
//! it is unmounted). Regular files (contents), directories, symlinks and
//! hard links go across with their mode, owner and group, and access and
//! modification times (a directory's times are set after its children
//! are written). FIFOs, sockets and device nodes go across as nodes
//! (mknod, with their device numbers); making a device node on the host
//! needs `CAP_MKNOD`, and one that cannot be made is skipped with a
//! warning on stderr. Extended attributes go across too (`user.*`,
//! `trusted.*`, the POSIX ACLs in `system.posix_acl_*`, whatever the
//! source lists and the destination takes; not on symlinks), after the
//! mode (an access ACL and the mode's group bits are one thing) and before
//! the times; one the destination refuses (a namespace it does not hold,
//! say `trusted.*` on a host where the copy runs unprivileged, or any on a
//! host file system without xattrs) is skipped with a warning on stderr,
//! once per attribute name.

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
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
        set_uvfs_meta(p, &up, &hp, &m)?;
        c.entries += 1;
    }
    set_uvfs_meta(p, upath, host, &md)?;
    c.entries += 1;
    Ok(())
}

/// Owner, mode and extended attributes (not for symlinks) and times of a
/// uvfs path from the host file `hp` and its metadata. The owner first:
/// chown clears set-ID bits.
fn set_uvfs_meta(
    p: &mut Process,
    up: &[u8],
    hp: &Path,
    m: &std::fs::Metadata,
) -> Result<(), String> {
    p.lchown(up, m.uid(), m.gid())
        .map_err(|e| uerr("chown", up, e))?;
    if m.mode() & S_IFMT != S_IFLNK {
        p.chmod(up, m.mode() & 0o7777)
            .map_err(|e| uerr("chmod", up, e))?;
        xattrs_in(p, hp, up, "uvfs mount: --seed-from")?;
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
        set_host_meta(p, &up, &hp, &s)?;
        c.entries += 1;
    }
    set_host_meta(p, upath, host, &st)?;
    c.entries += 1;
    Ok(())
}

/// Owner, mode and extended attributes (not for symlinks) and times of
/// the host file `hp` from the uvfs path `up` and its attributes `s`.
fn set_host_meta(p: &mut Process, up: &[u8], hp: &Path, s: &Stat) -> Result<(), String> {
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
        xattrs_out(p, up, hp, "uvfs mount: --dump-to")?;
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

/// Copies the host file `hp`'s extended attributes onto the uvfs path `up`
/// (not a symlink; after its mode, before its times). One uvfs refuses
/// (`EOPNOTSUPP`, `EPERM`, `EINVAL`) is skipped and said once per name on
/// stderr, after `who`.
pub fn xattrs_in(p: &mut Process, hp: &Path, up: &[u8], who: &str) -> Result<(), String> {
    for (name, value) in host_xattrs(hp)? {
        match p.lsetxattr(up, &name, &value, 0) {
            Ok(()) => {}
            Err(e @ (Errno::EOPNOTSUPP | Errno::EPERM | Errno::EINVAL)) => {
                skipped_xattr(who, &name, &String::from_utf8_lossy(up), &e.to_string())
            }
            Err(e) => return Err(uerr("setxattr", up, e)),
        }
    }
    Ok(())
}

/// Copies the uvfs path `up`'s extended attributes onto the host file `hp`
/// (not a symlink; after its mode, before its times). One the host refuses
/// (`EOPNOTSUPP`, `EPERM`, `EINVAL`) is skipped and said once per name on
/// stderr, after `who`.
pub fn xattrs_out(p: &mut Process, up: &[u8], hp: &Path, who: &str) -> Result<(), String> {
    host_set_all(hp, uvfs_xattrs(p, up)?, who)
}

/// Copies the host file `from`'s extended attributes onto the host file
/// `to` (neither a symlink): as [`xattrs_out`], between two host paths (a
/// process tree's mount and the directory it is dumped to).
pub fn xattrs_between(from: &Path, to: &Path, who: &str) -> Result<(), String> {
    host_set_all(to, host_xattrs(from)?, who)
}

/// `lsetxattr(path, name, value, 0)` on the host.
fn lset(path: &CStr, name: &CStr, value: &[u8]) -> std::io::Result<()> {
    // SAFETY: NUL-terminated path and name, and a value buffer of its
    // length.
    let r = unsafe {
        libc::lsetxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Sets `attrs` on the host file `hp`; one the host refuses (`EOPNOTSUPP`,
/// `EPERM`, `EINVAL`) is skipped and said once per name after `who`.
fn host_set_all(hp: &Path, attrs: Xattrs, who: &str) -> Result<(), String> {
    let c = cpath(hp)?;
    for (name, value) in attrs {
        let n = CString::new(name.clone()).map_err(|_| "an xattr name with a NUL")?;
        if let Err(e) = lset(&c, &n, &value) {
            match e.raw_os_error() {
                Some(libc::EOPNOTSUPP | libc::EPERM | libc::EINVAL) => {
                    skipped_xattr(who, &name, &hp.display().to_string(), &e.to_string())
                }
                _ => return Err(format!("setxattr {}: {e}", hp.display())),
            }
        }
    }
    Ok(())
}

/// Says once per attribute name that `who` skipped it.
fn skipped_xattr(who: &str, name: &[u8], path: &str, why: &str) {
    static SAID: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    if !said.iter().any(|n| n == name) {
        said.push(name.to_vec());
        eprintln!(
            "{who}: skipping the extended attribute {} (first on {path}): {why}",
            String::from_utf8_lossy(name)
        );
    }
}

/// Splits a `listxattr` buffer into its names.
fn names_of(buf: &[u8]) -> Vec<Vec<u8>> {
    buf.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Extended attributes: (name, value) pairs.
type Xattrs = Vec<(Vec<u8>, Vec<u8>)>;

/// The host file `hp`'s extended attributes (none on a file system
/// without them), names and values. Sizes are asked first and the call
/// repeated if the set grew meanwhile (`ERANGE`).
fn host_xattrs(hp: &Path) -> Result<Xattrs, String> {
    let c = cpath(hp)?;
    let fail = |what: &str, e: std::io::Error| format!("{what} {}: {e}", hp.display());
    let list = match sized(|p, n| {
        // SAFETY: a NUL-terminated path, and a buffer pointer with its
        // length (null with 0 for the size).
        unsafe { libc::llistxattr(c.as_ptr(), p, n) }
    }) {
        Ok(l) => l,
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return Ok(Vec::new()),
        Err(e) => return Err(fail("listxattr", e)),
    };
    let mut out = Vec::new();
    for name in names_of(&list) {
        let n = CString::new(name.clone()).map_err(|_| "an xattr name with a NUL")?;
        match sized(|p, len| {
            // SAFETY: a NUL-terminated path and name, and a buffer pointer
            // with its length (null with 0 for the size).
            unsafe { libc::lgetxattr(c.as_ptr(), n.as_ptr(), p.cast(), len) }
        }) {
            Ok(v) => out.push((name, v)),
            // Removed meanwhile.
            Err(e) if e.raw_os_error() == Some(libc::ENODATA) => {}
            Err(e) => return Err(fail("getxattr", e)),
        }
    }
    Ok(out)
}

/// A variable-sized answer of a `listxattr`/`getxattr`-style call
/// (`call(buf, len)`: a size for a null buffer of length 0, else the bytes
/// written, -1 and errno on error): the size asked first, then the bytes,
/// again if it grew in between (`ERANGE`).
fn sized(call: impl Fn(*mut libc::c_char, usize) -> isize) -> std::io::Result<Vec<u8>> {
    loop {
        let n = call(std::ptr::null_mut(), 0);
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut buf = vec![0u8; n as usize];
        let m = call(buf.as_mut_ptr().cast(), buf.len());
        if m >= 0 {
            buf.truncate(m as usize);
            return Ok(buf);
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ERANGE) {
            return Err(e);
        }
    }
}

/// The uvfs path `up`'s extended attributes, names and values.
fn uvfs_xattrs(p: &mut Process, up: &[u8]) -> Result<Xattrs, String> {
    let n = p
        .llistxattr(up, &mut [])
        .map_err(|e| uerr("listxattr", up, e))?;
    let mut buf = vec![0u8; n];
    let m = p
        .llistxattr(up, &mut buf)
        .map_err(|e| uerr("listxattr", up, e))?;
    buf.truncate(m);
    let mut out = Vec::new();
    for name in names_of(&buf) {
        let len = p
            .lgetxattr(up, &name, &mut [])
            .map_err(|e| uerr("getxattr", up, e))?;
        let mut v = vec![0u8; len];
        let got = p
            .lgetxattr(up, &name, &mut v)
            .map_err(|e| uerr("getxattr", up, e))?;
        v.truncate(got);
        out.push((name, v));
    }
    Ok(out)
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

    /// A POSIX ACL value: header version 2, then (tag, perm, id) entries.
    fn acl(entries: &[(u16, u16, u32)]) -> Vec<u8> {
        let mut v = 2u32.to_le_bytes().to_vec();
        for &(tag, perm, id) in entries {
            v.extend_from_slice(&tag.to_le_bytes());
            v.extend_from_slice(&perm.to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
        }
        v
    }

    fn host_set(path: &Path, name: &str, value: &[u8]) -> std::io::Result<()> {
        lset(&cpath(path).unwrap(), &CString::new(name).unwrap(), value)
    }

    fn host_get(path: &Path, name: &str) -> Option<Vec<u8>> {
        host_xattrs(path)
            .unwrap()
            .into_iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, v)| v)
    }

    /// Extended attributes and POSIX ACLs go in with `--seed-from` and out
    /// with `--dump-to`, byte for byte, on the host's tmpfs (which holds
    /// them all).
    #[test]
    fn xattrs_and_acls_go_across() {
        let base = Path::new("/dev/shm").join(format!("uvfs-fuse-xattr-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let src = base.join("src");
        std::fs::create_dir_all(src.join("d")).unwrap();
        std::fs::write(src.join("f"), b"x").unwrap();
        std::fs::set_permissions(src.join("f"), std::fs::Permissions::from_mode(0o640)).unwrap();
        // user_obj rw-, user 1000 r--, group_obj r--, mask r--, other ---.
        let access = acl(&[
            (1, 6, u32::MAX),
            (2, 4, 1000),
            (4, 4, u32::MAX),
            (0x10, 4, u32::MAX),
            (0x20, 0, u32::MAX),
        ]);
        let default = acl(&[(1, 7, u32::MAX), (4, 5, u32::MAX), (0x20, 5, u32::MAX)]);
        if let Err(e) = host_set(&src.join("f"), "user.k", b"v") {
            eprintln!("SKIP: /dev/shm has no user xattrs here: {e}");
            std::fs::remove_dir_all(&base).unwrap();
            return;
        }
        host_set(&src.join("f"), "system.posix_acl_access", &access).unwrap();
        host_set(&src.join("d"), "system.posix_acl_default", &default).unwrap();
        host_set(&src.join("d"), "user.empty", b"").unwrap();
        let security = host_set(&src.join("f"), "security.uvfs_test", b"s").is_ok();
        let vfs = Vfs::new(FastPaths::seeds());
        let mut p = Process::new(&vfs).unwrap();
        p.umask(0);
        seed(&mut p, &src).unwrap();
        let mut buf = [0u8; 64];
        let n = p.getxattr("/f", b"user.k", &mut buf).unwrap();
        assert_eq!(&buf[..n], b"v");
        assert!(
            p.getxattr("/f", b"system.posix_acl_access", &mut buf)
                .is_ok()
        );
        assert!(
            p.getxattr("/d", b"system.posix_acl_default", &mut buf)
                .is_ok()
        );
        let dst = base.join("dst");
        dump(&mut p, &dst).unwrap();
        for (rel, name) in [
            ("f", "user.k"),
            ("f", "system.posix_acl_access"),
            ("d", "system.posix_acl_default"),
            ("d", "user.empty"),
        ] {
            assert_eq!(
                host_get(&src.join(rel), name),
                host_get(&dst.join(rel), name),
                "{rel} {name}"
            );
            assert!(host_get(&dst.join(rel), name).is_some(), "{rel} {name}");
        }
        // `security.*` too, where the host let the test set it (root).
        if security {
            assert_eq!(
                host_get(&dst.join("f"), "security.uvfs_test").as_deref(),
                Some(&b"s"[..])
            );
        }
        assert_eq!(
            std::fs::metadata(dst.join("f")).unwrap().mode(),
            std::fs::metadata(src.join("f")).unwrap().mode()
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
