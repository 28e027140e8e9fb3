//! The LD_PRELOAD shim's path routing and fd map, without LD_PRELOAD: the
//! shim's own `route.rs` (the routing decision, a pure function) and
//! `fdmap.rs` (kernel fd number -> uvfs fd) are included as they are, and
//! driven by a model of a process: a kernel side (host directories, kernel
//! fds, the kernel's cwd) and a uvfs side (uvfs directories, uvfs fds, the
//! uvfs cwd), with the shim's bookkeeping around them (placeholders, the
//! cache of closed placeholders, chdir into and out of uvfs).
//!
//! Input (structure-aware, `arbitrary::Unstructured`): a prefix and an
//! initial kernel cwd from small lists, then a sequence of chdir, fchdir,
//! openat(dirfd, path), dup, dup2, close (plain or into the cache) and fd
//! number probes, over paths made of a few names (`uvfs`, `uvfsx`, `..x`,
//! ...), `.`, `..`, doubled and trailing slashes.
//!
//! Checked for every path: a reference resolver written here, apart from
//! the shim's code (the prefix a directory of the host holding uvfs's
//! tree, every path walked lexically, no symlinks), says where the path
//! ends and whether its last component is a name (with or without a
//! trailing slash) or a dot; the shim's route, walked as the kernel or
//! uvfs would walk it, must end at the same place with the same kind of
//! last component; the kernel's walk never passes under the prefix (a
//! uvfs path never reaches the kernel); uvfs's walk never meets `..` at
//! its root (`..` at the prefix's root is the host parent's, which uvfs
//! would not reach); a relative path the kernel gets is relative to a
//! directory the kernel has (not a placeholder, not a stale cwd). Checked
//! after every call: the fd map agrees with the model number by number,
//! no uvfs fd is behind two numbers, its high mark covers every mapped
//! number, and numbers nobody mapped (negative, huge, chunk boundaries)
//! read as the kernel's. No panic, no leak (the map frees its chunks).
//!
//! The same input then drives the shim's placeholder numbering
//! (`numbering.rs`) against a model kernel and its fork gate
//! (`fork_gate.rs`, with the `sync` facade) stepped by one thread against
//! a model of the gate's state: see `preload_route/numbering_gate.rs`.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/uvfs-preload/src/route.rs"]
mod route;

#[allow(dead_code)]
#[path = "../../crates/uvfs-preload/src/fdmap.rs"]
mod fdmap;

#[allow(dead_code)]
#[path = "../../crates/uvfs-preload/src/sync.rs"]
mod sync;

#[allow(dead_code)]
#[path = "../../crates/uvfs-preload/src/numbering.rs"]
mod numbering;

#[allow(dead_code)]
#[path = "../../crates/uvfs-preload/src/fork_gate.rs"]
mod fork_gate;

#[path = "preload_route/numbering_gate.rs"]
mod numbering_gate;

use fdmap::{Fd, FdMap};
use libfuzzer_sys::arbitrary::{Result as AResult, Unstructured};
use libfuzzer_sys::fuzz_target;
use route::{AT_FDCWD, Dir, Route};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;

const PREFIXES: &[&str] = &["/uvfs", "/h/uvfs", "/h/a/uvfs", "/a", "/..x/uvfs", "/h/.x"];
const CWDS: &[&str] = &["/", "/h", "/h/a", "/x/y", "/h/uvfsx", "/..x"];
const NAMES: &[&str] = &[
    "", ".", "..", "..", "..", "uvfs", "uvfs", "h", "a", "x", "uvfsx", "..x", ".x", "b",
];
/// Calls per input at most (a long input is more of the same).
const MAX_CALLS: usize = 48;
/// fd numbers around the map's chunk boundaries, and beyond it.
const ODD_FDS: &[i32] = &[
    -100,
    -1,
    1023,
    1024,
    1025,
    2047,
    2048,
    65535,
    (1 << 20) - 1,
    1 << 20,
    i32::MAX,
];

/// A location in the joint namespace: host components from `/`.
type Loc = Vec<Vec<u8>>;

fn comps(p: &str) -> Loc {
    p.split('/')
        .filter(|c| !c.is_empty())
        .map(|c| c.as_bytes().to_vec())
        .collect()
}

