//! The fuzz target's decoder and executor: arbitrary bytes become a sequence
//! of syscalls across up to three processes of one small VFS (caches far
//! smaller than the tree, tmpfs with small size and inode limits).
//!
//! Every byte string decodes to *something*: the reader returns zeros once
//! the input is exhausted, and the run stops there. The executor checks, after
//! each call, that the process's fd table maps every open fd to a live file
//! (`F_GETFD` succeeding implies `fstat` succeeding) and that no call answers
//! with an errno no path of the VFS should produce (`EIO`, `ESTALE`, an
//! unknown number); at the end, with every process gone, the dentry cache
//! agrees with tmpfs (`Vfs::check_consistency`) and tmpfs's own invariants
//! hold (`Tmpfs::fsck`). Panics are caught by the driver.

use std::collections::BTreeSet;
use std::sync::Arc;
use uvfs::fs::FileSystem;
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::uapi::*;
use uvfs::{Errno, FastPaths, Process, Vfs};

/// Bytes read front to back; zeros past the end.
struct Input<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Input<'_> {
    fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    fn u16(&mut self) -> u16 {
        u16::from(self.u8()) | (u16::from(self.u8()) << 8)
    }
    fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | (u32::from(self.u16()) << 16)
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.u8() as usize % items.len()]
    }
}

const COMPONENTS: &[&[u8]] = &[
    b"a", b"b", b"c", b"d", b"l", b"m", b"..", b".", b"", b"a", b"b", b"l", b"m", b"/m",
];

/// Odd components, chosen with low probability.
fn odd_component(i: &mut Input) -> Vec<u8> {
    match i.u8() % 8 {
        0 => vec![b'x'; 256],        // one over NAME_MAX
        1 => vec![b'y'; 255],        // exactly NAME_MAX
        2 => b"a\0b".to_vec(),       // an embedded NUL
        3 => vec![0xff, 0xfe, b'a'], // not UTF-8
        4 => b"...".to_vec(),        // a real name
        5 => vec![b'z'; (i.u8() as usize) + 1],
        6 => vec![0xc3, 0x28], // invalid UTF-8 pair
        _ => b"lnk".to_vec(),
    }
}

fn path(i: &mut Input) -> Vec<u8> {
    let shape = i.u8();
    let mut p = Vec::new();
    match shape % 16 {
        // A path of PATH_MAX or more.
        0 => {
            let unit: &[u8] = if i.u8().is_multiple_of(2) {
                b"./"
            } else {
                b"a/"
            };
            let n = 2040 + (i.u8() as usize % 16);
            for _ in 0..n {
                p.extend_from_slice(unit);
            }
            p.extend_from_slice(b"a");
            return p;
        }
        1 => return Vec::new(),
        _ => {}
    }
    if shape & 0x10 != 0 {
        p.push(b'/');
    }
    let n = 1 + (i.u8() % 4) as usize;
    for k in 0..n {
        if k > 0 {
            p.push(b'/');
        }
        let c = i.u8();
        if c >= 0xf0 {
            p.extend_from_slice(&odd_component(i));
        } else {
            p.extend_from_slice(COMPONENTS[c as usize % COMPONENTS.len()]);
        }
    }
    if shape & 0x20 != 0 && shape & 0x40 != 0 {
        p.push(b'/');
    }
    p
}

const OPEN_FLAGS: &[i32] = &[
    O_WRONLY,
    O_RDWR,
    O_CREAT,
    O_EXCL,
    O_TRUNC,
    O_APPEND,
    O_DIRECTORY,
    O_NOFOLLOW,
    O_PATH,
    O_TMPFILE,
    O_CLOEXEC,
    O_NONBLOCK,
    O_NOATIME,
    O_SYNC,
    O_DIRECT,
    0x4000_0000, // an invalid bit, silently dropped
];

fn open_flags(i: &mut Input) -> i32 {
    let bits = i.u16();
    let mut f = 0;
    for (k, &flag) in OPEN_FLAGS.iter().enumerate() {
        if bits & (1 << k) != 0 {
            f |= flag;
        }
    }
    f
}

fn mode(i: &mut Input) -> u32 {
    i.pick(&[0o644, 0o755, 0o000, 0o7777, 0o1777, 0xffff_ffff, 0o200])
}

