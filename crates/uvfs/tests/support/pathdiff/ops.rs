//! The operations of a run, their generation-independent parts (display,
//! which fds they open), and a run: the ops on one backend, then the dump.

use super::*;

/// Write data: `len` bytes of a pattern starting at `seed`.
#[derive(Clone, Copy, Debug)]
pub struct Data {
    pub len: usize,
    pub seed: u8,
}

impl Data {
    pub fn bytes(self) -> Vec<u8> {
        (0..self.len)
            .map(|i| self.seed.wrapping_add((i % 251) as u8))
            .collect()
    }
}

pub type P = Vec<u8>;

#[derive(Clone, Debug)]
pub enum Op {
    Open(P, i32, u32),
    Openat(Fd, P, i32, u32),
    Creat(P, u32),
    Close(Fd),
    Read(Fd, usize),
    Write(Fd, Data),
    Pread(Fd, usize, i64),
    Pwrite(Fd, Data, i64),
    Readv(Fd, Vec<usize>),
    Writev(Fd, Vec<Data>),
    Lseek(Fd, i64, i32),
    Stat(P),
    Lstat(P),
    Fstat(Fd),
    Fstatat(Fd, P, i32),
    Statx(Fd, P, i32, u32),
    Truncate(P, i64),
    Ftruncate(Fd, i64),
    Fallocate(Fd, i32, i64, i64),
    Mkdir(P, u32),
    Mkdirat(Fd, P, u32),
    Rmdir(P),
    Unlink(P),
    Unlinkat(Fd, P, i32),
    Rename(P, P),
    Renameat(Fd, P, Fd, P),
    Renameat2(Fd, P, Fd, P, u32),
    Link(P, P),
    Linkat(Fd, P, Fd, P, i32),
    Symlink(P, P),
    Symlinkat(P, Fd, P),
    Readlink(P, usize),
    Readlinkat(Fd, P, usize),
    Getdents(Fd, usize),
    Chdir(P),
    Fchdir(Fd),
    Getcwd,
    Chmod(P, u32),
    Fchmod(Fd, u32),
    Fchmodat(Fd, P, u32, i32),
    Chown(P, u32, u32),
    Lchown(P, u32, u32),
    Fchown(Fd, u32, u32),
    Fchownat(Fd, P, u32, u32, i32),
    Umask(u32),
    Access(P, i32),
    Faccessat(Fd, P, i32, i32),
    Utimensat(Fd, P, Option<[Ts; 2]>, i32),
    Futimens(Fd, Option<[Ts; 2]>),
    Fsync(Fd),
    Fdatasync(Fd),
}

/// A path for display: printable, long ones abbreviated.
pub fn sp(p: &[u8]) -> String {
    if p.len() <= 64 {
        format!("{:?}", String::from_utf8_lossy(p))
    } else {
        format!(
            "<{}B {:?}..{:?}>",
            p.len(),
            String::from_utf8_lossy(&p[..20]),
            String::from_utf8_lossy(&p[p.len() - 20..])
        )
    }
}

