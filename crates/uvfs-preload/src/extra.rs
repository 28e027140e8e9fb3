//! The libc functions that work on files through internal calls:
//! `mkstemp`/`mkdtemp` and friends, `realpath`, and the calls the shim must
//! answer for uvfs fds and paths so nothing reaches the placeholder's
//! `/dev/null`: xattrs, `statfs`, `pathconf`, `sendfile`,
//! `copy_file_range`.
#![allow(clippy::missing_safety_doc)]

use crate::hooks::{self, is_uvfs, is_uvfs_path, path_call, uvfs_open};
use crate::state::{Route, State, prefix, with_state};
use crate::{busy, cbytes, forward, real, run};
use libc::{c_char, c_int, c_long, c_uint, c_void, loff_t, off_t, size_t, ssize_t};
use uvfs::Errno;
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};

// ---------------------------------------------------------------------------
// mkstemp and friends.

fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: an 8-byte buffer; getrandom is not interposed.
    unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, libc::GRND_NONBLOCK) };
    u64::from_ne_bytes(b) ^ (b.as_ptr() as u64).rotate_left(17)
}

/// Fills the `XXXXXX` before `suffix` bytes of `tmpl` and calls `make` until
/// it does not fail with `EEXIST` (as glibc's `__gen_tempname`).
unsafe fn gen_temp(
    tmpl: *mut c_char,
    suffix: c_int,
    make: impl Fn(&mut State, i32, &[u8]) -> Result<c_int, Errno>,
) -> Result<c_int, Errno> {
    const LETTERS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    // SAFETY: the caller's writable template string.
    let t = unsafe { cbytes(tmpl) };
    let len = t.len();
    let suffix = usize::try_from(suffix).map_err(|_| Errno::EINVAL)?;
    if len < 6 + suffix || &t[len - 6 - suffix..len - suffix] != b"XXXXXX" {
        return Err(Errno::EINVAL);
    }
    let at = len - 6 - suffix;
    for _ in 0..238_328 {
        let mut v = random_u64();
        for i in 0..6 {
            // SAFETY: within the template.
            unsafe { *tmpl.add(at + i) = LETTERS[(v % 62) as usize] as c_char };
            v /= 62;
        }
        // SAFETY: the filled template.
        let path = unsafe { cbytes(tmpl) }.to_vec();
        let r = match hooks::route(AT_FDCWD, &path) {
            Some(Route::Uvfs(d, p)) => with_state(|s| make(s, d, &p)),
            _ => return Err(Errno::EXDEV),
        };
        match r {
            Err(Errno::EEXIST) => continue,
            r => return r,
        }
    }
    Err(Errno::EEXIST)
}

