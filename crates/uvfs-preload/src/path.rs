//! Paths and the prefix, lexically: the prefix (`UVFS_PREFIX`), the
//! lexical normalization of an absolute path, and [`route_abs`], whether an
//! absolute path lies under the prefix and which uvfs path it stands for.
//! Relative paths need the cwd and are routed by the state
//! (`State::route`), which builds on these.

use std::borrow::Cow;
use uvfs::uapi::AT_FDCWD;

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
            let mut p = normalize(&raw)?;
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

/// Lexical normalization of an absolute path: `.` and empty components
/// dropped, `..` pops (stays at `/`); a trailing slash (or trailing `.`/`..`)
/// is kept as a trailing `/`. `None` for a relative path.
pub(crate) fn normalize(path: &[u8]) -> Option<Vec<u8>> {
    if path.first() != Some(&b'/') {
        return None;
    }
    let mut out: Vec<u8> = Vec::with_capacity(path.len());
    let mut trailing = false;
    for comp in path.split(|&c| c == b'/') {
        match comp {
            b"" => {}
            b"." => trailing = true,
            b".." => {
                while let Some(c) = out.pop() {
                    if c == b'/' {
                        break;
                    }
                }
                trailing = true;
            }
            c => {
                out.push(b'/');
                out.extend_from_slice(c);
                trailing = false;
            }
        }
    }
    if path.ends_with(b"/") {
        trailing = true;
    }
    if out.is_empty() || trailing {
        out.push(b'/');
    }
    Some(out)
}

/// If the normalized absolute path `n` lies under the prefix, the uvfs path
/// it stands for (`/` for the prefix itself).
pub(crate) fn strip_prefix(n: &[u8]) -> Option<Vec<u8>> {
    let pre = prefix()?;
    let rest = n.strip_prefix(pre)?;
    if rest.is_empty() {
        return Some(b"/".to_vec());
    }
    if rest[0] != b'/' {
        return None;
    }
    Some(rest.to_vec())
}

/// Whether `path` has a `..` component. Most paths have no two dots in a
/// row at all, which a vectorized scan for `.` (memchr) settles; the
/// component split runs only when they do.
pub(crate) fn has_dotdot(path: &[u8]) -> bool {
    if !memchr::memchr_iter(b'.', path).any(|i| path.get(i + 1) == Some(&b'.')) {
        return false;
    }
    path.split(|&c| c == b'/').any(|c| c == b"..")
}

/// Where a path call goes (borrowing the caller's path where it can: no
/// allocation on the common routes).
pub(crate) enum Route<'a> {
    /// To the kernel, with the caller's arguments unchanged.
    Kernel,
    /// To the kernel with this absolute path (the program's cwd is in uvfs,
    /// where the kernel's is not), relative to `AT_FDCWD`.
    KernelAbs(Vec<u8>),
    /// To uvfs: this path relative to this uvfs dirfd (or `AT_FDCWD`: the
    /// uvfs process's cwd).
    Uvfs(i32, Cow<'a, [u8]>),
}

/// Routes an absolute path: uvfs if it lies under the prefix (the raw path
/// minus the prefix when it has no `..`, keeping symlink semantics; else
/// the lexically normalized one); the kernel with the path [`escape`]
/// gives when its walk climbs out of the prefix with `..`; else the kernel
/// with the path unchanged.
pub(crate) fn route_abs(path: &[u8]) -> Route<'_> {
    let Some(pre) = prefix() else {
        return Route::Kernel;
    };
    let dotdot = has_dotdot(path);
    if let Some(rest) = path.strip_prefix(pre)
        && (rest.is_empty() || rest[0] == b'/')
        && !dotdot
    {
        return Route::Uvfs(
            AT_FDCWD,
            if rest.is_empty() {
                Cow::Borrowed(b"/")
            } else {
                Cow::Borrowed(rest)
            },
        );
    }
    if !dotdot && !path.starts_with(b"//") && !path[1..].contains(&b'/') {
        // A one-component path cannot be under a multi-component prefix
        // unless it is the prefix itself (handled above): a fast exit.
        return Route::Kernel;
    }
    let Some(n) = normalize(path) else {
        return Route::Kernel;
    };
    if let Some(u) = strip_prefix(&n) {
        return Route::Uvfs(AT_FDCWD, Cow::Owned(u));
    }
    if dotdot && let Some(k) = escape(path) {
        return Route::KernelAbs(k);
    }
    Route::Kernel
}