fn bytes(l: &[Vec<u8>]) -> Vec<u8> {
    if l.is_empty() {
        return b"/".to_vec();
    }
    let mut out = Vec::new();
    for c in l {
        out.push(b'/');
        out.extend_from_slice(c);
    }
    out
}

fn show(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

fn show_route(r: &Route) -> String {
    match r {
        Route::Kernel => "kernel, unchanged".into(),
        Route::KernelAbs(k) => format!("kernel {}", show(k)),
        Route::Uvfs(d, p) => format!("uvfs {d}:{}", show(p)),
    }
}

fn show_base(b: &Base) -> String {
    match b {
        Base::Kernel(l) => format!("kernel directory {}", show(&bytes(l))),
        Base::Uvfs(d, l) => format!("uvfs directory {d}:{}", show(&bytes(l))),
    }
}

/// The kind of a path's last component (past trailing slashes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tail {
    /// No component at all (`""`, `/`, `//`).
    None,
    /// `.` or `..`.
    Dots,
    /// A name; whether a slash follows it.
    Name(bool),
}

fn tail(path: &[u8]) -> Tail {
    let slash = path.last() == Some(&b'/');
    match path.split(|&c| c == b'/').rfind(|c| !c.is_empty()) {
        None => Tail::None,
        Some(b".") | Some(b"..") => Tail::Dots,
        Some(_) => Tail::Name(slash),
    }
}

/// The reference: `path` walked lexically from `start` (absolute paths
/// from `/`); `..` of `/` is `/`.
fn resolve(start: &[Vec<u8>], path: &[u8]) -> Loc {
    let mut cur: Loc = if path.first() == Some(&b'/') {
        Vec::new()
    } else {
        start.to_vec()
    };
    for c in path.split(|&c| c == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                cur.pop();
            }
            n => cur.push(n.to_vec()),
        }
    }
    cur
}

fn is_under(pre: &[Vec<u8>], l: &[Vec<u8>]) -> bool {
    l.len() >= pre.len() && l[..pre.len()] == *pre
}

/// The kernel's walk of `path` from `start`: where it ends, or an error
/// if it passes under the prefix (a uvfs path reaching the kernel).
fn kernel_walk(pre: &[Vec<u8>], start: &[Vec<u8>], path: &[u8]) -> Result<Loc, String> {
    let mut cur: Loc = if path.first() == Some(&b'/') {
        Vec::new()
    } else {
        start.to_vec()
    };
    if is_under(pre, &cur) {
        return Err(format!(
            "the kernel walks from {} (under the prefix)",
            show(&bytes(&cur))
        ));
    }
    for c in path.split(|&c| c == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                cur.pop();
            }
            n => cur.push(n.to_vec()),
        }
        if is_under(pre, &cur) {
            return Err(format!(
                "the kernel's walk of {} passes {} (under the prefix)",
                show(path),
                show(&bytes(&cur))
            ));
        }
    }
    Ok(cur)
}

/// uvfs's walk of `path` from `start` (uvfs components): an error on a
/// `..` at uvfs's root (uvfs stays there; Linux would reach the host).
fn uvfs_walk(start: &[Vec<u8>], path: &[u8]) -> Result<Loc, String> {
    let mut cur: Loc = if path.first() == Some(&b'/') {
        Vec::new()
    } else {
        start.to_vec()
    };
    for c in path.split(|&c| c == b'/') {
        match c {
            b"" | b"." => {}
            b".." => {
                if cur.pop().is_none() {
                    return Err(format!(
                        "uvfs meets `..` at its root walking {}",
                        show(path)
                    ));
                }
            }
            n => cur.push(n.to_vec()),
        }
    }
    Ok(cur)
}

/// What an fd number is in the model.
#[derive(Clone, Debug)]
enum Open {
    /// A kernel directory fd at this host location.
    Kernel(Loc),
    /// A uvfs fd (its uvfs number) on this uvfs location.
    Uvfs(i32, Loc),
    /// A cached placeholder (closed as far as the program knows).
    Stale,
}

