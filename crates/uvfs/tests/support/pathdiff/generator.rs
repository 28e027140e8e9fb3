//! The generator of op sequences.

use super::*;

pub const NAMES: &[&str] = &[
    "a", "a", "b", "b", "c", "d", "d", "d/e", "d/e", "d/e/f", "d/a", "l", "l", "m", "d/l", "t",
    "z0", "z1",
];

pub const TARGETS: &[&str] = &[
    "a", "b", "d", "d/e", "l", "m", ".", "..", "../a", "missing", "d/", "a/", "e", "f",
];

/// The generator. It is steered by the host's results (which fds are
/// open), so it runs interleaved with the host side ([`host_generate`]); the
/// uvfs side replays the recorded ops. The host is deterministic (see
/// `host_runs_are_deterministic`), so a seed always gives the same ops.
pub struct Gen {
    pub rng: Rng,
    pub top: Vec<u8>,
    /// Per entry of the fd list (index 0: the sandbox directory): open on
    /// the host, and probably a directory.
    pub live: Vec<bool>,
    pub dir: Vec<bool>,
    /// Per entry: opened with O_PATH; a getdents64 on it returned 0 (the
    /// host's position is then the end cookie).
    pub opath: Vec<bool>,
    pub at_end: Vec<bool>,
    /// An allocating fallocate succeeded on the host.
    pub fallocated: bool,
    /// Per entry: a directory fd in the middle of a listing (see the
    /// getdents64 exclusion in the module doc).
    pub mid: Vec<bool>,
    /// The last `fstatat(.., AT_SYMLINK_NOFOLLOW)` found a directory.
    pub probe_dir: bool,
    pub ops: Vec<Op>,
    /// Also generate the cases of known mismatches (see `KNOWN` and
    /// the diff-findings notes); off by default.
    pub known: bool,
}

impl Gen {
    pub fn abs(&self, rel: &[u8]) -> Vec<u8> {
        join(&self.top, rel)
    }

    pub fn special_path(&mut self) -> Vec<u8> {
        let long255 = vec![b'x'; 255];
        let long256 = vec![b'y'; 256];
        match self.rng.below(22) {
            0 => Vec::new(),
            1 => b".".to_vec(),
            2 => b"..".to_vec(),
            3 => b"./a".to_vec(),
            4 => b"d/..".to_vec(),
            5 => b"d/../a".to_vec(),
            6 => b"a/b".to_vec(),
            7 => b"l/".to_vec(),
            8 => b"missing/a".to_vec(),
            9 => long255,
            // Finding 12: relative only with known mismatches on.
            10 if !self.avoid("12") => long256,
            10 => self.abs(&long256),
            11 => {
                let mut p = b"d/".to_vec();
                p.extend_from_slice(&long255);
                p
            }
            12 | 13 => {
                // Exactly 4095 bytes (valid) or 4096 (ENAMETOOLONG).
                let want = if self.rng.chance(50) { 4095 } else { 4096 };
                let mut p = Vec::new();
                while p.len() + 2 < want {
                    p.extend_from_slice(b"./");
                }
                while p.len() < want - 1 {
                    p.push(b'/');
                }
                p.push(b'a');
                p
            }
            14 => b"//a".to_vec(),
            15 => b"d//e".to_vec(),
            // Findings 12 and 24: the sandbox directory itself (which could
            // be removed) only with known mismatches on.
            16 if !self.avoid("24") => self.top.clone(),
            16 => b".".to_vec(),
            17 => b"d/e/../../b".to_vec(),
            18 => b"../".to_vec(),
            19 => b"a/..".to_vec(),
            20 => b"d/./e/".to_vec(),
            _ => {
                let mut p = self.top.clone();
                p.extend_from_slice(b"/d/../l");
                p
            }
        }
    }

    pub fn path(&mut self) -> Vec<u8> {
        if self.rng.chance(12) {
            return self.special_path();
        }
        let mut p = self.rng.pick(NAMES).as_bytes().to_vec();
        match self.rng.below(40) {
            0..=2 => p.push(b'/'),
            3 => p.extend_from_slice(b"/."),
            4 => p.extend_from_slice(b"/.."),
            _ => {}
        }
        if self.rng.chance(10) {
            p = self.abs(&p);
        }
        p
    }