/// Whether a relative path from a directory outside the prefix may lead
/// into it: its first component is one of the prefix's (from `/`,
/// `uvfs/x` enters `/uvfs`), or it has a `..`. Cheap: no syscall, no
/// allocation.
pub(crate) fn may_enter_prefix(path: &[u8]) -> bool {
    let Some(pre) = prefix() else {
        return false;
    };
    let first = path
        .split(|&c| c == b'/')
        .find(|c| !c.is_empty() && *c != b".")
        .unwrap_or(b"");
    (!first.is_empty() && pre.split(|&c| c == b'/').any(|c| c == first)) || has_dotdot(path)
}

/// Whether the normalized absolute path `n` (no trailing slash but for
/// `/` itself) is the prefix or lies under it.
fn under(pre: &[u8], n: &[u8]) -> bool {
    n.strip_prefix(pre)
        .is_some_and(|r| r.is_empty() || r[0] == b'/')
}

/// For an absolute path whose walk enters the prefix and then climbs out
/// of it with `..` (`/uvfs/..`, `/uvfs/a/../../etc`): the host path the
/// kernel must walk instead, as the kernel would have walked it had the
/// prefix been a real directory there: the directory the walk climbed out
/// to (the prefix's parent on the host), then the rest of the path as
/// written. `None` when the walk never leaves the prefix from inside (the
/// caller routes the path by its normalized form then).
///
/// Inside the prefix `..` is taken lexically, as everywhere in the shim's
/// routing (`a/l/..` is `a` even if `l` is a symlink).
pub(crate) fn escape(path: &[u8]) -> Option<Vec<u8>> {
    let pre = prefix()?;
    let mut cur: Vec<u8> = Vec::with_capacity(path.len());
    let mut inside = false;
    let mut at = 0;
    while at < path.len() {
        let end = memchr::memchr(b'/', &path[at..]).map_or(path.len(), |i| at + i);
        let comp = &path[at..end];
        let next = (end + 1).min(path.len());
        match comp {
            b"" | b"." => {}
            b".." => {
                while let Some(c) = cur.pop() {
                    if c == b'/' {
                        break;
                    }
                }
                if inside && !under(pre, &cur) {
                    let mut out = if cur.is_empty() { b"/".to_vec() } else { cur };
                    let rest = &path[next..];
                    let rest = &rest[rest.iter().take_while(|&&c| c == b'/').count()..];
                    if !rest.is_empty() {
                        if out.last() != Some(&b'/') {
                            out.push(b'/');
                        }
                        out.extend_from_slice(rest);
                    } else if end < path.len() && out.last() != Some(&b'/') {
                        // The trailing slash the path had.
                        out.push(b'/');
                    }
                    return Some(out);
                }
            }
            c => {
                cur.push(b'/');
                cur.extend_from_slice(c);
            }
        }
        inside = under(pre, if cur.is_empty() { b"/" } else { &cur });
        at = next.max(end + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn escapes_climb_out_of_the_prefix() {
        // The prefix is /uvfs (the test process has no UVFS_PREFIX).
        if std::env::var_os("UVFS_PREFIX").is_some() {
            return;
        }
        let e = |p: &[u8]| super::escape(p).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(e(b"/uvfs/..").as_deref(), Some("/"));
        assert_eq!(e(b"/uvfs/../").as_deref(), Some("/"));
        assert_eq!(e(b"/uvfs/a/../..").as_deref(), Some("/"));
        assert_eq!(
            e(b"/uvfs/a/../../etc/x/../y").as_deref(),
            Some("/etc/x/../y")
        );
        assert_eq!(e(b"//uvfs/./..//etc/").as_deref(), Some("/etc/"));
        assert_eq!(e(b"/uvfs/a/b/../../../usr/..").as_deref(), Some("/usr/.."));
        assert_eq!(e(b"/uvfs/a/.."), None);
        assert_eq!(e(b"/etc/../usr"), None);
        assert_eq!(e(b"/uvfsx/../a"), None);
        assert_eq!(e(b"/../uvfs/a"), None);
    }

    #[test]
    fn normalizes() {
        assert_eq!(normalize(b"/a/./b/../c").unwrap(), b"/a/c");
        assert_eq!(normalize(b"/../..").unwrap(), b"/");
        assert_eq!(normalize(b"/a/b/").unwrap(), b"/a/b/");
        assert_eq!(normalize(b"/a/b/..").unwrap(), b"/a/");
        assert_eq!(normalize(b"//a//b").unwrap(), b"/a/b");
        assert!(normalize(b"a").is_none());
    }
}
