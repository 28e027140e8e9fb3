//! The prefix (`UVFS_PREFIX`) and whether this process is a client of
//! its tree's server. Routing a path against it is [`crate::route`]'s (a
//! pure function of the prefix, the directory and the path).

pub(crate) use crate::route::Route;

/// The prefix, without a trailing slash (`/uvfs` by default); `None` when
/// `UVFS_PREFIX` is not an absolute path other than `/` (the shim then
/// passes everything through).
pub(crate) fn prefix() -> Option<&'static [u8]> {
    if MODE.load(std::sync::atomic::Ordering::Relaxed) & CLIENT != 0 {
        return None;
    }
    prefix_raw()
}

/// [`MODE`]'s bit: the process is a client of its tree's server (see
/// `namespace`): the prefix is a FUSE mount of this mount namespace, every
/// path goes to the kernel unchanged and [`prefix`] answers `None`.
pub(crate) const CLIENT: u8 = 1;

/// [`MODE`]'s bit: `UVFS_TEST_PARK` was set at load (`dispatch::Ticket`'s
/// test hook). In the same word as [`CLIENT`], so a call that reads the
/// switch reads this with the same load.
pub(crate) const PARK: u8 = 2;

/// [`CLIENT`] and [`PARK`].
static MODE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Makes this process a client (for good: its children and the programs it
/// execs are too).
pub(crate) fn set_client() {
    MODE.fetch_or(CLIENT, std::sync::atomic::Ordering::Release);
}

/// Arms the test hook ([`PARK`]; from the library constructor).
pub(crate) fn set_park() {
    MODE.fetch_or(PARK, std::sync::atomic::Ordering::Release);
}

/// Whether this process is a client of its tree's server.
pub(crate) fn is_client() -> bool {
    mode() & CLIENT != 0
}

/// [`CLIENT`] and [`PARK`] as they stand (one load).
#[inline]
pub(crate) fn mode() -> u8 {
    MODE.load(std::sync::atomic::Ordering::Acquire)
}

/// Set at the end of the library constructor. Before it, a hook runs on
/// behalf of another library's constructor (the dynamic loader runs the
/// constructors of the program's libraries before a preloaded library's),
/// possibly from inside that library's memory allocator while it holds its
/// own initialization lock (jemalloc, linked into `rustc`, reads
/// `/etc/malloc.conf` through `readlink` on its first allocation): the
/// shim must not allocate then, or the allocation waits on that lock for
/// ever.
static LOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Marks the library constructor as done.
pub(crate) fn set_loaded() {
    LOADED.store(true, std::sync::atomic::Ordering::Release);
}

/// Whether the library constructor is done.
#[inline]
pub(crate) fn loaded() -> bool {
    LOADED.load(std::sync::atomic::Ordering::Acquire)
}

/// Before the constructor: whether `path` is certainly outside the prefix,
/// decided without allocating (the environment read in place, a plain
/// byte comparison): an absolute path with no `.` or `..` component and
/// no doubled slash (no `/.` or `//` in it at all, to be simple) that
/// neither is the prefix nor lies under it. Anything else (`false`) takes the full route.
pub(crate) fn early_outside(path: &[u8]) -> bool {
    with_configured(|raw| outside(raw, path))
}

/// Runs `f` on `UVFS_PREFIX` as set (`/uvfs` when unset), read in place
/// with libc's `getenv`: no allocation, and not std's, which takes std's
/// environment lock and copies the value. The bytes are the environment's
/// own, so they are only lent to `f`; the shim reads them at load (the
/// prefix, below) or before the program's `main` ([`early_outside`]),
/// when nothing changes the environment.
fn with_configured<R>(f: impl FnOnce(&[u8]) -> R) -> R {
    // SAFETY: a NUL-terminated name.
    let env = unsafe { libc::getenv(c"UVFS_PREFIX".as_ptr()) };
    if env.is_null() {
        return f(b"/uvfs");
    }
    // SAFETY: a non-null `getenv` result is a NUL-terminated string in the
    // environment, read before `f` returns, while nothing changes it.
    f(unsafe { std::ffi::CStr::from_ptr(env) }.to_bytes())
}

/// [`early_outside`] with the configured prefix `raw` given.
fn outside(raw: &[u8], path: &[u8]) -> bool {
    if path.first() != Some(&b'/') || path.windows(2).any(|w| w == b"/." || w == b"//") {
        return false;
    }
    let mut pre = raw;
    while pre.len() > 1 && pre.last() == Some(&b'/') {
        pre = &pre[..pre.len() - 1];
    }
    if pre.first() != Some(&b'/')
        || pre.len() == 1
        || pre.windows(2).any(|w| w == b"/." || w == b"//")
    {
        // Not a plain absolute prefix (or none at all): the full route
        // decides.
        return false;
    }
    !(path.starts_with(pre) && matches!(path.get(pre.len()), None | Some(&b'/')))
}

/// The prefix as configured, client or not.
pub(crate) fn prefix_raw() -> Option<&'static [u8]> {
    static PREFIX: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    PREFIX
        .get_or_init(|| {
            let mut p = with_configured(crate::route::normalize)?;
            if p.len() <= 1 {
                return None;
            }
            if p.last() == Some(&b'/') {
                p.pop();
            }
            Some(p)
        })
        .as_deref()
}

#[cfg(test)]
mod tests {
    use super::outside;

    #[test]
    fn early_outside_is_sure_or_says_no() {
        let p = b"/uvfs".as_slice();
        for path in ["/etc/malloc.conf", "/", "/uvfsx", "/uv", "/proc/sys/vm/x"] {
            assert!(outside(p, path.as_bytes()), "{path}");
        }
        for path in [
            "/uvfs",
            "/uvfs/",
            "/uvfs/a",
            "/uvfs//a",
            "rel",
            "",
            "/a/../uvfs",
            "/./uvfs",
            "//uvfs",
            "/etc/.hidden",
        ] {
            assert!(!outside(p, path.as_bytes()), "{path}");
        }
        assert!(outside(b"/uvfs/", b"/etc"));
        assert!(!outside(b"/uvfs/", b"/uvfs/a"));
        for odd in ["", "/", "rel", "/a/../uvfs", "//uvfs"] {
            assert!(!outside(odd.as_bytes(), b"/etc"), "prefix {odd:?}");
        }
    }
}