    pub fn target(&mut self) -> Vec<u8> {
        match self.rng.below(20) {
            0 => self.abs(b"a"),
            1 => self.abs(b"d"),
            2 => b"".to_vec(),
            3 => vec![b't'; 4095],
            4 => vec![b't'; 4096],
            5 => self.abs(b"l"),
            _ => self.rng.pick(TARGETS).as_bytes().to_vec(),
        }
    }

    /// Mostly one of the last few open fds (of directories if `dir`).
    pub fn pick_open(&mut self, dir: bool) -> Option<Fd> {
        let open: Vec<usize> = (0..self.live.len())
            .filter(|&i| self.live[i] && (!dir || self.dir[i]))
            .collect();
        if open.is_empty() {
            return None;
        }
        let k = open.len();
        let back = self.rng.below(k.min(6));
        Some(Fd::Idx(open[k - 1 - back]))
    }

    pub fn fd(&mut self) -> Fd {
        match self.rng.below(100) {
            0..=3 => Fd::Bad(
                self.rng
                    .pick(&[-1, -100, -2, 1_000_000, i32::MAX, i32::MIN]),
            ),
            4..=7 => Fd::Idx(0),
            // Closed or failed ones (EBADF).
            8..=11 => Fd::Idx(self.rng.below(self.live.len().max(1))),
            _ => self.pick_open(false).unwrap_or(Fd::Idx(0)),
        }
    }

    /// A path for rename: finding 26 (ENAMETOOLONG of one name vs the
    /// trailing-slash ENOTDIR of the other) keeps over-long names out unless
    /// known mismatches are on.
    pub fn rename_path(&mut self) -> Vec<u8> {
        let p = self.path();
        let long = p.split(|&c| c == b'/').any(|c| c.len() > 255);
        if long && self.avoid("26") {
            b"b".to_vec()
        } else {
            p
        }
    }

    /// Findings 12 and 24: a rename may replace an empty directory that is
    /// the cwd or open; an `fstatat` of the target first (an op like any
    /// other, compared too) tells the generator whether to leave it after.
    pub fn probe_target(&mut self, dir: Fd, p: &[u8]) {
        if self.avoid("24") {
            self.ops
                .push(Op::Fstatat(dir, p.to_vec(), AT_SYMLINK_NOFOLLOW));
        }
    }

    /// Back to the sandbox directory and every fd but #0 closed.
    pub fn leave_removed_dirs(&mut self) {
        self.ops.push(Op::Chdir(self.top.clone()));
        for i in 1..self.live.len() {
            if self.live[i] {
                self.ops.push(Op::Close(Fd::Idx(i)));
            }
        }
    }

    /// Whether to steer clear of the case of a finding: unless known
    /// mismatches are on, every finding not yet in [`FIXED`].
    pub fn avoid(&self, finding: &str) -> bool {
        !self.known && !FIXED.contains(&format!("finding {finding}:").as_str())
    }

    /// Whether the host's listing on `fd` reached the end (and the case of
    /// finding 14 is to be avoided).
    pub fn ended(&self, fd: Fd) -> bool {
        matches!(fd, Fd::Idx(i) if self.at_end.get(i) == Some(&true)) && self.avoid("14")
    }

    pub fn is_dir(&self, fd: Fd) -> bool {
        matches!(fd, Fd::Idx(i) if self.dir.get(i) == Some(&true))
    }

    /// An fd, mostly of a directory.
    pub fn dir_fd_mostly(&mut self) -> Fd {
        match self.rng.below(10) {
            0..=7 => self.pick_open(true).unwrap_or(Fd::Idx(0)),
            _ => self.fd(),
        }
    }

    pub fn dirfd(&mut self) -> Fd {
        match self.rng.below(10) {
            0..=2 => Fd::Cwd,
            3..=4 => Fd::Idx(0),
            5..=7 => self.pick_open(true).unwrap_or(Fd::Cwd),
            _ => self.fd(),
        }
    }

