//! The prefix (`UVFS_PREFIX`) and whether this process is a client of
//! its tree's server. Routing a path against it is [`crate::route`]'s (a
//! pure function of the prefix, the directory and the path).

pub(crate) use crate::route::Route;

/// The prefix, without a trailing slash (`/uvfs` by default); `None` when
/// `UVFS_PREFIX` is not an absolute path other than `/` (the shim then
/// passes everything through).
pub(crate) fn prefix() -> Option<&'static [u8]> {
    if CLIENT.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    prefix_raw()
}

/// The process is a client of its tree's server (see `namespace`): the
/// prefix is a FUSE mount of this mount namespace, every path goes to the
/// kernel unchanged and [`prefix`] answers `None`.
static CLIENT: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process a client (for good: its children and the programs it
/// execs are too).
pub(crate) fn set_client() {
    CLIENT.store(true, std::sync::atomic::Ordering::Release);
}

/// Whether this process is a client of its tree's server.
pub(crate) fn is_client() -> bool {
    CLIENT.load(std::sync::atomic::Ordering::Acquire)
}

/// The prefix as configured, client or not.
pub(crate) fn prefix_raw() -> Option<&'static [u8]> {
    static PREFIX: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    PREFIX
        .get_or_init(|| {
            let raw = std::env::var_os("UVFS_PREFIX")
                .map(std::os::unix::ffi::OsStringExt::into_vec)
                .unwrap_or_else(|| b"/uvfs".to_vec());
            let mut p = crate::route::normalize(&raw)?;
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
