//! Paths and the prefix, lexically: the prefix (`UVFS_PREFIX`), the
//! lexical normalization of an absolute path, and [`route_abs`], whether an
//! absolute path lies under the prefix and which uvfs path it stands for.
//! Relative paths need the cwd and are routed by the state
//! (`State::route`), which builds on these.

use std::borrow::Cow;

/// The prefix, without a trailing slash (`/uvfs` by default); `None` when
/// `UVFS_PREFIX` is not an absolute path other than `/` (the shim then
/// passes everything through).
pub(crate) fn prefix() -> Option<&'static [u8]> {
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
/// the lexically normalized one).
pub(crate) fn route_abs(path: &[u8]) -> Option<Cow<'_, [u8]>> {
    let pre = prefix()?;
    if let Some(rest) = path.strip_prefix(pre)
        && (rest.is_empty() || rest[0] == b'/')
        && !has_dotdot(rest)
    {
        return Some(if rest.is_empty() {
            Cow::Borrowed(b"/")
        } else {
            Cow::Borrowed(rest)
        });
    }
    if !has_dotdot(path) && !path.starts_with(b"//") && !path[1..].contains(&b'/') {
        // A one-component path cannot be under a multi-component prefix
        // unless it is the prefix itself (handled above): a fast exit.
        return None;
    }
    strip_prefix(&normalize(path)?).map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::normalize;

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