/// The directory a path is relative to, as the model knows it.
#[derive(Clone, Debug)]
enum Base {
    Kernel(Loc),
    Uvfs(i32, Loc),
}

struct Model {
    pre: Loc,
    pre_bytes: Vec<u8>,
    /// The kernel's cwd (kept while the program's cwd is in uvfs).
    kcwd: Loc,
    /// The uvfs cwd when the program's cwd is in uvfs.
    ucwd: Option<Loc>,
    fds: BTreeMap<i32, Open>,
    ufds: BTreeSet<i32>,
    map: FdMap,
    log: Vec<String>,
}

impl Model {
    fn lowest_free_kernel(&self) -> i32 {
        (0..).find(|k| !self.fds.contains_key(k)).unwrap()
    }

    fn lowest_free_uvfs(&mut self) -> i32 {
        let u = (0..).find(|u| !self.ufds.contains(u)).unwrap();
        self.ufds.insert(u);
        u
    }

    /// Closes every cached placeholder (before a kernel call that makes
    /// an fd, as the shim does).
    fn flush(&mut self) {
        let stale: Vec<i32> = self
            .fds
            .iter()
            .filter(|(_, o)| matches!(o, Open::Stale))
            .map(|(&k, _)| k)
            .collect();
        for k in stale {
            self.map.set(k, 0);
            self.fds.remove(&k);
        }
    }

    /// A placeholder for a new uvfs fd: the lowest number free to the
    /// program, a cached one reused.
    fn placeholder(&mut self) -> i32 {
        let k = (0..)
            .find(|k| matches!(self.fds.get(k), None | Some(Open::Stale)))
            .unwrap();
        if !matches!(self.fds.get(&k), Some(Open::Stale)) {
            self.flush();
        }
        k
    }

    fn close(&mut self, k: i32, cache: bool) {
        match self.fds.remove(&k) {
            Some(Open::Uvfs(u, _)) => {
                self.ufds.remove(&u);
                if cache {
                    self.map.set(k, -1);
                    self.fds.insert(k, Open::Stale);
                } else {
                    self.map.set(k, 0);
                }
            }
            Some(Open::Stale) => {
                // EBADF: still cached.
                self.fds.insert(k, Open::Stale);
            }
            Some(Open::Kernel(_)) | None => {}
        }
    }

    /// The base of a relative path from fd `k` (`AT_FDCWD`: the cwd), as
    /// the shim finds it (through the real fd map), checked against the
    /// model. `None`: a stale placeholder or no fd (EBADF).
    fn base(&self, k: i32) -> Result<Option<Base>, String> {
        if k == AT_FDCWD {
            return Ok(Some(match &self.ucwd {
                Some(u) => Base::Uvfs(AT_FDCWD, u.clone()),
                None => Base::Kernel(self.kcwd.clone()),
            }));
        }
        match (self.map.get(k), self.fds.get(&k)) {
            (Fd::Kernel, Some(Open::Kernel(l))) => Ok(Some(Base::Kernel(l.clone()))),
            (Fd::Kernel, None) => Ok(None),
            (Fd::Stale, Some(Open::Stale)) => Ok(None),
            (Fd::Uvfs(u), Some(Open::Uvfs(mu, l))) if u == *mu => {
                Ok(Some(Base::Uvfs(u, l.clone())))
            }
            (got, want) => Err(format!("fd {k}: the map says {got:?}, the model {want:?}")),
        }
    }