fn offset(i: &mut Input) -> i64 {
    match i.u8() % 12 {
        0 => 0,
        1 => 1,
        2 => 4095,
        3 => 4096,
        4 => -1,
        5 => i64::MAX,
        6 => i64::MIN,
        7 => 1 << 40,
        8 => i64::MAX - 4095,
        9 => (1 << 16) - 3,
        10 => i.u16() as i64,
        _ => i.u64() as i64,
    }
}

fn len(i: &mut Input) -> usize {
    match i.u8() % 6 {
        0 => 0,
        1 => 1,
        2 => 4096,
        3 => 9000,
        _ => i.u8() as usize,
    }
}

/// What the fuzzer learned from one run: the (call, outcome) pairs reached,
/// the driver's stand-in for coverage.
#[derive(Default)]
pub struct Trace {
    pub seen: BTreeSet<(u8, i32)>,
    pub calls: usize,
}

pub struct Fuzz {
    fs: Arc<Tmpfs>,
    /// A second tmpfs mounted on `/m`: cross-device renames and links.
    fs2: Arc<Tmpfs>,
    vfs: Arc<Vfs>,
    procs: Vec<Process>,
    /// fds returned by recent calls, per process.
    fds: Vec<Vec<i32>>,
    pub trace: Trace,
}

fn bad_errno(e: Errno) -> bool {
    e == Errno::EIO || e == Errno::ESTALE || e == Errno::EUCLEAN || e.name().is_none()
}

impl Fuzz {
    pub fn new(fast: FastPaths) -> Fuzz {
        let fs = Tmpfs::new(TmpfsOptions {
            size_bytes: Some(8 * 4096),
            nr_inodes: Some(12),
            mode: 0o755,
            ..TmpfsOptions::default()
        });
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .dcache_limit(6)
            .icache_limit(6)
            .build_with_root(fs.clone());
        let fs2 = Tmpfs::new(TmpfsOptions {
            size_bytes: Some(4 * 4096),
            nr_inodes: Some(6),
            mode: 0o1777,
            ..TmpfsOptions::default()
        });
        let mut p0 = Process::new(&vfs).unwrap();
        p0.mkdir("/m", 0o755).unwrap();
        p0.mount(b"/m", fs2.clone()).unwrap();
        let procs = vec![p0, Process::new(&vfs).unwrap()];
        Fuzz {
            fs,
            fs2,
            vfs,
            procs,
            fds: vec![Vec::new(), Vec::new()],
            trace: Trace::default(),
        }
    }

    fn fd(&mut self, i: &mut Input, p: usize) -> i32 {
        let c = i.u8();
        if c < 128 {
            let v = &self.fds[p];
            if !v.is_empty() {
                return v[c as usize % v.len()];
            }
        }
        match c % 16 {
            0 => -1,
            1 => AT_FDCWD,
            2 => i32::MIN,
            3 => i32::MAX,
            4 => 1023,
            5 => 1024,
            6 => 1 << 20,
            7 => 64,
            8 => 63,
            9 => -2,
            _ => (c % 8) as i32,
        }
    }

    fn note<T>(&mut self, call: u8, r: &Result<T, Errno>) -> Result<(), String> {
        self.trace.calls += 1;
        let code = match r {
            Ok(_) => 0,
            Err(e) => e.raw(),
        };
        self.trace.seen.insert((call, code));
        match r {
            Err(e) if bad_errno(*e) => Err(format!("call {call}: unexpected errno {e:?}")),
            _ => Ok(()),
        }
    }

    fn keep_fd(&mut self, p: usize, r: &Result<i32, Errno>) {
        if let Ok(fd) = r {
            let v = &mut self.fds[p];
            if v.len() >= 8 {
                v.remove(0);
            }
            v.push(*fd);
        }
    }

    /// Every fd `F_GETFD` reports open has a live file `fstat` can read.
    fn check_table(&mut self, p: usize) -> Result<(), String> {
        let mut cands: Vec<i32> = (0..24).collect();
        cands.extend_from_slice(&self.fds[p]);
        cands.extend_from_slice(&[63, 64, 1023, 1024]);
        let proc = &mut self.procs[p];
        for fd in cands {
            match proc.fcntl(fd, F_GETFD, 0) {
                Ok(_) => {
                    if let Err(e) = proc.fstat(fd) {
                        return Err(format!("fd {fd} open but fstat says {e:?}"));
                    }
                }
                Err(Errno::EBADF) => {}
                Err(e) => return Err(format!("F_GETFD on {fd}: {e:?}")),
            }
        }
        Ok(())
    }