    /// What the host's result tells about the fd list.
    pub fn feedback(&mut self, op: &Op, res: &Res) {
        if opens(op) {
            let dir = match op {
                Op::Open(p, fl, _) | Op::Openat(_, p, fl, _) => {
                    fl & O_DIRECTORY != 0
                        || [&b"d"[..], b"d/e", b".", b"..", b"d/", b"d/e/", &self.top]
                            .contains(&p.as_slice())
                }
                _ => false,
            };
            let opath = match op {
                Op::Open(_, fl, _) | Op::Openat(_, _, fl, _) => fl & O_PATH != 0,
                _ => false,
            };
            self.live.push(res.is_ok());
            self.dir.push(dir);
            self.opath.push(opath);
            self.at_end.push(false);
            self.mid.push(false);
        }
        match (op, res) {
            (Op::Getdents(Fd::Idx(i), _), Ok(Val::Dents(_, d))) if *i < self.mid.len() => {
                self.mid[*i] = d.last().is_some_and(|e| e.off != DIR_OFFSET_EOD);
                self.dir[*i] = true; // Surely a directory.
            }
            // A getdents64 whose buffer could not hold the next entry
            // (EINVAL) leaves the position on that entry (finding 17).
            (Op::Getdents(Fd::Idx(i), _), Err(e)) if *e == libc::EINVAL && *i < self.mid.len() => {
                self.mid[*i] = true;
            }
            // Any seek that lands past the dots (SEEK_CUR, SEEK_END too).
            (Op::Lseek(Fd::Idx(i), _, _), Ok(Val::Num(n))) if *i < self.mid.len() => {
                self.mid[*i] = *n > 2;
            }
            (Op::Lseek(Fd::Idx(i), off, SEEK_SET), Ok(_)) if *i < self.mid.len() => {
                self.mid[*i] = *off > 2;
            }
            _ => {}
        }
        match (op, res) {
            (Op::Rmdir(_), Ok(_)) | (Op::Unlinkat(..), Ok(_)) if self.avoid("24") => {
                // Findings 12 and 24: leave any removed directory.
                self.leave_removed_dirs();
            }
            (Op::Fstatat(_, _, AT_SYMLINK_NOFOLLOW), r) => {
                self.probe_dir = matches!(r, Ok(Val::Stat(s)) if s.mode & S_IFMT == S_IFDIR);
            }
            (Op::Rename(..) | Op::Renameat(..) | Op::Renameat2(..), Ok(_))
                if self.probe_dir && self.avoid("24") =>
            {
                self.leave_removed_dirs();
            }
            (Op::Fallocate(_, 0 | 1, ..), Ok(_)) => self.fallocated = true,
            (Op::Getdents(Fd::Idx(i), _), Ok(Val::Dents(0, _))) if *i < self.at_end.len() => {
                self.at_end[*i] = true;
            }
            (Op::Lseek(Fd::Idx(i), _, SEEK_SET), Ok(_)) if *i < self.at_end.len() => {
                self.at_end[*i] = false;
            }
            _ => {}
        }
        if let Op::Close(Fd::Idx(i)) = op
            && *i < self.live.len()
        {
            self.live[*i] = false;
        }
    }

    pub fn mode(&mut self) -> u32 {
        self.rng.pick(&[
            0o644, 0o644, 0o755, 0o600, 0o777, 0o4755, 0o2755, 0o1777, 0o7777, 0o170644, 0, 0o444,
        ])
    }

