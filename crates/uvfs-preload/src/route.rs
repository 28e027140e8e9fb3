//! Routing, as a pure function: where a path call goes, given the prefix,
//! the directory the path is relative to and the path ([`route`]). No
//! state, no syscall of its own (what it needs to know about the directory,
//! its path, it asks a closure for, and only when the answer depends on
//! it), so it is tested directly and fuzzed without `LD_PRELOAD`
//! (`fuzz/fuzz_targets/preload_route.rs` includes this file as it is: it
//! uses std and `memchr` only).
//!
//! The model it implements: the prefix is a directory of the host whose
//! contents are uvfs's; every path is walked lexically in that joint
//! namespace (`..` of the prefix is its host parent, `..` of `/` is `/`),
//! and a path goes to uvfs if and only if its walk ends under the prefix.
//! What each side is given:
//!
//! - uvfs gets the path as written (so that symlinks, trailing slashes and
//!   a final `.` or `..` keep their Linux meaning, uvfs resolving them)
//!   whenever the walk never leaves the prefix once inside; otherwise the
//!   lexically normalized path (a final `.` or `..` kept as a final `.`, so
//!   `rmdir` and `rename` still refuse it);
//! - the kernel gets the caller's path unchanged when the walk never
//!   enters the prefix; a walk that enters the prefix and climbs out of it
//!   with `..` gives the kernel the host directory it climbed out to
//!   followed by the rest of the path as written ([`escape`]), so the
//!   kernel never walks a path through the prefix.

use std::borrow::Cow;

/// `AT_FDCWD` (Linux's value; the shim checks it against uvfs's).
pub(crate) const AT_FDCWD: i32 = -100;

/// Where a path call goes (borrowing the caller's path where it can: no
/// allocation on the common routes).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route<'a> {
    /// To the kernel, with the caller's arguments unchanged.
    Kernel,
    /// To the kernel with this absolute path (relative to `AT_FDCWD`).
    KernelAbs(Vec<u8>),
    /// To uvfs: this path relative to this uvfs dirfd (or `AT_FDCWD`: the
    /// uvfs process's cwd).
    Uvfs(i32, Cow<'a, [u8]>),
}

impl Route<'_> {
    /// The same route, owning its path.
    pub(crate) fn into_owned(self) -> Route<'static> {
        match self {
            Route::Kernel => Route::Kernel,
            Route::KernelAbs(k) => Route::KernelAbs(k),
            Route::Uvfs(d, p) => Route::Uvfs(d, Cow::Owned(p.into_owned())),
        }
    }
}

/// The directory a relative path starts from. Each carries a closure that
/// gives the directory's absolute path (`None`: it cannot be named), called
/// only when the route depends on it.
pub(crate) enum Dir<F: FnOnce() -> Option<Vec<u8>>> {
    /// The process's cwd, in the kernel: its host path.
    KernelCwd(F),
    /// A kernel directory fd: its host path (`/proc/self/fd/N`). Asked only
    /// for a path that may enter the prefix ([`may_enter_prefix`]): a
    /// kernel directory fd is taken to lie outside the prefix (the shim
    /// makes none inside it).
    KernelFd(F),
    /// A uvfs directory: this uvfs fd (or `AT_FDCWD`, the cwd in uvfs) and
    /// its uvfs path (`/` for the prefix itself).
    Uvfs(i32, F),
}