pub fn show_times(t: &Option<[Ts; 2]>) -> String {
    let one = |t: Ts| match t.nsec {
        UTIME_NOW => "NOW".to_string(),
        UTIME_OMIT => "OMIT".to_string(),
        n => format!("{}.{n}", t.sec),
    };
    match t {
        None => "NULL".into(),
        Some([a, m]) => format!("[{}, {}]", one(*a), one(*m)),
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Open(p, fl, m) => write!(f, "open({}, {fl:#o}, {m:#o})", sp(p)),
            Op::Openat(d, p, fl, m) => write!(f, "openat({d}, {}, {fl:#o}, {m:#o})", sp(p)),
            Op::Creat(p, m) => write!(f, "creat({}, {m:#o})", sp(p)),
            Op::Close(d) => write!(f, "close({d})"),
            Op::Read(d, n) => write!(f, "read({d}, {n})"),
            Op::Write(d, x) => write!(f, "write({d}, {}x{})", x.len, x.seed),
            Op::Pread(d, n, o) => write!(f, "pread({d}, {n}, {o})"),
            Op::Pwrite(d, x, o) => write!(f, "pwrite({d}, {}x{}, {o})", x.len, x.seed),
            Op::Readv(d, v) => write!(f, "readv({d}, {v:?})"),
            Op::Writev(d, v) => {
                let v: Vec<String> = v.iter().map(|x| format!("{}x{}", x.len, x.seed)).collect();
                write!(f, "writev({d}, [{}])", v.join(", "))
            }
            Op::Lseek(d, o, w) => write!(f, "lseek({d}, {o}, {w})"),
            Op::Stat(p) => write!(f, "stat({})", sp(p)),
            Op::Lstat(p) => write!(f, "lstat({})", sp(p)),
            Op::Fstat(d) => write!(f, "fstat({d})"),
            Op::Fstatat(d, p, fl) => write!(f, "fstatat({d}, {}, {fl:#x})", sp(p)),
            Op::Statx(d, p, fl, m) => write!(f, "statx({d}, {}, {fl:#x}, {m:#x})", sp(p)),
            Op::Truncate(p, l) => write!(f, "truncate({}, {l})", sp(p)),
            Op::Ftruncate(d, l) => write!(f, "ftruncate({d}, {l})"),
            Op::Fallocate(d, m, o, l) => write!(f, "fallocate({d}, {m:#x}, {o}, {l})"),
            Op::Mkdir(p, m) => write!(f, "mkdir({}, {m:#o})", sp(p)),
            Op::Mkdirat(d, p, m) => write!(f, "mkdirat({d}, {}, {m:#o})", sp(p)),
            Op::Rmdir(p) => write!(f, "rmdir({})", sp(p)),
            Op::Unlink(p) => write!(f, "unlink({})", sp(p)),
            Op::Unlinkat(d, p, fl) => write!(f, "unlinkat({d}, {}, {fl:#x})", sp(p)),
            Op::Rename(a, b) => write!(f, "rename({}, {})", sp(a), sp(b)),
            Op::Renameat(d, a, e, b) => write!(f, "renameat({d}, {}, {e}, {})", sp(a), sp(b)),
            Op::Renameat2(d, a, e, b, fl) => {
                write!(f, "renameat2({d}, {}, {e}, {}, {fl:#x})", sp(a), sp(b))
            }
            Op::Link(a, b) => write!(f, "link({}, {})", sp(a), sp(b)),
            Op::Linkat(d, a, e, b, fl) => {
                write!(f, "linkat({d}, {}, {e}, {}, {fl:#x})", sp(a), sp(b))
            }
            Op::Symlink(t, p) => write!(f, "symlink({}, {})", sp(t), sp(p)),
            Op::Symlinkat(t, d, p) => write!(f, "symlinkat({}, {d}, {})", sp(t), sp(p)),
            Op::Readlink(p, n) => write!(f, "readlink({}, {n})", sp(p)),
            Op::Readlinkat(d, p, n) => write!(f, "readlinkat({d}, {}, {n})", sp(p)),
            Op::Getdents(d, n) => write!(f, "getdents64({d}, {n})"),
            Op::Chdir(p) => write!(f, "chdir({})", sp(p)),
            Op::Fchdir(d) => write!(f, "fchdir({d})"),
            Op::Getcwd => write!(f, "getcwd()"),
            Op::Chmod(p, m) => write!(f, "chmod({}, {m:#o})", sp(p)),
            Op::Fchmod(d, m) => write!(f, "fchmod({d}, {m:#o})"),
            Op::Fchmodat(d, p, m, fl) => write!(f, "fchmodat({d}, {}, {m:#o}, {fl:#x})", sp(p)),
            Op::Chown(p, u, g) => write!(f, "chown({}, {}, {})", sp(p), *u as i32, *g as i32),
            Op::Lchown(p, u, g) => write!(f, "lchown({}, {}, {})", sp(p), *u as i32, *g as i32),
            Op::Fchown(d, u, g) => write!(f, "fchown({d}, {}, {})", *u as i32, *g as i32),
            Op::Fchownat(d, p, u, g, fl) => write!(
                f,
                "fchownat({d}, {}, {}, {}, {fl:#x})",
                sp(p),
                *u as i32,
                *g as i32
            ),
            Op::Umask(m) => write!(f, "umask({m:#o})"),
            Op::Access(p, m) => write!(f, "access({}, {m})", sp(p)),
            Op::Faccessat(d, p, m, fl) => write!(f, "faccessat({d}, {}, {m}, {fl:#x})", sp(p)),
            Op::Utimensat(d, p, t, fl) => {
                write!(f, "utimensat({d}, {}, {}, {fl:#x})", sp(p), show_times(t))
            }
            Op::Futimens(d, t) => write!(f, "futimens({d}, {})", show_times(t)),
            Op::Fsync(d) => write!(f, "fsync({d})"),
            Op::Fdatasync(d) => write!(f, "fdatasync({d})"),
        }
    }
}

/// Whether the op appends an entry to the fd list.
pub fn opens(op: &Op) -> bool {
    matches!(op, Op::Open(..) | Op::Openat(..) | Op::Creat(..))
}