    /// Routes `path` from `base` with the shim's code and checks the
    /// answer against the reference; where it lands.
    fn route(&self, base: &Base, path: &[u8]) -> Result<Base, String> {
        let pre = Some(&self.pre_bytes[..]);
        let r = match base {
            Base::Kernel(l) => {
                let d = bytes(l);
                // The cwd and a kernel dirfd differ only in when the path
                // is asked for; a dirfd is taken for the cwd's route too.
                let cwd = route::route(pre, Dir::KernelCwd(|| Some(d.clone())), path).into_owned();
                let fd = route::route(pre, Dir::KernelFd(|| Some(d.clone())), path).into_owned();
                if cwd != fd {
                    return Err(format!(
                        "{} from kernel directory {}: as the cwd {}, as a dirfd {}",
                        show(path),
                        show(&d),
                        show_route(&cwd),
                        show_route(&fd)
                    ));
                }
                cwd
            }
            Base::Uvfs(fd, l) => {
                let d = bytes(l);
                route::route(pre, Dir::Uvfs(*fd, || Some(d)), path).into_owned()
            }
        };
        // The reference.
        let start = match base {
            Base::Kernel(l) => l.clone(),
            Base::Uvfs(_, l) => [self.pre.clone(), l.clone()].concat(),
        };
        let want = resolve(&start, path);
        let want_tail = tail(path);
        let fail = |m: String| {
            Err(format!(
                "{} from {}: routed to {}; reference {}, last component {want_tail:?}: {m}",
                show(path),
                show_base(base),
                show_route(&r),
                show(&bytes(&want))
            ))
        };
        let (got, got_tail, landed) = match &r {
            Route::Kernel => {
                let from = match base {
                    Base::Kernel(l) => l.clone(),
                    Base::Uvfs(..) if path.first() == Some(&b'/') => Vec::new(),
                    Base::Uvfs(..) => {
                        return fail("the kernel gets a path relative to a uvfs directory".into());
                    }
                };
                match kernel_walk(&self.pre, &from, path) {
                    Ok(l) => (l.clone(), tail(path), Base::Kernel(l)),
                    Err(e) => return fail(e),
                }
            }
            Route::KernelAbs(k) => {
                if k.first() != Some(&b'/') {
                    return fail("a relative KernelAbs".into());
                }
                match kernel_walk(&self.pre, &[], k) {
                    Ok(l) => (l.clone(), tail(k), Base::Kernel(l)),
                    Err(e) => return fail(e),
                }
            }
            Route::Uvfs(d, p) => {
                let from = if p.first() == Some(&b'/') {
                    Vec::new()
                } else {
                    match (d, base) {
                        (&AT_FDCWD, Base::Uvfs(AT_FDCWD, l)) => l.clone(),
                        (&AT_FDCWD, _) => {
                            return fail("uvfs's cwd used while the cwd is the kernel's".into());
                        }
                        (d, Base::Uvfs(bd, l)) if d == bd => l.clone(),
                        (d, _) => return fail(format!("uvfs fd {d} is not the directory's")),
                    }
                };
                match uvfs_walk(&from, p) {
                    Ok(l) => (
                        [self.pre.clone(), l.clone()].concat(),
                        tail(p),
                        Base::Uvfs(*d, l),
                    ),
                    Err(e) => return fail(e),
                }
            }
        };
        if got != want {
            return fail(format!("lands at {}", show(&bytes(&got))));
        }
        let side_ok = is_under(&self.pre, &want) == matches!(r, Route::Uvfs(..));
        if !side_ok {
            return fail("the wrong side".into());
        }
        // The last component keeps its kind; a name that is the prefix
        // itself may become uvfs's `/`.
        let tail_ok = got_tail == want_tail
            || (got_tail == Tail::None
                && matches!(want_tail, Tail::Name(_))
                && want == self.pre
                && matches!(r, Route::Uvfs(..)));
        if !tail_ok {
            return fail(format!("last component {got_tail:?}"));
        }
        Ok(landed)
    }

    /// The fd map against the model.
    fn check_map(&self) -> Result<(), String> {
        let hi = self.map.hi.load(Ordering::Relaxed);
        let mut seen = BTreeMap::new();
        // Every number up to a little past the highest the model has
        // (small: the model allocates the lowest free ones), every number
        // the model has and its neighbours, and the odd ones.
        let top = self.fds.range(..4096).next_back().map_or(0, |(&k, _)| k) + 3;
        let mut nums: BTreeSet<i32> = (-2..top).collect();
        for &k in self.fds.keys().chain(ODD_FDS) {
            nums.extend([k.saturating_sub(1), k, k.saturating_add(1)]);
        }
        for k in nums {
            let want = match self.fds.get(&k) {
                Some(Open::Uvfs(u, _)) => Fd::Uvfs(*u),
                Some(Open::Stale) => Fd::Stale,
                Some(Open::Kernel(_)) | None => Fd::Kernel,
            };
            let got = self.map.get(k);
            if got != want {
                return Err(format!("fd {k}: the map says {got:?}, the model {want:?}"));
            }
            if let Fd::Uvfs(u) = got {
                if let Some(k0) = seen.insert(u, k) {
                    return Err(format!("uvfs fd {u} behind fds {k0} and {k}"));
                }
                if k >= hi {
                    return Err(format!("fd {k} mapped at or above the high mark {hi}"));
                }
            }
        }
        Ok(())
    }
}