    /// Runs one call decoded from `i`.
    fn step(&mut self, i: &mut Input) -> Result<(), String> {
        let p = i.u8() as usize % self.procs.len();
        let op = i.u8() % 52;
        macro_rules! call {
            ($e:expr) => {{
                let r = $e;
                self.note(op, &r)?;
                r
            }};
        }
        match op {
            0..=3 => {
                let path = path(i);
                let (f, m) = (open_flags(i), mode(i));
                let r = call!(self.procs[p].open(&path, f, m));
                self.keep_fd(p, &r);
            }
            4 | 5 => {
                let d = self.fd(i, p);
                let path = path(i);
                let (f, m) = (open_flags(i), mode(i));
                let r = call!(self.procs[p].openat(d, &path, f, m));
                self.keep_fd(p, &r);
            }
            6 | 7 => {
                let fd = self.fd(i, p);
                call!(self.procs[p].close(fd)).ok();
            }
            8 => {
                let fd = self.fd(i, p);
                let r = call!(self.procs[p].dup(fd));
                self.keep_fd(p, &r);
            }
            9 => {
                let (a, b) = (self.fd(i, p), self.fd(i, p));
                let r = call!(self.procs[p].dup2(a, b));
                self.keep_fd(p, &r);
            }
            10 => {
                let (a, b) = (self.fd(i, p), self.fd(i, p));
                let fl = i.pick(&[0, O_CLOEXEC, 1, -1]);
                let r = call!(self.procs[p].dup3(a, b, fl));
                self.keep_fd(p, &r);
            }
            11 => {
                let fd = self.fd(i, p);
                let mut buf = vec![0u8; len(i)];
                call!(self.procs[p].read(fd, &mut buf)).ok();
            }
            12 | 13 => {
                let fd = self.fd(i, p);
                let buf = vec![i.u8(); len(i)];
                call!(self.procs[p].write(fd, &buf)).ok();
            }
            14 => {
                let fd = self.fd(i, p);
                let mut buf = vec![0u8; len(i)];
                let off = offset(i);
                call!(self.procs[p].pread(fd, &mut buf, off)).ok();
            }
            15 => {
                let fd = self.fd(i, p);
                let buf = vec![i.u8(); len(i)];
                let off = offset(i);
                call!(self.procs[p].pwrite(fd, &buf, off)).ok();
            }
            16 => {
                let fd = self.fd(i, p);
                let off = offset(i);
                let wh = i.pick(&[0, 1, 2, 3, 4, 5, -1]);
                call!(self.procs[p].lseek(fd, off, wh)).ok();
            }
            17 | 18 => {
                let path = path(i);
                let m = mode(i);
                call!(self.procs[p].mkdir(&path, m)).ok();
            }
            19 => {
                let path = path(i);
                call!(self.procs[p].rmdir(&path)).ok();
            }
            20 => {
                let path = path(i);
                call!(self.procs[p].unlink(&path)).ok();
            }
            21 => {
                let d = self.fd(i, p);
                let path = path(i);
                let fl = i.pick(&[0, AT_REMOVEDIR, 1, AT_SYMLINK_NOFOLLOW]);
                call!(self.procs[p].unlinkat(d, &path, fl)).ok();
            }
            22 => {
                let (a, b) = (path(i), path(i));
                call!(self.procs[p].rename(&a, &b)).ok();
            }
            23 => {
                let (da, a, db, b) = (self.fd(i, p), path(i), self.fd(i, p), path(i));
                let fl = i.pick(&[0u32, 1, 2, 3, 4, 8, u32::MAX]);
                call!(self.procs[p].renameat2(da, &a, db, &b, fl)).ok();
            }
            24 => {
                let (a, b) = (path(i), path(i));
                call!(self.procs[p].link(&a, &b)).ok();
            }
            25 => {
                let (da, a, db, b) = (self.fd(i, p), path(i), self.fd(i, p), path(i));
                let fl = i.pick(&[0, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH, 1]);
                call!(self.procs[p].linkat(da, &a, db, &b, fl)).ok();
            }
            26 | 27 => {
                // Targets that loop: l -> m, m -> l, l -> l, l -> ../l.
                let target = match i.u8() % 6 {
                    0 => b"m".to_vec(),
                    1 => b"l".to_vec(),
                    2 => b"../l".to_vec(),
                    3 => b"/l/a".to_vec(),
                    4 => vec![b'q'; 4097],
                    _ => path(i),
                };
                let lp = path(i);
                call!(self.procs[p].symlink(&target, &lp)).ok();
            }
            28 => {
                let path = path(i);
                let mut buf = vec![0u8; len(i)];
                call!(self.procs[p].readlink(&path, &mut buf)).ok();
            }
            29 => {
                let path = path(i);
                call!(self.procs[p].stat(&path)).ok();
            }
            30 => {
                let path = path(i);
                call!(self.procs[p].lstat(&path)).ok();
            }
            31 => {
                let path = path(i);
                let l = offset(i);
                call!(self.procs[p].truncate(&path, l)).ok();
            }
            32 => {
                let fd = self.fd(i, p);
                let l = offset(i);
                call!(self.procs[p].ftruncate(fd, l)).ok();
            }
            33 => {
                let path = path(i);
                call!(self.procs[p].chdir(&path)).ok();
            }
            34 => {
                let fd = self.fd(i, p);
                call!(self.procs[p].fchdir(fd)).ok();
            }
            35 => {
                // One in four: chroot (a process then walks from there;
                // getcwd may read "(unreachable)…").
                if i.u8().is_multiple_of(4) {
                    let path = path(i);
                    call!(self.procs[p].chroot(&path)).ok();
                } else {
                    call!(self.procs[p].getcwd()).ok();
                }
            }
            36 => {
                let fd = self.fd(i, p);
                let mut buf = vec![0u8; len(i)];
                call!(self.procs[p].getdents64(fd, &mut buf)).ok();
            }
            37 => {
                let fd = self.fd(i, p);
                let cmd = i.pick(&[
                    F_DUPFD,
                    F_GETFD,
                    F_SETFD,
                    F_GETFL,
                    F_SETFL,
                    F_DUPFD_CLOEXEC,
                    F_DUPFD_QUERY,
                    -1,
                    9999,
                ]);
                let arg = match i.u8() % 6 {
                    0 => 0,
                    1 => 1,
                    2 => u64::MAX,
                    3 => 1 << 31,
                    4 => (O_APPEND | O_NONBLOCK | O_DIRECT | O_NOATIME) as u64,
                    _ => i.u8() as u64,
                };
                let r = call!(self.procs[p].fcntl(fd, cmd, arg));
                if matches!(cmd, F_DUPFD | F_DUPFD_CLOEXEC) {
                    self.keep_fd(p, &r);
                }
            }
            38 => {
                let a = i.pick(&[0u32, 1, 3, 7, 64, u32::MAX]);
                let b = i.pick(&[0u32, 2, 5, 100, u32::MAX, i32::MAX as u32]);
                let fl = i.pick(&[0u32, CLOSE_RANGE_CLOEXEC, CLOSE_RANGE_UNSHARE, 1, 0xff]);
                call!(self.procs[p].close_range(a, b, fl)).ok();
            }
            39 => {
                let r = call!(self.procs[p].fork());
                if let Ok(child) = r {
                    if self.procs.len() < 3 {
                        self.procs.push(child);
                        self.fds.push(self.fds[p].clone());
                    } else {
                        // The child replaces another process, which exits.
                        let q = (p + 1) % 3;
                        self.fds[q] = self.fds[p].clone();
                        self.procs[q] = child;
                    }
                }
            }
            40 => {
                // Exit: a process other than the last one goes away.
                if self.procs.len() > 1 {
                    self.procs.swap_remove(p);
                    self.fds.swap_remove(p);
                    self.note(op, &Ok::<(), Errno>(()))?;
                }
            }
            41 => {
                let soft = i.pick(&[0u64, 1, 3, 8, 64, 1024, u64::MAX]);
                let hard = i.pick(&[0u64, 3, 8, 1024, 1 << 20, u64::MAX]);
                call!(self.procs[p].setrlimit_nofile(soft, hard)).ok();
            }
            42 => {
                let fd = self.fd(i, p);
                let m = i.pick(&[0, 1, 2, 3, 0x10, -1]);
                let (off, l) = (offset(i), offset(i));
                call!(self.procs[p].fallocate(fd, m, off, l)).ok();
            }
            43 => {
                let d = self.fd(i, p);
                let path = path(i);
                let fl = i.pick(&[0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, -1]);
                call!(self.procs[p].fstatat(d, &path, fl)).ok();
            }
            44 => {
                // A thread sharing the fd table, cwd and umask.
                let t = self.procs[p].new_thread();
                self.note(op, &Ok::<(), Errno>(()))?;
                if self.procs.len() < 3 {
                    self.procs.push(t);
                    self.fds.push(self.fds[p].clone());
                } else {
                    let q = (p + 2) % 3;
                    self.fds[q] = self.fds[p].clone();
                    self.procs[q] = t;
                }
            }
            45 => {
                call!(self.procs[p].exec()).ok();
            }
            46 => {
                call!(self.procs[p].unshare_files()).ok();
            }
            47 => {
                let path = path(i);
                let m = mode(i);
                call!(self.procs[p].chmod(&path, m)).ok();
            }
            48 => {
                let path = path(i);
                let (u, g) = (
                    i.pick(&[0u32, 1000, u32::MAX]),
                    i.pick(&[0u32, 1000, u32::MAX]),
                );
                if i.u8().is_multiple_of(2) {
                    call!(self.procs[p].chown(&path, u, g)).ok();
                } else {
                    call!(self.procs[p].lchown(&path, u, g)).ok();
                }
            }
            49 => {
                // Switch between root and an unprivileged user: permission
                // checks, sticky directories, set-ID clearing.
                let c = match i.u8() % 3 {
                    0 => uvfs::cred::Cred::root(),
                    1 => uvfs::cred::Cred::user(1000, 1000, vec![]),
                    _ => uvfs::cred::Cred::user(1001, 1000, vec![0]),
                };
                self.procs[p].set_cred(c);
                self.note(op, &Ok::<(), Errno>(()))?;
            }
            50 => {
                let m = i.pick(&[0u32, 0o022, 0o777, 0o7777, u32::MAX]);
                self.procs[p].umask(m);
                self.note(op, &Ok::<(), Errno>(()))?;
            }
            _ => {
                let (a, b) = (path(i), path(i));
                let fl = i.pick(&[0u32, 1, 2, 3, 4]);
                call!(self.procs[p].renameat2(AT_FDCWD, &a, AT_FDCWD, &b, fl)).ok();
            }
        }
        let p = p.min(self.procs.len() - 1);
        self.check_table(p)
    }