/// Where `path`, relative to `dir`, goes when the prefix is `pre` (an
/// absolute path other than `/`, without a trailing slash; `None`: no
/// prefix, everything to the kernel).
pub(crate) fn route<'a, F: FnOnce() -> Option<Vec<u8>>>(
    pre: Option<&[u8]>,
    dir: Dir<F>,
    path: &'a [u8],
) -> Route<'a> {
    let Some(pre) = pre else {
        return Route::Kernel;
    };
    if path.first() == Some(&b'/') {
        return route_abs(pre, path);
    }
    let join = |mut d: Vec<u8>| {
        if d.last() != Some(&b'/') {
            d.push(b'/');
        }
        d.extend_from_slice(path);
        d
    };
    match dir {
        Dir::KernelCwd(f) => match f().filter(|d| d.first() == Some(&b'/')) {
            Some(d) => route_abs(pre, &join(d)).into_owned(),
            None => Route::Kernel,
        },
        Dir::KernelFd(f) => {
            if !may_enter_prefix(pre, path) {
                return Route::Kernel;
            }
            match f().filter(|d| d.first() == Some(&b'/')) {
                Some(d) => route_abs(pre, &join(d)).into_owned(),
                None => Route::Kernel,
            }
        }
        Dir::Uvfs(fd, f) => {
            if !has_dotdot(path) {
                return Route::Uvfs(fd, Cow::Borrowed(path));
            }
            // A uvfs directory that cannot be named (removed) stays in
            // uvfs: its `..`s are uvfs's to resolve.
            let Some(d) = f().filter(|d| d.first() == Some(&b'/')) else {
                return Route::Uvfs(fd, Cow::Borrowed(path));
            };
            let mut abs = pre.to_vec();
            if d != b"/" {
                abs.extend_from_slice(&d);
            }
            let abs = join(abs);
            if escape_once(pre, &abs).is_none() {
                // The walk never leaves the prefix: uvfs resolves the
                // `..`s itself, from the directory.
                return Route::Uvfs(fd, Cow::Borrowed(path));
            }
            route_abs(pre, &abs).into_owned()
        }
    }
}

/// Routes an absolute path (see the module's documentation).
pub(crate) fn route_abs<'a>(pre: &[u8], path: &'a [u8]) -> Route<'a> {
    let dotdot = has_dotdot(path);
    // Fast exit: a first component that differs from the prefix's at its
    // first byte, and no `..`: the walk never comes near the prefix.
    if !dotdot
        && path.len() > 1
        && pre.len() > 1
        && path[1] != b'/'
        && path[1] != b'.'
        && path[1] != pre[1]
    {
        return Route::Kernel;
    }
    if let Some(rest) = path.strip_prefix(pre)
        && (rest.is_empty() || rest[0] == b'/')
        && (!dotdot || escape_once(pre, path).is_none())
    {
        // Under the prefix as written, and the walk never leaves it.
        return Route::Uvfs(
            AT_FDCWD,
            Cow::Borrowed(if rest.is_empty() { b"/" } else { rest }),
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
    if let Some(mut u) = strip_prefix(pre, &n) {
        if ends_in_dots(path) {
            // `n` ends in `/` there: keep the final component a dot.
            u.push(b'.');
        }
        return Route::Uvfs(AT_FDCWD, Cow::Owned(u));
    }
    if dotdot && let Some(k) = escape(pre, path) {
        return Route::KernelAbs(k);
    }
    Route::Kernel
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

/// Whether the last component of `path` (past trailing slashes) is `.` or
/// `..`.
fn ends_in_dots(path: &[u8]) -> bool {
    let end = path.len() - path.iter().rev().take_while(|&&c| c == b'/').count();
    let last = path[..end].rsplit(|&c| c == b'/').next().unwrap_or(b"");
    end > 0 && (last == b"." || last == b"..")
}

/// If the normalized absolute path `n` lies under the prefix `pre`, the
/// uvfs path it stands for (`/` for the prefix itself).
pub(crate) fn strip_prefix(pre: &[u8], n: &[u8]) -> Option<Vec<u8>> {
    let rest = n.strip_prefix(pre)?;
    if rest.is_empty() {
        return Some(b"/".to_vec());
    }
    if rest[0] != b'/' {
        return None;
    }
    Some(rest.to_vec())
}

/// The first `needle` in `hay`: `memchr::memchr` without its run-time
/// CPU check. `memchr::memchr` picks AVX2 or SSE2 at its first call by
/// asking the CPU (std's feature detection: a series of `cpuid`s, each a
/// trap to the hypervisor in a VM), and the first path the shim routes
/// is the first call: about 15 us of a one-`stat` program's first uvfs
/// call (docs/preload-firstcall.md). SSE2 (x86-64) and NEON (aarch64) are
/// in every CPU of those targets, so their searchers are built without
/// asking; paths are short, where AVX2 gains nothing over them. Elsewhere
/// the portable word-at-a-time search.
#[inline]
fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Some(s) = memchr::arch::x86_64::sse2::memchr::One::new(needle) {
        return s.find(hay);
    }
    #[cfg(all(
        target_arch = "aarch64",
        target_feature = "neon",
        target_endian = "little"
    ))]
    if let Some(s) = memchr::arch::aarch64::neon::memchr::One::new(needle) {
        return s.find(hay);
    }
    memchr::arch::all::memchr::One::new(needle).find(hay)
}