/// A path: names, dots and the prefix's own components (whole, or
/// without its leading slash), joined by one or two slashes.
fn path(u: &mut Unstructured, pre: &str) -> AResult<Vec<u8>> {
    let mut p = Vec::new();
    if u.ratio(2, 3)? {
        p.push(b'/');
        if u.ratio(1, 8)? {
            p.push(b'/');
        }
    }
    let n = u.int_in_range(0..=7)?;
    for i in 0..n {
        if i > 0 {
            p.push(b'/');
            if u.ratio(1, 8)? {
                p.push(b'/');
            }
        }
        if u.ratio(1, 6)? {
            p.extend_from_slice(&pre.as_bytes()[1..]);
        } else {
            p.extend_from_slice(u.choose(NAMES)?.as_bytes());
        }
    }
    if u.ratio(1, 5)? {
        p.push(b'/');
    }
    Ok(p)
}

/// An fd number to act on: mostly one the model has, else any small one
/// or one of the odd ones.
fn fd(u: &mut Unstructured, m: &Model) -> AResult<i32> {
    match u.int_in_range(0..=9)? {
        0 => Ok(*u.choose(ODD_FDS)?),
        1 => u.int_in_range(0..=16),
        _ if !m.fds.is_empty() => {
            let i = u.choose_index(m.fds.len())?;
            Ok(*m.fds.keys().nth(i).unwrap())
        }
        _ => u.int_in_range(0..=16),
    }
}

