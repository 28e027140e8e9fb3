//! The program's view of where it is: `chdir`/`fchdir` (into uvfs or the
//! kernel), `getcwd` and `get_current_dir_name` (the prefix plus uvfs's
//! cwd when it is in uvfs), and `realpath` (a canonical uvfs path, given
//! back under the prefix).

use crate::conv::set_errno;
use crate::dispatch::{fd_call, path_call};
use crate::guard::{busy, run};
use crate::interpose::{forward, real};
use crate::path::prefix;
use crate::state::{State, with_state};
use libc::{c_char, c_int, size_t};
use uvfs::Errno;
use uvfs::uapi::{AT_FDCWD, AT_SYMLINK_NOFOLLOW};

/// `chdir`: into uvfs (the kernel's cwd stays where it was) or the kernel.
///
/// # Safety
/// `path` is NULL or a valid C string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn chdir(path: *const c_char) -> c_int {
    let kernel = |_: c_int, p: *const c_char| {
        // SAFETY: the caller's path (or it made absolute, alive for
        // the call).
        let r = unsafe { real!(chdir: fn(*const c_char) -> c_int)(p) };
        if r == 0 && prefix().is_some() && !busy() {
            with_state(|s| {
                s.set_cwd_in_uvfs(false);
                s.refresh_kcwd();
            });
        }
        r
    };
    // SAFETY: the caller's path, valid per the contract.
    unsafe {
        path_call(AT_FDCWD, path, -1, kernel, |s, d, p| {
            debug_assert_eq!(d, AT_FDCWD);
            s.p().chdir(p)?;
            s.set_cwd_in_uvfs(true);
            Ok(0)
        })
    }
}

/// `fchdir`.
///
/// # Safety
/// No pointer arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fchdir(fd: c_int) -> c_int {
    fd_call(
        fd,
        -1,
        || {
            // SAFETY: no pointers; any fd number is a valid argument.
            let r = unsafe { real!(fchdir: fn(c_int) -> c_int)(fd) };
            if r == 0 && prefix().is_some() && !busy() {
                with_state(|s| {
                    s.set_cwd_in_uvfs(false);
                    s.refresh_kcwd();
                });
            }
            r
        },
        |s, u| {
            s.p().fchdir(u)?;
            s.set_cwd_in_uvfs(true);
            Ok(0)
        },
    )
}

/// The program's cwd when it is in uvfs: the prefix plus uvfs's cwd.
fn uvfs_cwd(s: &mut State) -> Result<Option<Vec<u8>>, Errno> {
    if !s.cwd_in_uvfs() {
        return Ok(None);
    }
    let c = s.p().getcwd()?;
    let mut out = prefix().unwrap_or(b"").to_vec();
    if c != b"/" {
        out.extend_from_slice(&c);
    }
    Ok(Some(out))
}

/// `getcwd`, with glibc's extension: a NULL `buf` is allocated (`size`
/// bytes, or as many as needed when 0) and freed by the caller.
///
/// # Safety
/// `buf` is NULL or points to `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getcwd(buf: *mut c_char, size: size_t) -> *mut c_char {
    // SAFETY: the caller's buffer, unchanged, valid per the contract.
    let kernel = || unsafe { real!(getcwd: fn(*mut c_char, size_t) -> *mut c_char)(buf, size) };
    if prefix().is_none() || busy() {
        return kernel();
    }
    let cwd = match run(None, || with_state(|s| uvfs_cwd(s).map(Some))) {
        None => return std::ptr::null_mut(),
        Some(None) => return kernel(),
        Some(Some(c)) => c,
    };
    if !buf.is_null() && size == 0 {
        set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    let need = cwd.len() + 1;
    let (out, cap) = if buf.is_null() {
        let cap = if size == 0 { need } else { size };
        // SAFETY: plain allocation, freed by the caller with free().
        (unsafe { libc::malloc(cap) }.cast::<c_char>(), cap)
    } else {
        (buf, size)
    };
    if out.is_null() {
        set_errno(libc::ENOMEM);
        return out;
    }
    if cap < need {
        if buf.is_null() {
            // SAFETY: allocated just above.
            unsafe { libc::free(out.cast()) };
        }
        set_errno(libc::ERANGE);
        return std::ptr::null_mut();
    }
    // SAFETY: `out` has `cap >= need` writable bytes (the caller's, per
    // the contract, or allocated above).
    unsafe {
        std::ptr::copy_nonoverlapping(cwd.as_ptr(), out.cast::<u8>(), cwd.len());
        *out.add(cwd.len()) = 0;
    }
    out
}

forward! {
    __getcwd_chk(buf: *mut c_char, size: size_t, _buflen: size_t) -> *mut c_char =
        getcwd(buf, size);
}

/// `get_current_dir_name` (allocated; freed by the caller).
///
/// # Safety
/// No arguments; as the C function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn get_current_dir_name() -> *mut c_char {
    if prefix().is_some() && !busy() && with_state(|s| s.cwd_in_uvfs()) {
        // SAFETY: a NULL buffer: getcwd allocates.
        return unsafe { getcwd(std::ptr::null_mut(), 0) };
    }
    // SAFETY: no arguments.
    unsafe { real!(get_current_dir_name: fn() -> *mut c_char)() }
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

/// `realpath`: a uvfs path resolved in uvfs and given back under the
/// prefix, in `resolved` or (NULL) a `malloc`ed buffer the caller frees.
///
/// # Safety
/// `path` is NULL or a valid C string; `resolved` is NULL or points to
/// `PATH_MAX` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realpath(path: *const c_char, resolved: *mut c_char) -> *mut c_char {
    let null = std::ptr::null_mut();
    let kernel = |_: c_int, p: *const c_char| {
        // SAFETY: the caller's buffer and path (or it made absolute,
        // alive for the call).
        unsafe { real!(realpath: fn(*const c_char, *mut c_char) -> *mut c_char)(p, resolved) }
    };
    // SAFETY: the caller's path and buffer, valid per the contract (the
    // copy below writes fewer than PATH_MAX bytes).
    unsafe {
        path_call(AT_FDCWD, path, null, kernel, |s, d, p| {
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
        })
    }
}

forward! {
    __realpath_chk(path: *const c_char, resolved: *mut c_char, _len: size_t) -> *mut c_char =
        realpath(path, resolved);
    canonicalize_file_name(path: *const c_char) -> *mut c_char =
        realpath(path, std::ptr::null_mut());
}