    pub fn open_flags(&mut self) -> i32 {
        let mut fl = self.rng.pick(&[O_RDONLY, O_WRONLY, O_RDWR, O_RDWR, 3]);
        if !self.avoid("18") && self.rng.chance(2) {
            fl |= O_DIRECT; // Finding 18.
        }
        for (bit, pct) in [
            (O_CREAT, 45),
            (O_EXCL, 12),
            (O_TRUNC, 12),
            (O_APPEND, 15),
            (O_DIRECTORY, 8),
            (O_NOFOLLOW, 8),
            (O_PATH, 6),
            (O_CLOEXEC, 20),
            (O_NONBLOCK, 4),
            (O_NOATIME, 3),
            (O_SYNC, 2),
        ] {
            if self.rng.chance(pct) {
                fl |= bit;
            }
        }
        if fl & (O_CREAT | O_NOFOLLOW | O_EXCL) == O_CREAT | O_NOFOLLOW && self.avoid("27") {
            fl &= !O_NOFOLLOW; // Finding 27.
        }
        if self.rng.chance(4) {
            fl = (fl & !(O_CREAT | O_DIRECTORY)) | O_TMPFILE;
            if self.avoid("22") {
                fl &= !O_NOFOLLOW; // Finding 22.
            }
        }
        fl
    }

    pub fn len(&mut self) -> usize {
        self.rng.pick(&[0, 1, 10, 100, 4096, 5000, 65536])
    }

    pub fn data(&mut self) -> Data {
        Data {
            len: self.rng.pick(&[0, 1, 7, 100, 4095, 4096, 4097, 9000]),
            seed: self.rng.below(256) as u8,
        }
    }

    pub fn offset(&mut self) -> i64 {
        self.rng.pick(&[
            0,
            0,
            1,
            100,
            4095,
            4096,
            4097,
            8191,
            12288,
            65536,
            1 << 20,
            -1,
            i64::MAX,
            i64::MAX - 4096,
            1 << 40,
        ])
    }

    pub fn size(&mut self) -> i64 {
        let n = self.rng.pick(&[
            0,
            1,
            100,
            4095,
            4096,
            10_000,
            1 << 20,
            1 << 40,
            -1,
            i64::MAX,
        ]);
        if n == i64::MAX && self.avoid("28") {
            // Finding 28: a size of i64::MAX lets writes reach the last page.
            return 1 << 40;
        }
        n
    }

    /// Finding 16: no O_CREAT | O_EXCL on a path ending in `.` or `..`;
    /// finding 19: no invalid flag combinations with a too long path.
    pub fn no_dot_excl(&self, p: &[u8], fl: i32) -> i32 {
        let fl = if p.len() >= 4096 && self.avoid("19") {
            fl & !(O_DIRECTORY | O_TMPFILE)
        } else {
            fl
        };
        let trimmed = p.strip_suffix(b"/").unwrap_or(p);
        let last = trimmed.rsplit(|&c| c == b'/').next().unwrap_or(b"");
        if self.avoid("16") && (last == b"." || last == b"..") {
            fl & !O_EXCL
        } else {
            fl
        }
    }

    /// Finding 9: negative offsets and lengths only with known mismatches on.
    pub fn known_nonneg(&self, n: i64) -> i64 {
        if n < 0 && self.avoid("9") { 0 } else { n }
    }

    pub fn times(&mut self) -> Option<[Ts; 2]> {
        self.times_any()
    }

    pub fn times_any(&mut self) -> Option<[Ts; 2]> {
        if self.rng.chance(20) {
            return None;
        }
        let mut one = || match self.rng.below(8) {
            0 => Ts {
                sec: 0,
                nsec: UTIME_NOW,
            },
            1 => Ts {
                sec: 5,
                nsec: UTIME_OMIT,
            },
            2 => Ts { sec: 7, nsec: -1 },
            3 => Ts {
                sec: 7,
                nsec: 1_000_000_000,
            },
            4 => Ts { sec: -5, nsec: 3 },
            _ => Ts {
                sec: 1_000_000_000 + self.rng.below(1000) as i64,
                nsec: self.rng.below(1_000_000_000) as i64,
            },
        };
        Some([one(), one()])
    }

    pub fn ids(&mut self) -> (u32, u32) {
        let ids = [0, 1000, 65534, u32::MAX];
        (self.rng.pick(&ids), self.rng.pick(&ids))
    }

    pub fn push(&mut self, op: Op) {
        self.ops.push(op);
    }