fn run(data: &[u8]) -> AResult<Result<(), String>> {
    let mut u = Unstructured::new(data);
    let pre_s = *u.choose(PREFIXES)?;
    let pre = comps(pre_s);
    let mut kcwd = comps(u.choose(CWDS)?);
    if is_under(&pre, &kcwd) {
        kcwd = Vec::new();
    }
    let mut m = Model {
        pre,
        pre_bytes: pre_s.as_bytes().to_vec(),
        kcwd,
        ucwd: None,
        fds: BTreeMap::new(),
        ufds: BTreeSet::new(),
        map: FdMap::new(),
        log: Vec::new(),
    };
    // The standard streams: the kernel's.
    for k in 0..3 {
        m.fds.insert(k, Open::Kernel(Vec::new()));
    }
    let mut calls = 0;
    while !u.is_empty() && calls < MAX_CALLS {
        calls += 1;
        let op = u.int_in_range(0..=7)?;
        let r = match op {
            // chdir(path) and fchdir(fd)
            0 | 1 => {
                let base = if op == 0 {
                    let p = path(&mut u, pre_s)?;
                    m.log.push(format!("chdir({})", show(&p)));
                    match m.base(AT_FDCWD) {
                        Ok(Some(b)) => m.route(&b, &p).map(Some),
                        Ok(None) => Ok(None),
                        Err(e) => Err(e),
                    }
                } else {
                    let k = fd(&mut u, &m)?;
                    m.log.push(format!("fchdir({k})"));
                    match m.base(k) {
                        Ok(Some(Base::Uvfs(_, l))) => Ok(Some(Base::Uvfs(0, l))),
                        Ok(b) => Ok(b),
                        Err(e) => Err(e),
                    }
                };
                match base {
                    Ok(Some(Base::Kernel(l))) => {
                        m.kcwd = l;
                        m.ucwd = None;
                        Ok(())
                    }
                    Ok(Some(Base::Uvfs(_, l))) => {
                        m.ucwd = Some(l);
                        Ok(())
                    }
                    Ok(None) => Ok(()),
                    Err(e) => Err(e),
                }
            }
            // openat(dirfd, path)
            2 | 3 => {
                let k = if u.ratio(1, 2)? {
                    AT_FDCWD
                } else {
                    fd(&mut u, &m)?
                };
                let p = path(&mut u, pre_s)?;
                m.log.push(format!("openat({k}, {})", show(&p)));
                // An absolute path ignores the dirfd.
                let b = if p.first() == Some(&b'/') {
                    m.base(k).map(|b| b.or(Some(Base::Kernel(Vec::new()))))
                } else {
                    m.base(k)
                };
                match b {
                    Err(e) => Err(e),
                    Ok(None) => Ok(()),
                    Ok(Some(b)) => match m.route(&b, &p) {
                        Err(e) => Err(e),
                        Ok(Base::Kernel(l)) => {
                            m.flush();
                            let nk = m.lowest_free_kernel();
                            m.fds.insert(nk, Open::Kernel(l));
                            Ok(())
                        }
                        Ok(Base::Uvfs(_, l)) => {
                            let uf = m.lowest_free_uvfs();
                            let nk = m.placeholder();
                            m.map.set(nk, uf + 1);
                            m.fds.insert(nk, Open::Uvfs(uf, l));
                            Ok(())
                        }
                    },
                }
            }
            // dup(fd)
            4 => {
                let k = fd(&mut u, &m)?;
                m.log.push(format!("dup({k})"));
                match m.fds.get(&k).cloned() {
                    Some(Open::Kernel(l)) => {
                        m.flush();
                        let nk = m.lowest_free_kernel();
                        m.fds.insert(nk, Open::Kernel(l));
                    }
                    Some(Open::Uvfs(_, l)) => {
                        let uf = m.lowest_free_uvfs();
                        let nk = m.placeholder();
                        m.map.set(nk, uf + 1);
                        m.fds.insert(nk, Open::Uvfs(uf, l));
                    }
                    Some(Open::Stale) | None => {}
                }
                Ok(())
            }
            // dup2(fd, target)
            5 => {
                let k = fd(&mut u, &m)?;
                let t = if u.ratio(1, 2)? {
                    u.int_in_range(0..=16)?
                } else {
                    *u.choose(ODD_FDS)?
                };
                m.log.push(format!("dup2({k}, {t})"));
                // Linux: EBADF for a target beyond the fd limit (1 Mi
                // here) or negative.
                let src = m.fds.get(&k).cloned();
                if (0..1 << 20).contains(&t) && k != t {
                    match src {
                        Some(Open::Kernel(l)) => {
                            m.close(t, false);
                            m.fds.remove(&t);
                            m.map.set(t, 0);
                            m.fds.insert(t, Open::Kernel(l));
                        }
                        Some(Open::Uvfs(_, l)) => {
                            let uf = m.lowest_free_uvfs();
                            m.close(t, false);
                            m.fds.remove(&t);
                            m.map.set(t, uf + 1);
                            m.fds.insert(t, Open::Uvfs(uf, l));
                        }
                        Some(Open::Stale) | None => {}
                    }
                }
                Ok(())
            }
            // close(fd), plain or into the cache
            6 => {
                let k = fd(&mut u, &m)?;
                let cache = u.ratio(1, 2)?;
                m.log
                    .push(format!("close({k}{})", if cache { ", cached" } else { "" }));
                m.close(k, cache);
                Ok(())
            }
            // a probe of any number
            _ => {
                let k: i32 = u.arbitrary()?;
                m.log.push(format!("probe({k})"));
                if !m.fds.contains_key(&k) && m.map.get(k) != Fd::Kernel {
                    Err(format!("fd {k}, never mapped, reads {:?}", m.map.get(k)))
                } else {
                    Ok(())
                }
            }
        };
        if let Err(e) = r.and_then(|()| m.check_map()) {
            return Ok(Err(format!(
                "prefix {pre_s}, calls:\n  {}\n{e}",
                m.log.join("\n  ")
            )));
        }
    }
    Ok(Ok(()))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(Err(e)) = run(data) {
        panic!("shim routing: {e}");
    }
    if let Ok(Err(e)) = numbering_gate::run_numbering(data) {
        panic!("shim placeholder numbering: {e}");
    }
    if let Ok(Err(e)) = numbering_gate::run_gate(data) {
        panic!("shim fork gate: {e}");
    }
});
