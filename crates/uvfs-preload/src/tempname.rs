//! Temporary names, as glibc's `__gen_tempname` makes them (its
//! `tempname.c`), for templates under the prefix: the last six `X`s before
//! a suffix of `suffix` bytes are replaced with random letters and digits,
//! and the caller's `make` is tried on the filled name until it fails with
//! something other than `EEXIST` (at most 62³ attempts, glibc's count).
//!
//! glibc's own generator cannot serve a uvfs template: it runs its `open`,
//! `mkdir` and `lstat` as internal calls the shim never sees, so they reach
//! the kernel, which knows nothing under the prefix. The entry points
//! (`mkstemp` and friends in `hooks::temp`, `tmpfile` in `hooks::stdio`)
//! call [`gen_tempname`] inside the shim's frame; each name is routed with
//! [`route_unguarded`], since the re-entry guard the frame sets would send
//! it to the kernel.

use crate::conv::cbytes;
use crate::dispatch::{RESTART, Ticket, route_unguarded};
use crate::path::Route;
use crate::state::{State, with_state};
use libc::{c_char, c_int};
use uvfs::Errno;
use uvfs::uapi::AT_FDCWD;

/// glibc's attempt count (`ATTEMPTS_MIN`, 62³).
const ATTEMPTS: u32 = 62 * 62 * 62;

const LETTERS: &[u8; 62] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

/// Where the six `X`s of a template of `len` bytes with a suffix of
/// `suffix` bytes start, or `EINVAL` as glibc says it: the template is too
/// short, the six bytes before the suffix are not all `X`, or the suffix
/// length is negative (glibc's unsigned arithmetic rejects every negative
/// length).
pub(crate) fn x_start(t: &[u8], suffix: c_int) -> Result<usize, Errno> {
    let suffix = usize::try_from(suffix).map_err(|_| Errno::EINVAL)?;
    let end = t.len().checked_sub(suffix).ok_or(Errno::EINVAL)?;
    let at = end.checked_sub(6).ok_or(Errno::EINVAL)?;
    if t[at..end].iter().any(|&c| c != b'X') {
        return Err(Errno::EINVAL);
    }
    Ok(at)
}

/// 64 random bits (getrandom, not interposed; a counter and the clock
/// mixed in should it fail, as glibc falls back to its clock).
fn random_u64() -> u64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut b = [0u8; 8];
    // SAFETY: an 8-byte buffer; getrandom takes no other pointer.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, libc::GRND_NONBLOCK) };
    let mut v = u64::from_ne_bytes(b);
    if n != 8 {
        let c = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        v ^= t.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ c.rotate_left(32);
    }
    v
}

/// Fills the template `tmpl` (six `X`s before a `suffix`-byte suffix) and
/// runs `make` on the state with the uvfs route of each name tried, until
/// it gives something other than `EEXIST`. The template keeps the last name
/// tried (glibc's behaviour); on `EINVAL` it is left untouched. A name that
/// does not route to uvfs is `EXDEV`; [`RESTART`] (the template's `X`s
/// put back) when the tree's switch came since `t`, inside the gate or
/// before a name's route.
///
/// # Safety
/// `tmpl` is a writable, NUL-terminated string.
pub(crate) unsafe fn gen_tempname<T>(
    call: &'static str,
    t: Ticket,
    tmpl: *mut c_char,
    suffix: c_int,
    mut make: impl FnMut(&mut State, i32, &[u8]) -> Result<T, Errno>,
) -> Result<T, Errno> {
    // SAFETY: a C string per the contract.
    let at = x_start(unsafe { cbytes(tmpl) }, suffix)?;
    for _ in 0..ATTEMPTS {
        let mut v = random_u64();
        for i in 0..6 {
            // SAFETY: within the template's six `X`s (checked above),
            // writable per the contract.
            unsafe { *tmpl.add(at + i) = LETTERS[(v % 62) as usize] as c_char };
            v /= 62;
        }
        // SAFETY: the filled template, still a C string.
        let path = unsafe { cbytes(tmpl) };
        let r = match route_unguarded(AT_FDCWD, path) {
            Some(Route::Uvfs(d, p)) => {
                // The test hook: between the route and the gate.
                t.park(call);
                with_state(|s| {
                    t.check()?;
                    make(s, d, &p)
                })
            }
            _ if t.switched() => Err(RESTART),
            _ => Err(Errno::EXDEV),
        };
        match r {
            Err(e) if e == RESTART => {
                // The tree's switch came: the template as it was, for the
                // call's second start on the kernel's side.
                for i in 0..6 {
                    // SAFETY: within the template's six `X`s, as above.
                    unsafe { *tmpl.add(at + i) = b'X' as c_char };
                }
                return Err(RESTART);
            }
            Err(Errno::EEXIST) => continue,
            r => return r,
        }
    }
    Err(Errno::EEXIST)
}

#[cfg(test)]
mod tests {
    use super::x_start;
    use uvfs::Errno;

    #[test]
    fn templates_are_checked_as_glibc_does() {
        assert_eq!(x_start(b"/uvfs/aXXXXXX", 0), Ok(7));
        assert_eq!(x_start(b"XXXXXX", 0), Ok(0));
        assert_eq!(x_start(b"/uvfs/aXXXXXXXX", 0), Ok(9));
        assert_eq!(x_start(b"/uvfs/aXXXXXX.txt", 4), Ok(7));
        assert_eq!(x_start(b"/uvfs/aXXXXX", 0), Err(Errno::EINVAL));
        assert_eq!(x_start(b"/uvfs/aXXXXXX.txt", 0), Err(Errno::EINVAL));
        assert_eq!(x_start(b"/uvfs/aXXXXXX.txt", 3), Err(Errno::EINVAL));
        assert_eq!(x_start(b"XXXXXX", 1), Err(Errno::EINVAL));
        assert_eq!(x_start(b"XXXXXX", -1), Err(Errno::EINVAL));
        assert_eq!(x_start(b"XXXXX", 0), Err(Errno::EINVAL));
        assert_eq!(x_start(b"", 0), Err(Errno::EINVAL));
        assert_eq!(x_start(b"abc", 100), Err(Errno::EINVAL));
    }
}