    /// A chain `z0 -> z1 -> ... -> z<n-1> -> a` of `n` symlinks (41: ELOOP
    /// from z0, 40 follows from z1).
    pub fn chain(&mut self, n: usize) {
        // Finding 32: unless known mismatches are on, the chain ends in a
        // name no generated call makes a directory, so no walk can go on
        // past 40 links to a trailing symlink.
        let last: &[u8] = if self.avoid("32") { b"missing" } else { b"a" };
        for i in 0..n {
            let target = if i + 1 == n {
                last.to_vec()
            } else {
                format!("z{}", i + 1).into_bytes()
            };
            self.push(Op::Symlink(target, format!("z{i}").into_bytes()));
        }
    }

    pub fn op(&mut self) {
        let op = match self.rng.below(200) {
            0..=13 => {
                let (p, fl, m) = (self.path(), self.open_flags(), self.mode());
                Op::Open(p.clone(), self.no_dot_excl(&p, fl), m)
            }
            14..=27 => {
                let (d, p, fl, m) = (self.dirfd(), self.path(), self.open_flags(), self.mode());
                Op::Openat(d, p.clone(), self.no_dot_excl(&p, fl), m)
            }
            28..=30 => {
                let (p, m) = (self.path(), self.mode());
                Op::Creat(p, m)
            }
            31..=38 => Op::Close(self.fd()),
            39..=44 => {
                let (d, n) = (self.fd(), self.len());
                Op::Read(d, n)
            }
            45..=52 => {
                let (d, x) = (self.fd(), self.data());
                Op::Write(d, x)
            }
            53..=57 => {
                let (d, n, o) = (self.fd(), self.len(), self.offset());
                Op::Pread(d, n, self.known_nonneg(o))
            }
            58..=63 => {
                let (d, x, mut o) = (self.fd(), self.data(), self.offset());
                if o == i64::MAX - 4096 && self.avoid("28") {
                    o = 1 << 40; // Finding 28: no data in the last page.
                }
                Op::Pwrite(d, x, self.known_nonneg(o))
            }
            64..=65 => {
                let d = self.fd();
                let k = self.rng.below(4);
                let mut v: Vec<usize> = (0..k).map(|_| self.len()).collect();
                if v.iter().sum::<usize>() == 0 && self.avoid("15") {
                    v = vec![1]; // Finding 15.
                }
                Op::Readv(d, v)
            }
            66..=67 => {
                let d = self.fd();
                let k = self.rng.below(4);
                let mut v: Vec<Data> = (0..k).map(|_| self.data()).collect();
                if v.iter().map(|x| x.len).sum::<usize>() == 0 && self.avoid("15") {
                    v = vec![Data { len: 1, seed: 0 }]; // Finding 15.
                }
                Op::Writev(d, v)
            }
            68..=74 => {
                let d = self.fd();
                let mut o = self.offset();
                if o > 1 << 20 && (self.avoid("5b") || self.avoid("28")) {
                    // Findings 5b (directory positions past the end cookie)
                    // and 28 (no writes into the last page).
                    o = 1 << 20;
                }
                let mut w = self.rng.pick(&[
                    SEEK_SET, SEEK_CUR, SEEK_END, SEEK_DATA, SEEK_DATA, SEEK_HOLE, SEEK_HOLE, 5, -1,
                ]);
                if self.ended(d) || (self.is_dir(d) && self.avoid("5b")) {
                    w = SEEK_SET; // Findings 5b and 14.
                }
                Op::Lseek(d, o, w)
            }
            75..=78 => Op::Stat(self.path()),
            79..=82 => Op::Lstat(self.path()),
            83..=86 => Op::Fstat(self.fd()),
            87..=89 => {
                let (d, p) = (self.dirfd(), self.path());
                let fl = self.rng.pick(&[
                    0,
                    0,
                    AT_SYMLINK_NOFOLLOW,
                    AT_EMPTY_PATH,
                    AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW,
                    AT_NO_AUTOMOUNT,
                    1,
                    0x8000,
                ]);
                let p = if fl & AT_EMPTY_PATH != 0 && self.rng.chance(60) {
                    Vec::new()
                } else {
                    p
                };
                Op::Fstatat(d, p, fl)
            }
            90..=92 => {
                let (d, p) = (self.dirfd(), self.path());
                let fl = self.rng.pick(&[
                    0,
                    0,
                    AT_SYMLINK_NOFOLLOW,
                    AT_EMPTY_PATH,
                    0x2000,
                    0x4000,
                    0x6000,
                    1,
                ]);
                let mut mask = self.rng.pick(&[
                    STATX_BASIC_STATS,
                    STATX_BASIC_STATS | STATX_BTIME,
                    0,
                    1,
                    0x8000_0000,
                    u32::MAX,
                ]);
                if mask <= 1 && self.avoid("3") {
                    // Finding 3: masks without the times only with known
                    // mismatches on.
                    mask = STATX_BASIC_STATS;
                }
                let p = if fl & AT_EMPTY_PATH != 0 && self.rng.chance(60) {
                    Vec::new()
                } else {
                    p
                };
                Op::Statx(d, p, fl, mask)
            }
            93..=95 => {
                let (p, mut l) = (self.path(), self.size());
                if self.avoid("25") && l >= 0 {
                    // Finding 25: a length that is almost surely not the
                    // current size.
                    l = 1 + self.rng.below(1 << 20) as i64;
                }
                Op::Truncate(p, l)
            }
            96..=99 => {
                let (d, l) = (self.fd(), self.size());
                Op::Ftruncate(d, self.known_nonneg(l))
            }
            100..=104 => {
                let d = self.fd();
                let mut mode = self.rng.pick(&[0, 0, 1, 3, 3, 2, 0x10, 0x8, 0x20, 0x100]);
                if mode <= 1 && self.fallocated && self.avoid("20") {
                    mode = 3; // Finding 20: one allocating fallocate per sequence.
                }
                let off = self
                    .rng
                    .pick(&[0, 1, 4095, 4096, 10_000, 1 << 20, -1, 1 << 40]);
                let len = self
                    .rng
                    .pick(&[1, 100, 4096, 8192, 20_000, 1 << 21, 0, -1, i64::MAX]);
                Op::Fallocate(d, mode, off, len)
            }
            105..=110 => {
                let (p, m) = (
                    self.path(),
                    self.rng
                        .pick(&[0o755, 0o755, 0o700, 0o1777, 0o2755, 0o7777, 0]),
                );
                Op::Mkdir(p, m)
            }
            111..=113 => {
                let (d, p) = (self.dirfd(), self.path());
                Op::Mkdirat(d, p, 0o755)
            }
            114..=117 => Op::Rmdir(self.path()),
            118..=122 => Op::Unlink(self.path()),
            123..=125 => {
                let (d, p) = (self.dirfd(), self.path());
                let fl = self.rng.pick(&[0, 0, AT_REMOVEDIR, AT_REMOVEDIR, 1, 0x800]);
                Op::Unlinkat(d, p, fl)
            }
            126..=130 => {
                let (a, b) = (self.rename_path(), self.rename_path());
                self.probe_target(Fd::Cwd, &b);
                Op::Rename(a, b)
            }
            131..=132 => {
                let (d, a, e, b) = (
                    self.dirfd(),
                    self.rename_path(),
                    self.dirfd(),
                    self.rename_path(),
                );
                self.probe_target(e, &b);
                Op::Renameat(d, a, e, b)
            }
            133..=137 => {
                let (d, mut a, e, mut b) = (
                    self.dirfd(),
                    self.rename_path(),
                    self.dirfd(),
                    self.rename_path(),
                );
                self.probe_target(e, &b);
                let fl = self.rng.pick(&[0, 1, 1, 2, 2, 3, 8]);
                if (fl == 1 || fl == 2) && (self.avoid("7") || self.avoid("21")) {
                    // Findings 7 and 21.
                    while a.len() > 1 && a.last() == Some(&b'/') {
                        a.pop();
                    }
                    while fl == 2 && b.len() > 1 && b.last() == Some(&b'/') {
                        b.pop();
                    }
                }
                Op::Renameat2(d, a, e, b, fl)
            }
            138..=141 => {
                let (a, b) = (self.path(), self.path());
                Op::Link(a, b)
            }
            142..=143 => {
                let (d, a, e, b) = (self.dirfd(), self.path(), self.dirfd(), self.path());
                let fl = self.rng.pick(&[0, 0, AT_SYMLINK_FOLLOW, AT_EMPTY_PATH, 1]);
                let a = if fl == AT_EMPTY_PATH && self.rng.chance(70) {
                    Vec::new()
                } else {
                    a
                };
                Op::Linkat(d, a, e, b, fl)
            }
            144..=148 => {
                let (t, p) = (self.target(), self.path());
                Op::Symlink(t, p)
            }
            149..=150 => {
                let (t, d, p) = (self.target(), self.dirfd(), self.path());
                Op::Symlinkat(t, d, p)
            }
            151..=153 => {
                let (p, n) = (self.path(), self.rng.pick(&[0, 1, 3, 4096]));
                Op::Readlink(p, n)
            }
            154 => {
                let (d, p, n) = (self.dirfd(), self.path(), self.rng.pick(&[0, 2, 4096]));
                let p = if self.rng.chance(20) { Vec::new() } else { p };
                Op::Readlinkat(d, p, n)
            }
            155..=160 => {
                let d = self.dir_fd_mostly();
                let n = if !self.avoid("17") {
                    self.rng.pick(&[0, 10, 24, 32, 64, 100, 4096, 4096])
                } else {
                    // Finding 17: never too small for an entry (280 bytes at most).
                    self.rng.pick(&[300, 300, 1024, 4096])
                };
                if self.ended(d) {
                    // Finding 14: rewind a listing that reached the end.
                    Op::Lseek(d, 0, SEEK_SET)
                } else {
                    Op::Getdents(d, n)
                }
            }
            161..=162 => Op::Chdir(self.path()),
            163 => Op::Fchdir(self.dir_fd_mostly()),
            164 => Op::Getcwd,
            165..=167 => {
                let (p, m) = (self.path(), self.mode());
                Op::Chmod(p, m)
            }
            168 => {
                let (d, m) = (self.fd(), self.mode());
                Op::Fchmod(d, m)
            }
            169..=170 => {
                let (d, p, m) = (self.dirfd(), self.path(), self.mode());
                let fl = self
                    .rng
                    .pick(&[0, 0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Fchmodat(d, p, m, fl)
            }
            171 => {
                let (p, (u, g)) = (self.path(), self.ids());
                Op::Chown(p, u, g)
            }
            172 => {
                let (p, (u, g)) = (self.path(), self.ids());
                Op::Lchown(p, u, g)
            }
            173 => {
                let (d, (u, g)) = (self.fd(), self.ids());
                Op::Fchown(d, u, g)
            }
            174 => {
                let (d, p, (u, g)) = (self.dirfd(), self.path(), self.ids());
                let fl = self.rng.pick(&[0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Fchownat(d, p, u, g, fl)
            }
            175 => Op::Umask(self.rng.pick(&[0o022, 0o022, 0o077, 0, 0o777, 0o7777])),
            176..=178 => {
                let (p, m) = (self.path(), self.rng.pick(&[0, 1, 2, 4, 7, 8]));
                Op::Access(p, m)
            }
            179..=180 => {
                let (d, p, m) = (
                    self.dirfd(),
                    self.path(),
                    self.rng.pick(&[0, 1, 2, 4, 7, 8]),
                );
                let fl = self
                    .rng
                    .pick(&[0, AT_EACCESS, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Faccessat(d, p, m, fl)
            }
            181..=184 => {
                let (d, p, t) = (self.dirfd(), self.path(), self.times());
                let fl = self
                    .rng
                    .pick(&[0, 0, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH, 1]);
                Op::Utimensat(d, p, t, fl)
            }
            185..=186 => {
                let (mut d, t) = (self.fd(), self.times());
                if let Fd::Idx(i) = d
                    && self.opath.get(i) == Some(&true)
                    && self.avoid("11")
                {
                    d = Fd::Idx(0); // Finding 11.
                }
                if let (Fd::Bad(n), Some([a, m])) = (d, t)
                    && n < 0
                    && a.nsec == UTIME_OMIT
                    && m.nsec == UTIME_OMIT
                    && self.avoid("31")
                {
                    d = Fd::Bad(1_000_000); // Finding 31.
                }
                Op::Futimens(d, t)
            }
            187 => Op::Fsync(self.fd()),
            188 => Op::Fdatasync(self.fd()),
            189 if self.rng.chance(25) => {
                // Finding 32: with known mismatches off, chains stay short
                // enough that no walk (other links before them included)
                // exceeds 40 links through them.
                let n = match (!self.avoid("32"), self.rng.chance(50)) {
                    (true, true) => 41,
                    (true, false) => 40,
                    (false, true) => 37,
                    (false, false) => 36,
                };
                self.chain(n);
                return;
            }
            _ => {
                // A plain, likely-successful file or directory setup.
                let p = self.rng.pick(&["a", "b", "c", "d/a", "d/e/f", "t"]);
                if self.rng.chance(30) {
                    Op::Mkdir(p.as_bytes().to_vec(), 0o755)
                } else {
                    Op::Open(p.as_bytes().to_vec(), O_RDWR | O_CREAT, 0o644)
                }
            }
        };
        if matches!(
            op,
            Op::Unlink(..)
                | Op::Unlinkat(..)
                | Op::Rmdir(..)
                | Op::Rename(..)
                | Op::Renameat(..)
                | Op::Renameat2(..)
        ) {
            // The documented tmpfs divergence: rewind listings in progress.
            for i in 0..self.mid.len() {
                if self.mid[i] && self.live[i] {
                    self.push(Op::Lseek(Fd::Idx(i), 0, SEEK_SET));
                }
            }
        }
        self.push(op);
    }
}

/// Generates up to `n` ops with the choices of `rng` (a seed's, or a
/// fuzzer's bytes: generation then stops when they run out), running each
/// on the host as it goes (the generator steers by the results); returns
/// the ops and the host log.
pub fn host_generate(
    b: &mut dyn Backend,
    rng: Rng,
    top: &[u8],
    n: usize,
    root: &[u8],
) -> (Vec<Op>, Log) {
    let mut g = Gen {
        rng,
        top: top.to_vec(),
        live: Vec::new(),
        dir: Vec::new(),
        opath: Vec::new(),
        at_end: Vec::new(),
        fallocated: false,
        mid: Vec::new(),
        probe_dir: false,
        ops: Vec::with_capacity(n + 64),
        known: known_enabled(),
    };
    let mut obs = Vec::with_capacity(n + 256);
    let mut step = |g: &mut Gen, obs: &mut Vec<Obs>| {
        while obs.len() < g.ops.len() {
            let op = g.ops[obs.len()].clone();
            let res = exec(b, &op);
            g.feedback(&op, &res);
            obs.push(Obs {
                what: String::new(),
                res,
            });
        }
    };
    g.push(Op::Open(top.to_vec(), O_RDONLY | O_DIRECTORY, 0));
    step(&mut g, &mut obs);
    // A likely start: some directories, files with data, a symlink.
    for (p, dir) in [("d", true), ("d/e", true), ("a", false), ("d/a", false)] {
        if g.rng.chance(80) {
            if dir {
                g.push(Op::Mkdir(p.as_bytes().to_vec(), 0o755));
            } else {
                g.push(Op::Open(p.as_bytes().to_vec(), O_RDWR | O_CREAT, 0o644));
                let x = g.data();
                g.push(Op::Write(Fd::Idx(g.live.len()), x));
            }
            step(&mut g, &mut obs);
        }
    }
    if g.rng.chance(50) {
        g.push(Op::Symlink(b"a".to_vec(), b"l".to_vec()));
    }
    while g.ops.len() < n && !g.rng.exhausted() {
        g.op();
        step(&mut g, &mut obs);
    }
    // Ops pushed but not run yet (the symlink above, when a fuzzer's bytes
    // ran out before the loop): run them, so the log matches the ops.
    step(&mut g, &mut obs);
    dump(b, root, &mut obs);
    let log = Log {
        obs,
        dump_root: root.to_vec(),
    };
    (g.ops, log)
}