    /// For the driver's self-test: a process the end-of-run checks do not
    /// know about, whose cwd is `/m`, so they must report a dentry
    /// reference unaccounted for while the caller holds it. (Handed back
    /// rather than leaked, so LeakSanitizer has nothing to say.)
    pub fn leak_a_process(&mut self) -> Process {
        let mut q = self.procs[0].fork().unwrap();
        q.chdir("/m").unwrap();
        q
    }

    /// Runs the whole input, then ends every process and checks the caches
    /// against tmpfs.
    pub fn run(mut self, data: &[u8]) -> Result<Trace, String> {
        let mut i = Input { data, pos: 0 };
        let mut n = 0;
        while !i.done() && n < 400 {
            n += 1;
            let at = i.pos;
            self.step(&mut i)
                .map_err(|e| format!("step {n} (input byte {at}): {e}"))?;
        }
        self.procs.clear();
        // First as left (rmdir pruned what removed directories had cached),
        // then with the caches dropped.
        self.vfs
            .check_consistency()
            .map_err(|e| format!("check_consistency: {e}"))?;
        self.vfs.drop_caches();
        self.vfs
            .check_consistency()
            .map_err(|e| format!("check_consistency after drop_caches: {e}"))?;
        self.fs.fsck(true).map_err(|e| format!("fsck: {e}"))?;
        self.fs2.fsck(true).map_err(|e| format!("fsck /m: {e}"))?;
        let st = self.fs.statfs();
        if st.files < st.ffree {
            return Err(format!("statfs: {} files, {} free", st.files, st.ffree));
        }
        Ok(self.trace)
    }
}