pub fn unit(r: R<()>) -> Res {
    r.map(|()| Val::Unit)
}

pub fn parse_dents(buf: &[u8]) -> Vec<Dent> {
    let mut out = Vec::new();
    let mut p = 0;
    while p + 19 <= buf.len() {
        let ino = u64::from_ne_bytes(buf[p..p + 8].try_into().unwrap());
        let off = i64::from_ne_bytes(buf[p + 8..p + 16].try_into().unwrap());
        let reclen = u16::from_ne_bytes(buf[p + 16..p + 18].try_into().unwrap()) as usize;
        let ty = buf[p + 18];
        if reclen < 20 || p + reclen > buf.len() {
            out.push(Dent {
                ino,
                off,
                ty,
                name: format!("<bad reclen {reclen}>").into_bytes(),
            });
            break;
        }
        let raw = &buf[p + 19..p + reclen];
        let len = raw.iter().position(|&c| c == 0).unwrap_or(raw.len());
        out.push(Dent {
            ino,
            off,
            ty,
            name: raw[..len].to_vec(),
        });
        p += reclen;
    }
    out
}

/// Runs one op on a backend.
/// How often the host retries a call that failed with ELOOP (see
/// `Backend::eloop_retries`).
pub const HOST_ELOOP_RETRIES: usize = 8;

pub fn exec(b: &mut dyn Backend, op: &Op) -> Res {
    let open = |b: &mut dyn Backend| match op {
        Op::Open(p, fl, m) => Some(b.open(p, *fl, *m)),
        Op::Openat(d, p, fl, m) => Some(b.openat(*d, p, *fl, *m)),
        Op::Creat(p, m) => Some(b.creat(p, *m)),
        _ => None,
    };
    let mut r = open(b);
    for _ in 0..b.eloop_retries() {
        if r != Some(Err(ELOOP)) {
            break;
        }
        r = open(b);
    }
    if let Some(r) = r {
        b.fds().0.push(r.ok());
        return r.map(|_| Val::Fd);
    }
    let mut r = exec_other(b, op);
    for _ in 0..b.eloop_retries() {
        if r != Err(ELOOP) {
            break;
        }
        r = exec_other(b, op);
    }
    r
}