/// Whether `path` has a `..` component. Most paths have no two dots in a
/// row at all, which a vectorized scan for `.` settles; the component
/// split runs only when they do.
pub(crate) fn has_dotdot(path: &[u8]) -> bool {
    let mut at = 0;
    loop {
        let Some(i) = find_byte(b'.', &path[at..]) else {
            return false;
        };
        if path.get(at + i + 1) == Some(&b'.') {
            break;
        }
        at += i + 1;
    }
    path.split(|&c| c == b'/').any(|c| c == b"..")
}

/// Whether a relative path from a directory outside the prefix may lead
/// into it: its first component is one of the prefix's (from `/`,
/// `uvfs/x` enters `/uvfs`), or it has a `..`. Cheap: no syscall, no
/// allocation. (Exact for a directory outside the prefix: without `..`, the
/// walk ends under the prefix only if the directory is an ancestor of the
/// prefix and the path's first component is the prefix's next one.)
pub(crate) fn may_enter_prefix(pre: &[u8], path: &[u8]) -> bool {
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
/// written; again while that rest enters the prefix and climbs out
/// (`/uvfs/../uvfs/../etc`), so the kernel's walk never passes through the
/// prefix. A walk that climbs out with its last component (`/h/uvfs/..`)
/// gives the directory followed by `/.` (`/h/.`): still a final dot, which
/// `rmdir`, `rename` and `unlink` refuse as they refuse a final `..`.
/// `None` when the walk never leaves the prefix from inside (the caller
/// routes the path by its normalized form then).
///
/// Inside the prefix `..` is taken lexically, as everywhere in the shim's
/// routing (`a/l/..` is `a` even if `l` is a symlink).
pub(crate) fn escape(pre: &[u8], path: &[u8]) -> Option<Vec<u8>> {
    let mut out = escape_once(pre, path)?;
    // Each round replaces a stretch that holds a `..` by its shorter
    // lexical result: the path shrinks, the loop ends.
    while let Some(next) = escape_once(pre, &out) {
        out = next;
    }
    Some(out)
}

/// One step of [`escape`]: the first climb out of the prefix.
fn escape_once(pre: &[u8], path: &[u8]) -> Option<Vec<u8>> {
    let mut cur: Vec<u8> = Vec::with_capacity(path.len());
    let mut inside = false;
    let mut at = 0;
    while at < path.len() {
        let end = find_byte(b'/', &path[at..]).map_or(path.len(), |i| at + i);
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
                    if out.last() != Some(&b'/') {
                        out.push(b'/');
                    }
                    if rest.is_empty() {
                        // The `..` was the last component: keep a final dot.
                        out.push(b'.');
                    } else {
                        out.extend_from_slice(rest);
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
    use super::{AT_FDCWD, Dir, Route, escape, find_byte, has_dotdot, normalize, route};
    use std::borrow::Cow;

    const PRE: &[u8] = b"/h/uvfs";

    fn s(v: &[u8]) -> String {
        String::from_utf8_lossy(v).into_owned()
    }

    /// The route of `path` from `dir`, written out for comparison.
    fn r(dir: Dir<Box<dyn FnOnce() -> Option<Vec<u8>>>>, path: &str) -> String {
        match route(Some(PRE), dir, path.as_bytes()) {
            Route::Kernel => "kernel".into(),
            Route::KernelAbs(k) => format!("kernel {}", s(&k)),
            Route::Uvfs(AT_FDCWD, p) => format!("uvfs {}", s(&p)),
            Route::Uvfs(d, p) => format!("uvfs {d}:{}", s(&p)),
        }
    }
    fn kcwd(p: &'static str) -> Dir<Box<dyn FnOnce() -> Option<Vec<u8>>>> {
        Dir::KernelCwd(Box::new(move || Some(p.as_bytes().to_vec())))
    }
    fn kfd(p: &'static str) -> Dir<Box<dyn FnOnce() -> Option<Vec<u8>>>> {
        Dir::KernelFd(Box::new(move || Some(p.as_bytes().to_vec())))
    }
    fn ufd(fd: i32, p: &'static str) -> Dir<Box<dyn FnOnce() -> Option<Vec<u8>>>> {
        Dir::Uvfs(fd, Box::new(move || Some(p.as_bytes().to_vec())))
    }

    #[test]
    fn absolute_paths() {
        let k = || kcwd("/");
        assert_eq!(r(k(), "/h/uvfs"), "uvfs /");
        assert_eq!(r(k(), "/h/uvfs/a/./b/"), "uvfs /a/./b/");
        assert_eq!(r(k(), "/h/uvfsx/a"), "kernel");
        assert_eq!(r(k(), "/etc/passwd"), "kernel");
        // `..`s that stay inside: uvfs resolves them.
        assert_eq!(r(k(), "/h/uvfs/a/../b"), "uvfs /a/../b");
        assert_eq!(r(k(), "/h/uvfs/a/.."), "uvfs /a/..");
        // Into the prefix from outside: normalized, a final dot kept.
        assert_eq!(r(k(), "/h/x/../uvfs/a"), "uvfs /a");
        assert_eq!(r(k(), "//h/uvfs/a/"), "uvfs /a/");
        assert_eq!(r(k(), "/h/x/../uvfs/a/."), "uvfs /a/.");
        assert_eq!(r(k(), "/h/x/../uvfs/.."), "kernel /h/.");
        // Out of it: the parent, then the rest as written.
        assert_eq!(r(k(), "/h/uvfs/.."), "kernel /h/.");
        assert_eq!(r(k(), "/h/uvfs/../"), "kernel /h/.");
        assert_eq!(r(k(), "/h/uvfs/a/../../x/l/.."), "kernel /h/x/l/..");
        // In, out, in and out again: the kernel never walks the prefix.
        assert_eq!(r(k(), "/h/uvfs/../uvfs/a/../../x"), "kernel /h/x");
        // Out and back in: uvfs.
        assert_eq!(r(k(), "/h/uvfs/../uvfs/a"), "uvfs /a");
        assert_eq!(r(k(), "/h/.."), "kernel");
    }

    #[test]
    fn relative_paths_from_the_kernel() {
        assert_eq!(r(kcwd("/h"), "uvfs/a"), "uvfs /a");
        assert_eq!(r(kcwd("/h"), "uvfs/new/."), "uvfs /new/.");
        assert_eq!(r(kcwd("/h"), "a/b"), "kernel");
        assert_eq!(r(kcwd("/h/a"), "../uvfs"), "uvfs /");
        assert_eq!(r(kcwd("/"), "h/uvfs/.."), "kernel /h/.");
        assert_eq!(r(kfd("/"), "h/uvfs/x"), "uvfs /x");
        assert_eq!(r(kfd("/h"), "./uvfs//x/"), "uvfs /x/");
        assert_eq!(r(kfd("/h"), "x/y"), "kernel");
        // Not asked for its path when the path cannot enter the prefix.
        let never = Dir::KernelFd(Box::new(|| -> Option<Vec<u8>> {
            panic!("the directory's path was asked for")
        }) as Box<dyn FnOnce() -> Option<Vec<u8>>>);
        assert_eq!(r(never, "x/y"), "kernel");
        let unnamed = Dir::KernelFd(Box::new(|| None) as Box<dyn FnOnce() -> Option<Vec<u8>>>);
        assert_eq!(r(unnamed, "uvfs/x"), "kernel");
    }

    #[test]
    fn relative_paths_from_uvfs() {
        assert_eq!(r(ufd(3, "/a"), "b/c"), "uvfs 3:b/c");
        assert_eq!(r(ufd(3, "/a"), "../b"), "uvfs 3:../b");
        assert_eq!(r(ufd(3, "/a"), "../.."), "kernel /h/.");
        assert_eq!(r(ufd(3, "/a"), "../../x/.."), "kernel /h/x/..");
        // Out of the prefix and back in: uvfs, from its root (uvfs alone
        // would stop `..` at its root and look for `uvfs` there).
        assert_eq!(r(ufd(3, "/"), "../uvfs/x"), "uvfs /x");
        assert_eq!(r(ufd(AT_FDCWD, "/"), "../uvfs/x/.."), "uvfs /.");
        assert_eq!(r(ufd(AT_FDCWD, "/a/b"), "../../../.."), "kernel /h/..");
        let unnamed = Dir::Uvfs(4, Box::new(|| None) as Box<dyn FnOnce() -> Option<Vec<u8>>>);
        assert_eq!(r(unnamed, "../.."), "uvfs 4:../..");
    }

    #[test]
    fn no_prefix_routes_everything_to_the_kernel() {
        let d = Dir::Uvfs(3, || Some(b"/".to_vec()));
        assert_eq!(route(None, d, b"x"), Route::Kernel);
        let d = Dir::KernelCwd(|| Some(b"/".to_vec()));
        assert_eq!(route(Some(PRE), d, b""), Route::Kernel);
        let d = Dir::Uvfs(3, || Some(b"/".to_vec()));
        assert_eq!(route(Some(PRE), d, b""), Route::Uvfs(3, Cow::Borrowed(b"")));
    }

    #[test]
    fn escapes_climb_out_of_the_prefix() {
        let e = |p: &[u8]| escape(b"/uvfs", p).map(|v| String::from_utf8(v).unwrap());
        assert_eq!(e(b"/uvfs/..").as_deref(), Some("/."));
        assert_eq!(e(b"/uvfs/../").as_deref(), Some("/."));
        assert_eq!(e(b"/uvfs/a/../..").as_deref(), Some("/."));
        assert_eq!(
            e(b"/uvfs/a/../../etc/x/../y").as_deref(),
            Some("/etc/x/../y")
        );
        assert_eq!(e(b"//uvfs/./..//etc/").as_deref(), Some("/etc/"));
        assert_eq!(e(b"/uvfs/a/b/../../../usr/..").as_deref(), Some("/usr/.."));
        assert_eq!(e(b"/uvfs/../uvfs/../etc").as_deref(), Some("/etc"));
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

    /// `find_byte` (memchr without its CPU check) finds what a plain scan
    /// finds, for every needle position, length and start offset around
    /// the vector width; `has_dotdot` on top of it.
    #[test]
    fn find_byte_is_a_plain_scan() {
        let buf: Vec<u8> = (0..200u32).map(|i| b'a' + (i % 23) as u8).collect();
        for start in 0..17 {
            for len in 0..(buf.len() - start) {
                let hay = &buf[start..start + len];
                for needle in [b'a', b'k', b'w', b'/'] {
                    let want = hay.iter().position(|&c| c == needle);
                    assert_eq!(find_byte(needle, hay), want, "{start} {len} {needle}");
                }
            }
        }
        for (p, want) in [
            ("/a/..", true),
            ("..", true),
            ("../x", true),
            ("/a/...", false),
            ("/a/.b/..c", false),
            ("/a/b../c", false),
            ("/.a./..b/../", true),
            ("", false),
            ("/x/./y/.", false),
        ] {
            assert_eq!(has_dotdot(p.as_bytes()), want, "{p}");
            let long = format!("/{}{p}", "d/".repeat(40));
            assert_eq!(has_dotdot(long.as_bytes()), want, "{long}");
        }
    }
}