unsafe fn mkstemp_uvfs(tmpl: *mut c_char, suffix: c_int, flags: c_int) -> c_int {
    let flags = (flags & !libc::O_ACCMODE) | libc::O_RDWR | libc::O_CREAT | libc::O_EXCL;
    run(-1, || {
        // SAFETY: the caller's template.
        unsafe { gen_temp(tmpl, suffix, |s, d, p| uvfs_open(s, d, p, flags, 0o600)) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkstemp(t: *mut c_char) -> c_int {
    if !is_uvfs_path(t) {
        crate::state::before_kernel_fd();
        return real!(mkstemp: fn(*mut c_char) -> c_int)(t);
    }
    // SAFETY: forwarded.
    unsafe { mkstemp_uvfs(t, 0, 0) }
}

forward! {
    mkstemp64(t: *mut c_char) -> c_int = mkstemp(t);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkostemp(t: *mut c_char, flags: c_int) -> c_int {
    if !is_uvfs_path(t) {
        crate::state::before_kernel_fd();
        return real!(mkostemp: fn(*mut c_char, c_int) -> c_int)(t, flags);
    }
    // SAFETY: forwarded.
    unsafe { mkstemp_uvfs(t, 0, flags) }
}

forward! {
    mkostemp64(t: *mut c_char, flags: c_int) -> c_int = mkostemp(t, flags);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkstemps(t: *mut c_char, suffix: c_int) -> c_int {
    if !is_uvfs_path(t) {
        crate::state::before_kernel_fd();
        return real!(mkstemps: fn(*mut c_char, c_int) -> c_int)(t, suffix);
    }
    // SAFETY: forwarded.
    unsafe { mkstemp_uvfs(t, suffix, 0) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkostemps(t: *mut c_char, suffix: c_int, flags: c_int) -> c_int {
    if !is_uvfs_path(t) {
        crate::state::before_kernel_fd();
        return real!(mkostemps: fn(*mut c_char, c_int, c_int) -> c_int)(t, suffix, flags);
    }
    // SAFETY: forwarded.
    unsafe { mkstemp_uvfs(t, suffix, flags) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn mkdtemp(t: *mut c_char) -> *mut c_char {
    if !is_uvfs_path(t) {
        return real!(mkdtemp: fn(*mut c_char) -> *mut c_char)(t);
    }
    let r = run(-1, || {
        // SAFETY: the caller's template.
        unsafe { gen_temp(t, 0, |s, d, p| s.p().mkdirat(d, p, 0o700).map(|()| 0)) }
    });
    if r < 0 { std::ptr::null_mut() } else { t }
}

// ---------------------------------------------------------------------------
// realpath.

/// The canonical uvfs path of `path` (relative to the uvfs cwd): symlinks
/// followed (absolute targets from the uvfs root), `.`/`..` resolved, every
/// component checked to exist.
fn canonical(s: &mut State, path: &[u8]) -> Result<Vec<u8>, Errno> {
    let mut out: Vec<Vec<u8>> = Vec::new();
    if path.first() != Some(&b'/') {
        let cwd = s.p().getcwd()?;
        out.extend(
            cwd.split(|&c| c == b'/')
                .filter(|c| !c.is_empty())
                .map(<[u8]>::to_vec),
        );
    }
    let mut todo: std::collections::VecDeque<Vec<u8>> = path
        .split(|&c| c == b'/')
        .filter(|c| !c.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let mut links = 0;
    while let Some(c) = todo.pop_front() {
        match &c[..] {
            b"." => continue,
            b".." => {
                out.pop();
                continue;
            }
            _ => {}
        }
        out.push(c);
        let joined = join(&out);
        let st = s.p().fstatat(AT_FDCWD, &joined, AT_SYMLINK_NOFOLLOW)?;
        match st.st_mode & libc::S_IFMT {
            libc::S_IFLNK => {
                links += 1;
                if links > 40 {
                    return Err(Errno::ELOOP);
                }
                let mut buf = vec![0u8; 4096];
                let n = s.p().readlinkat(AT_FDCWD, &joined, &mut buf)?;
                let target = &buf[..n];
                out.pop();
                if target.first() == Some(&b'/') {
                    out.clear();
                }
                for c in target.split(|&c| c == b'/').filter(|c| !c.is_empty()).rev() {
                    todo.push_front(c.to_vec());
                }
            }
            libc::S_IFDIR => {}
            _ if !todo.is_empty() => return Err(Errno::ENOTDIR),
            _ => {}
        }
    }
    Ok(join(&out))
}

fn join(comps: &[Vec<u8>]) -> Vec<u8> {
    if comps.is_empty() {
        return b"/".to_vec();
    }
    let mut v = Vec::new();
    for c in comps {
        v.push(b'/');
        v.extend_from_slice(c);
    }
    v
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char {
    let null = std::ptr::null_mut();
    // SAFETY: the caller's path.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            null,
            |_, p| real!(realpath: fn(*const c_char, *mut c_char) -> *mut c_char)(p, resolved),
            |s, d, p| {
                if p.is_empty() {
                    return Err(Errno::ENOENT);
                }
                if d != AT_FDCWD {
                    return Err(Errno::EINVAL);
                }
                let c = canonical(s, p)?;
                let mut full = prefix().unwrap_or(b"").to_vec();
                if c != b"/" {
                    full.extend_from_slice(&c);
                }
                if full.len() >= libc::PATH_MAX as usize {
                    return Err(Errno::ENAMETOOLONG);
                }
                let out = if resolved.is_null() {
                    libc::malloc(full.len() + 1).cast::<c_char>()
                } else {
                    resolved
                };
                if out.is_null() {
                    return Err(Errno::ENOMEM);
                }
                std::ptr::copy_nonoverlapping(full.as_ptr(), out.cast::<u8>(), full.len());
                *out.add(full.len()) = 0;
                Ok(out)
            },
        )
    }
}

forward! {
    __realpath_chk(path: *const c_char, resolved: *mut c_char, _len: size_t) -> *mut c_char =
        realpath(path, resolved);
    canonicalize_file_name(path: *const c_char) -> *mut c_char =
        realpath(path, std::ptr::null_mut());
}

// ---------------------------------------------------------------------------
// xattrs: uvfs has none (a tmpfs with no xattrs set): list is empty, get is
// ENODATA, set is EOPNOTSUPP, after the path or fd is checked.

unsafe fn x_path(
    path: *const c_char,
    follow: bool,
    kernel: impl FnOnce() -> ssize_t,
    r: Result<ssize_t, Errno>,
) -> ssize_t {
    let flags = if follow { 0 } else { AT_SYMLINK_NOFOLLOW };
    // SAFETY: the caller's path.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            -1,
            |_, _| kernel(),
            |s, d, p| {
                s.p().fstatat(d, p, flags)?;
                r
            },
        )
    }
}

fn x_fd(fd: c_int, kernel: impl FnOnce() -> ssize_t, r: Result<ssize_t, Errno>) -> ssize_t {
    hooks::fd_call(fd, -1, kernel, |s, u| {
        s.p().fstat(u)?;
        r
    })
}

type P = *const c_char;

#[unsafe(no_mangle)]
pub unsafe extern "C" fn getxattr(p: P, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            true,
            || real!(getxattr: fn(P, P, *mut c_void, size_t) -> ssize_t)(p, n, v, z),
            Err(Errno::ENODATA),
        )
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lgetxattr(p: P, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            false,
            || real!(lgetxattr: fn(P, P, *mut c_void, size_t) -> ssize_t)(p, n, v, z),
            Err(Errno::ENODATA),
        )
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fgetxattr(fd: c_int, n: P, v: *mut c_void, z: size_t) -> ssize_t {
    x_fd(
        fd,
        || real!(fgetxattr: fn(c_int, P, *mut c_void, size_t) -> ssize_t)(fd, n, v, z),
        Err(Errno::ENODATA),
    )
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn listxattr(p: P, l: *mut c_char, z: size_t) -> ssize_t {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            true,
            || real!(listxattr: fn(P, *mut c_char, size_t) -> ssize_t)(p, l, z),
            Ok(0),
        )
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn llistxattr(p: P, l: *mut c_char, z: size_t) -> ssize_t {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            false,
            || real!(llistxattr: fn(P, *mut c_char, size_t) -> ssize_t)(p, l, z),
            Ok(0),
        )
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn flistxattr(fd: c_int, l: *mut c_char, z: size_t) -> ssize_t {
    x_fd(
        fd,
        || real!(flistxattr: fn(c_int, *mut c_char, size_t) -> ssize_t)(fd, l, z),
        Ok(0),
    )
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn setxattr(p: P, n: P, v: *const c_void, z: size_t, f: c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            true,
            || {
                real!(setxattr: fn(P, P, *const c_void, size_t, c_int) -> c_int)(p, n, v, z, f)
                    as ssize_t
            },
            Err(Errno::EOPNOTSUPP),
        ) as c_int
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lsetxattr(p: P, n: P, v: *const c_void, z: size_t, f: c_int) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            false,
            || {
                real!(lsetxattr: fn(P, P, *const c_void, size_t, c_int) -> c_int)(p, n, v, z, f)
                    as ssize_t
            },
            Err(Errno::EOPNOTSUPP),
        ) as c_int
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fsetxattr(
    fd: c_int,
    n: P,
    v: *const c_void,
    z: size_t,
    f: c_int,
) -> c_int {
    x_fd(
        fd,
        || {
            real!(fsetxattr: fn(c_int, P, *const c_void, size_t, c_int) -> c_int)(fd, n, v, z, f)
                as ssize_t
        },
        Err(Errno::EOPNOTSUPP),
    ) as c_int
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn removexattr(p: P, n: P) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            true,
            || real!(removexattr: fn(P, P) -> c_int)(p, n) as ssize_t,
            Err(Errno::ENODATA),
        ) as c_int
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn lremovexattr(p: P, n: P) -> c_int {
    // SAFETY: forwarded.
    unsafe {
        x_path(
            p,
            false,
            || real!(lremovexattr: fn(P, P) -> c_int)(p, n) as ssize_t,
            Err(Errno::ENODATA),
        ) as c_int
    }
}
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fremovexattr(fd: c_int, n: P) -> c_int {
    x_fd(
        fd,
        || real!(fremovexattr: fn(c_int, P) -> c_int)(fd, n) as ssize_t,
        Err(Errno::ENODATA),
    ) as c_int
}

// ---------------------------------------------------------------------------
// statfs, pathconf: a uvfs file reports a tmpfs (TMPFS_MAGIC, 255-byte
// names); the sizes are those of the host's /dev/shm.

fn tmpfs_statfs(buf: *mut libc::statfs) -> Result<c_int, Errno> {
    if buf.is_null() {
        return Err(Errno::EFAULT);
    }
    let r = real!(statfs: fn(P, *mut libc::statfs) -> c_int)(c"/dev/shm".as_ptr(), buf);
    // SAFETY: a valid, just filled (or to be zeroed) statfs buffer.
    unsafe {
        if r != 0 {
            buf.write_bytes(0, 1);
            (*buf).f_bsize = 4096;
            (*buf).f_frsize = 4096;
        }
        (*buf).f_type = 0x0102_1994;
        (*buf).f_namelen = 255;
        (*buf).f_fsid = std::mem::zeroed();
    }
    Ok(0)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn statfs(path: P, buf: *mut libc::statfs) -> c_int {
    // SAFETY: the caller's path.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            -1,
            |_, p| real!(statfs: fn(P, *mut libc::statfs) -> c_int)(p, buf),
            |s, d, p| {
                s.p().fstatat(d, p, 0)?;
                tmpfs_statfs(buf)
            },
        )
    }
}

forward! {
    statfs64(path: P, buf: *mut libc::statfs) -> c_int = statfs(path, buf);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fstatfs(fd: c_int, buf: *mut libc::statfs) -> c_int {
    hooks::fd_call(
        fd,
        -1,
        || real!(fstatfs: fn(c_int, *mut libc::statfs) -> c_int)(fd, buf),
        |s, u| {
            s.p().fstat(u)?;
            tmpfs_statfs(buf)
        },
    )
}

forward! {
    fstatfs64(fd: c_int, buf: *mut libc::statfs) -> c_int = fstatfs(fd, buf);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn pathconf(path: P, name: c_int) -> c_long {
    // SAFETY: the caller's path.
    unsafe {
        path_call(
            AT_FDCWD,
            path,
            -1,
            |_, p| real!(pathconf: fn(P, c_int) -> c_long)(p, name),
            |s, d, p| {
                s.p().fstatat(d, p, 0)?;
                Ok(real!(pathconf: fn(P, c_int) -> c_long)(
                    c"/dev/shm".as_ptr(),
                    name,
                ))
            },
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpathconf(fd: c_int, name: c_int) -> c_long {
    hooks::fd_call(
        fd,
        -1,
        || real!(fpathconf: fn(c_int, c_int) -> c_long)(fd, name),
        |s, u| {
            s.p().fstat(u)?;
            Ok(real!(pathconf: fn(P, c_int) -> c_long)(
                c"/dev/shm".as_ptr(),
                name,
            ))
        },
    )
}

// ---------------------------------------------------------------------------
// sendfile, copy_file_range.

/// Copies up to `len` bytes from `fin` (at `*off_in` if given, else its
/// position) to `fout` (at `*off_out` if given) through the shim's own
/// read/write, so each side goes to uvfs or the kernel as it should.
unsafe fn copy_through(
    fin: c_int,
    off_in: *mut i64,
    fout: c_int,
    off_out: *mut i64,
    len: usize,
) -> ssize_t {
    let mut buf = vec![0u8; len.clamp(1, 1 << 16)];
    let mut total: usize = 0;
    while total < len {
        let want = (len - total).min(buf.len());
        // SAFETY: our buffer; the caller's offset pointers.
        let n = unsafe {
            if off_in.is_null() {
                hooks::read(fin, buf.as_mut_ptr().cast(), want)
            } else {
                hooks::pread64(fin, buf.as_mut_ptr().cast(), want, *off_in)
            }
        };
        if n < 0 {
            return if total == 0 { -1 } else { total as ssize_t };
        }
        if n == 0 {
            break;
        }
        let n = n as usize;
        let mut done = 0;
        while done < n {
            // SAFETY: as above.
            let w = unsafe {
                let p = buf.as_ptr().add(done).cast();
                if off_out.is_null() {
                    hooks::write(fout, p, n - done)
                } else {
                    hooks::pwrite64(fout, p, n - done, *off_out + done as i64)
                }
            };
            if w <= 0 {
                // Give back what was read but not written.
                let unread = (n - done) as i64;
                // SAFETY: the caller's offset pointer.
                unsafe {
                    if off_in.is_null() {
                        hooks::lseek(fin, -unread, libc::SEEK_CUR);
                    } else {
                        *off_in += done as i64;
                    }
                    if !off_out.is_null() {
                        *off_out += done as i64;
                    }
                }
                total += done;
                return if total == 0 { -1 } else { total as ssize_t };
            }
            done += w as usize;
        }
        // SAFETY: the caller's offset pointers.
        unsafe {
            if !off_in.is_null() {
                *off_in += n as i64;
            }
            if !off_out.is_null() {
                *off_out += n as i64;
            }
        }
        total += n;
    }
    total as ssize_t
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn sendfile64(
    out: c_int,
    fin: c_int,
    off: *mut off_t,
    count: size_t,
) -> ssize_t {
    if busy() || !is_uvfs(out) && !is_uvfs(fin) {
        return real!(sendfile64: fn(c_int, c_int, *mut off_t, size_t) -> ssize_t)(
            out, fin, off, count,
        );
    }
    // SAFETY: forwarded.
    unsafe { copy_through(fin, off, out, std::ptr::null_mut(), count.min(0x7fff_f000)) }
}

forward! {
    sendfile(out: c_int, fin: c_int, off: *mut off_t, count: size_t) -> ssize_t =
        sendfile64(out, fin, off, count);
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn copy_file_range(
    fin: c_int,
    off_in: *mut loff_t,
    fout: c_int,
    off_out: *mut loff_t,
    len: size_t,
    flags: c_uint,
) -> ssize_t {
    let (ui, uo) = (is_uvfs(fin), is_uvfs(fout));
    if busy() || !ui && !uo {
        return real!(copy_file_range: fn(c_int, *mut loff_t, c_int, *mut loff_t, size_t, c_uint) -> ssize_t)(
            fin, off_in, fout, off_out, len, flags,
        );
    }
    if flags != 0 {
        crate::set_errno(libc::EINVAL);
        return -1;
    }
    if ui != uo {
        // Linux refuses a copy between file systems of different types.
        crate::set_errno(libc::EXDEV);
        return -1;
    }
    // SAFETY: forwarded.
    unsafe { copy_through(fin, off_in, fout, off_out, len.min(0x7fff_f000)) }
}