pub fn exec_other(b: &mut dyn Backend, op: &Op) -> Res {
    match op {
        Op::Open(..) | Op::Openat(..) | Op::Creat(..) => unreachable!(),
        Op::Close(d) => {
            let r = b.close(*d);
            if let Fd::Idx(i) = d
                && let Some(e) = b.fds().0.get_mut(*i)
            {
                *e = None;
            }
            unit(r)
        }
        Op::Read(d, n) => {
            let mut buf = vec![0u8; *n];
            b.read(*d, &mut buf).map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Write(d, x) => b.write(*d, &x.bytes()).map(|k| Val::Num(k as i64)),
        Op::Pread(d, n, o) => {
            let mut buf = vec![0u8; *n];
            b.pread(*d, &mut buf, *o)
                .map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Pwrite(d, x, o) => b.pwrite(*d, &x.bytes(), *o).map(|k| Val::Num(k as i64)),
        Op::Readv(d, lens) => {
            let mut bufs: Vec<Vec<u8>> = lens.iter().map(|&n| vec![0u8; n]).collect();
            let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(|v| v.as_mut_slice()).collect();
            let r = b.readv(*d, &mut refs);
            r.map(|k| Val::Bytes(bufs.concat()[..k].to_vec()))
        }
        Op::Writev(d, v) => {
            let bufs: Vec<Vec<u8>> = v.iter().map(|x| x.bytes()).collect();
            let refs: Vec<&[u8]> = bufs.iter().map(|v| v.as_slice()).collect();
            b.writev(*d, &refs).map(|k| Val::Num(k as i64))
        }
        Op::Lseek(d, o, w) => b.lseek(*d, *o, *w).map(Val::Num),
        Op::Stat(p) => b.stat(p).map(|s| Val::Stat(Box::new(s))),
        Op::Lstat(p) => b.lstat(p).map(|s| Val::Stat(Box::new(s))),
        Op::Fstat(d) => b.fstat(*d).map(|s| Val::Stat(Box::new(s))),
        Op::Fstatat(d, p, fl) => b.fstatat(*d, p, *fl).map(|s| Val::Stat(Box::new(s))),
        Op::Statx(d, p, fl, m) => b.statx(*d, p, *fl, *m).map(|s| Val::Stat(Box::new(s))),
        Op::Truncate(p, l) => unit(b.truncate(p, *l)),
        Op::Ftruncate(d, l) => unit(b.ftruncate(*d, *l)),
        Op::Fallocate(d, m, o, l) => unit(b.fallocate(*d, *m, *o, *l)),
        Op::Mkdir(p, m) => unit(b.mkdir(p, *m)),
        Op::Mkdirat(d, p, m) => unit(b.mkdirat(*d, p, *m)),
        Op::Rmdir(p) => unit(b.rmdir(p)),
        Op::Unlink(p) => unit(b.unlink(p)),
        Op::Unlinkat(d, p, fl) => unit(b.unlinkat(*d, p, *fl)),
        Op::Rename(a, c) => unit(b.rename(a, c)),
        Op::Renameat(d, a, e, c) => unit(b.renameat(*d, a, *e, c)),
        Op::Renameat2(d, a, e, c, fl) => unit(b.renameat2(*d, a, *e, c, *fl)),
        Op::Link(a, c) => unit(b.link(a, c)),
        Op::Linkat(d, a, e, c, fl) => unit(b.linkat(*d, a, *e, c, *fl)),
        Op::Symlink(t, p) => unit(b.symlink(t, p)),
        Op::Symlinkat(t, d, p) => unit(b.symlinkat(t, *d, p)),
        Op::Readlink(p, n) => {
            let mut buf = vec![0u8; *n];
            b.readlink(p, &mut buf)
                .map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Readlinkat(d, p, n) => {
            let mut buf = vec![0u8; *n];
            b.readlinkat(*d, p, &mut buf)
                .map(|k| Val::Bytes(buf[..k].to_vec()))
        }
        Op::Getdents(d, n) => {
            let mut buf = vec![0u8; *n];
            b.getdents64(*d, &mut buf)
                .map(|k| Val::Dents(k, parse_dents(&buf[..k])))
        }
        Op::Chdir(p) => unit(b.chdir(p)),
        Op::Fchdir(d) => unit(b.fchdir(*d)),
        Op::Getcwd => b.getcwd().map(Val::Bytes),
        Op::Chmod(p, m) => unit(b.chmod(p, *m)),
        Op::Fchmod(d, m) => unit(b.fchmod(*d, *m)),
        Op::Fchmodat(d, p, m, fl) => unit(b.fchmodat(*d, p, *m, *fl)),
        Op::Chown(p, u, g) => unit(b.chown(p, *u, *g)),
        Op::Lchown(p, u, g) => unit(b.lchown(p, *u, *g)),
        Op::Fchown(d, u, g) => unit(b.fchown(*d, *u, *g)),
        Op::Fchownat(d, p, u, g, fl) => unit(b.fchownat(*d, p, *u, *g, *fl)),
        Op::Umask(m) => Ok(Val::Num(i64::from(b.umask(*m)))),
        Op::Access(p, m) => unit(b.access(p, *m)),
        Op::Faccessat(d, p, m, fl) => unit(b.faccessat(*d, p, *m, *fl)),
        Op::Utimensat(d, p, t, fl) => unit(b.utimensat(*d, p, *t, *fl)),
        Op::Futimens(d, t) => unit(b.futimens(*d, *t)),
        Op::Fsync(d) => unit(b.fsync(*d)),
        Op::Fdatasync(d) => unit(b.fdatasync(*d)),
    }
}

// ---------------------------------------------------------------------------
// A run: the ops, then the dump.
// ---------------------------------------------------------------------------

/// One observation: what was done (op index or a dump step) and its result.
#[derive(Clone, Debug)]
pub struct Obs {
    pub what: String,
    pub res: Res,
}

pub struct Log {
    pub obs: Vec<Obs>,
    /// Where the dump started.
    pub dump_root: Vec<u8>,
}

pub fn run(b: &mut dyn Backend, ops: &[Op], dump_root: &[u8]) -> Log {
    let mut obs = Vec::with_capacity(ops.len() + 256);
    for op in ops {
        let res = exec(b, op);
        obs.push(Obs {
            what: String::new(),
            res,
        });
    }
    dump(b, dump_root, &mut obs);
    Log {
        obs,
        dump_root: dump_root.to_vec(),
    }
}

pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut p = dir.to_vec();
    if p.last() != Some(&b'/') {
        p.push(b'/');
    }
    p.extend_from_slice(name);
    p
}

/// A recursive dump of the tree under `dir`, through the backend's own
/// calls: getdents64 (whole listing, in order, with cookies), lstat of every
/// entry, readlink of symlinks, the SEEK_DATA/SEEK_HOLE map and data of
/// regular files.
pub fn dump(b: &mut dyn Backend, dir: &[u8], obs: &mut Vec<Obs>) {
    let push = |obs: &mut Vec<Obs>, what: String, res| obs.push(Obs { what, res });
    let st = b.lstat(dir).map(|s| Val::Stat(Box::new(s)));
    push(obs, format!("dump lstat {}", sp(dir)), st);
    dump_dir(b, dir, obs);
}

/// The listing of `dir`, then each entry (lstat; recursion, readlink or
/// data).
pub fn dump_dir(b: &mut dyn Backend, dir: &[u8], obs: &mut Vec<Obs>) {
    let push = |obs: &mut Vec<Obs>, what: String, res| obs.push(Obs { what, res });
    let fd = b.open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    b.fds().0.push(fd.ok());
    let idx = Fd::Idx(b.fds().0.len() - 1);
    if let Err(e) = fd {
        push(obs, format!("dump open {}", sp(dir)), Err(e));
        return;
    }
    let mut names = Vec::new();
    let mut buf = vec![0u8; 4096];
    for _ in 0..10_000 {
        let r = b.getdents64(idx, &mut buf);
        let res = r.map(|k| Val::Dents(k, parse_dents(&buf[..k])));
        let done = !matches!(res, Ok(Val::Dents(k, _)) if k > 0);
        if let Ok(Val::Dents(_, d)) = &res {
            names.extend(d.iter().map(|e| (e.name.clone(), e.ty)));
        }
        // No changes between these calls: the resumption divergence
        // cannot apply, so no fd is given.
        push(obs, format!("dump getdents64 {}", sp(dir)), res);
        if done {
            break;
        }
    }
    let _ = b.close(idx);
    b.fds().0.pop();
    for (name, _) in names {
        if name == b"." || name == b".." {
            continue;
        }
        let path = join(dir, &name);
        let st = b.lstat(&path);
        let mode = st.as_ref().map_or(0, |s| s.mode & S_IFMT);
        push(
            obs,
            format!("dump lstat {}", sp(&path)),
            st.map(|s| Val::Stat(Box::new(s))),
        );
        match mode {
            S_IFDIR if path.len() < 3000 => dump_dir(b, &path, obs),
            S_IFLNK => {
                let mut buf = vec![0u8; 4096];
                let r = b.readlink(&path, &mut buf);
                push(
                    obs,
                    format!("dump readlink {}", sp(&path)),
                    r.map(|k| Val::Bytes(buf[..k].to_vec())),
                );
            }
            S_IFREG => dump_file(b, &path, obs),
            _ => {}
        }
    }
}

/// The data segments of a regular file and their contents (at most 64
/// segments and 4 MiB).
pub fn dump_file(b: &mut dyn Backend, path: &[u8], obs: &mut Vec<Obs>) {
    let fd = b.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    b.fds().0.push(fd.ok());
    let idx = Fd::Idx(b.fds().0.len() - 1);
    if let Err(e) = fd {
        obs.push(Obs {
            what: format!("dump open {}", sp(path)),
            res: Err(e),
        });
        b.fds().0.pop();
        return;
    }
    let mut pos = 0i64;
    let mut budget = 4 << 20;
    for _ in 0..64 {
        let start = b.lseek(idx, pos, SEEK_DATA);
        let end = start.and_then(|s| b.lseek(idx, s, SEEK_HOLE));
        let res = match (start, end) {
            (Err(e), _) | (_, Err(e)) => Err(e),
            // A hole before the data (Linux's overflowed hole offset near
            // i64::MAX, finding 28): report the map, read nothing.
            (Ok(s), Ok(e)) if e <= s => {
                budget = 0;
                Ok(Val::Bytes(format!("[{s}, {e})").into_bytes()))
            }
            (Ok(s), Ok(e)) => {
                let n = ((e - s) as usize).min(budget);
                let mut buf = vec![0u8; n];
                match b.pread(idx, &mut buf, s) {
                    Ok(k) => {
                        budget -= k;
                        pos = e;
                        let mut v = format!("[{s}, {e}) ").into_bytes();
                        v.extend_from_slice(&buf[..k]);
                        Ok(Val::Bytes(v))
                    }
                    Err(e) => Err(e),
                }
            }
        };
        let stop = res.is_err() || budget == 0;
        obs.push(Obs {
            what: format!("dump data {}", sp(path)),
            res,
        });
        if stop {
            break;
        }
    }
    let _ = b.close(idx);
    b.fds().0.pop();
}
