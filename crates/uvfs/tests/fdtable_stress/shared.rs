//! Threads on the shared table.

use super::*;

pub(super) struct Worker<'w> {
    pub(super) w: &'w World,
    pub(super) t: usize,
    pub(super) p: Process,
    pub(super) rng: Rng,
    pub(super) owned: BTreeMap<i32, Own>,
    pub(super) base: i32,
}

impl Worker<'_> {
    pub(super) fn fail(&self, msg: String) {
        self.w.fail(format!("[thread {}] {msg}", self.t));
    }

    pub(super) fn low_owned(&self) -> usize {
        self.owned.range(..LOW_LIMIT as i32).count()
    }

    pub(super) fn random_owned(&mut self) -> Option<(i32, Own)> {
        if self.owned.is_empty() {
            return None;
        }
        let i = self.rng.below(self.owned.len());
        self.owned.iter().nth(i).map(|(&fd, &o)| (fd, o))
    }

    /// The id of the file at `fd` through one of the lookup paths, or
    /// `None` for EBADF.
    pub(super) fn lookup(&mut self, fd: i32) -> Option<u64> {
        let w = self.w;
        let y = self.rng.below(512) == 0;
        match self.rng.below(3) {
            0 => match self.p.fget(fd) {
                Ok(f) => Some(inspect(w, &f, fd, Table::Shared, y)),
                Err(e) => {
                    if e != Errno::EBADF {
                        self.fail(format!("fget({fd}) = {e:?}"));
                    }
                    None
                }
            },
            1 => {
                let f: FileRef = self.p.fget_raw(fd).ok()?;
                Some(inspect(w, &f, fd, Table::Shared, y))
            }
            _ => self
                .p
                .with_file(fd, |f| inspect(w, f, fd, Table::Shared, y))
                .ok(),
        }
    }

    /// Checks that an owned fd still refers to its file.
    pub(super) fn verify_owned(&mut self, fd: i32, what: &str) {
        let want = self.owned[&fd];
        match self.lookup(fd) {
            Some(id) if id == want.id => {}
            got => self.fail(format!(
                "{what}: own fd {fd} should hold file {}, lookup found {got:?}",
                want.id
            )),
        }
    }

    pub(super) fn check_getfd(&mut self, fd: i32) {
        let want = i32::from(self.owned[&fd].cloexec);
        let got = self.p.fcntl(fd, F_GETFD, 0);
        if got != Ok(want) {
            self.fail(format!("F_GETFD({fd}) = {got:?}, want Ok({want})"));
        }
    }

    pub(super) fn op(&mut self) {
        let roll = self.rng.below(100);
        match roll {
            0..=13 => self.open(),
            14..=16 => self.failed_open(),
            17..=29 => self.close(),
            30..=35 => self.dup(),
            36..=45 => self.dup2(),
            46..=50 => self.dupfd(),
            51..=53 => self.close_range(),
            54..=57 => self.setfd(),
            58..=59 => self.getfl(),
            60..=61 => self.verify_all(),
            62 => {
                if let Err(e) = self.p.fd_table().check_invariants() {
                    self.fail(format!("check_invariants: {e}"));
                }
            }
            _ => self.foreign_lookup(),
        }
        if uvfs::task_work::pending() {
            self.fail("deferred releases left queued after a call".into());
        }
    }

    pub(super) fn open(&mut self) {
        if self.low_owned() >= LOW_CAP {
            return self.close();
        }
        let flags = access_flags(&mut self.rng);
        let probe = self.w.new_probe(flags);
        let ops = probe.clone();
        match self.p.open_with(flags, |o| {
            o.set_ops(ops);
            Ok(())
        }) {
            Ok(fd) => {
                probe.opened.store(true, SeqCst);
                probe.installs.fetch_add(1, SeqCst);
                mark_at(&probe, fd);
                self.w.stats.opens.fetch_add(1, SeqCst);
                if fd < 0 || fd as usize >= LOW_LIMIT {
                    self.fail(format!("open returned fd {fd}, not the lowest free one"));
                    return;
                }
                self.w.claim(fd, probe.id, "open");
                let cloexec = flags & O_CLOEXEC != 0;
                if self
                    .owned
                    .insert(
                        fd,
                        Own {
                            id: probe.id,
                            cloexec,
                        },
                    )
                    .is_some()
                {
                    self.fail(format!("open returned fd {fd}, which this thread holds"));
                }
                self.verify_owned(fd, "open");
                self.check_getfd(fd);
            }
            Err(e) => self.fail(format!("open: {e:?}")),
        }
    }

    pub(super) fn failed_open(&mut self) {
        let probe = self.w.new_probe(O_RDWR);
        let ops = probe.clone();
        let r = self.p.open_with(O_RDWR, |o| {
            o.set_ops(ops);
            Err(Errno::ENOENT)
        });
        if r != Err(Errno::ENOENT) {
            self.fail(format!("failing open returned {r:?}"));
        }
    }

    pub(super) fn close(&mut self) {
        let Some((fd, _)) = self.random_owned() else {
            return;
        };
        self.verify_owned(fd, "close");
        self.w.unclaim(fd);
        self.owned.remove(&fd);
        if let Err(e) = self.p.close(fd) {
            self.fail(format!("close of own fd {fd}: {e:?}"));
        }
        self.w.stats.closes.fetch_add(1, SeqCst);
        // Nobody else may close or reuse a high fd of ours.
        if fd as usize >= LOW_LIMIT
            && let Some(id) = self.lookup(fd)
        {
            self.fail(format!("own fd {fd} has file {id} right after close"));
        }
    }

    pub(super) fn dup(&mut self) {
        if self.low_owned() >= LOW_CAP {
            return self.close();
        }
        let Some((old, own)) = self.random_owned() else {
            return;
        };
        match self.p.dup(old) {
            Ok(fd) if (0..LOW_LIMIT as i32).contains(&fd) => {
                let id = self.installed(fd, "dup");
                if id != own.id {
                    self.fail(format!(
                        "dup({old}) = {fd} holds file {id}, want {}",
                        own.id
                    ));
                }
                self.w.claim(fd, id, "dup");
                self.owned.insert(fd, Own { id, cloexec: false });
                self.check_getfd(fd);
            }
            r => self.fail(format!("dup of own fd {old}: {r:?}")),
        }
    }

    /// Counts the install of the file now at own fd `fd`; its id.
    pub(super) fn installed(&mut self, fd: i32, what: &str) -> u64 {
        match self.p.fget(fd) {
            Ok(f) => count_install(self.w, &f, fd, Table::Shared),
            Err(e) => {
                self.fail(format!("{what}: new fd {fd} has no file: {e:?}"));
                0
            }
        }
    }

    pub(super) fn dup2(&mut self) {
        let new = self.base + self.rng.below(RANGE) as i32;
        let own_old = self.rng.chance(70);
        let old = match self.random_owned() {
            Some((fd, _)) if own_old => fd,
            _ => self.rng.below(WATCH) as i32,
        };
        let is_mine = |s: &Self, fd| s.owned.contains_key(&fd);
        let dup3 = self.rng.chance(35);
        let cloexec = dup3 && self.rng.chance(50);
        if old == new {
            let r = if dup3 {
                self.p.dup3(old, new, O_CLOEXEC)
            } else {
                self.p.dup2(old, new)
            };
            let want = match (dup3, is_mine(self, new)) {
                (true, _) => Err(Errno::EINVAL),
                (false, true) => Ok(new),
                (false, false) => Err(Errno::EBADF),
            };
            if r != want {
                self.fail(format!("dup2/3({old}, {new}) = {r:?}, want {want:?}"));
            }
            return;
        }
        let replaced = self.owned.remove(&new);
        if replaced.is_some() {
            self.w.unclaim(new);
        }
        let old_own = self.owned.get(&old).copied();
        let w1 = self.w.word(old);
        let r = if dup3 {
            self.p.dup3(old, new, if cloexec { O_CLOEXEC } else { 0 })
        } else {
            self.p.dup2(old, new)
        };
        let w2 = self.w.word(old);
        let stable = (w1 == w2 && w1 != 0).then_some(w1 & 0xffff_ffff);
        match r {
            Ok(fd) if fd == new => {
                let id = self.installed(new, "dup2");
                if let Some(want) = old_own.map(|o| o.id).or(stable)
                    && id != want
                {
                    self.fail(format!(
                        "dup2({old}, {new}) installed file {id}, want {want}"
                    ));
                }
                self.w.claim(new, id, "dup2");
                self.owned.insert(new, Own { id, cloexec });
                self.check_getfd(new);
            }
            Err(Errno::EBADF) if old_own.is_none() && stable.is_none() => {
                // A free foreign fd: `new` keeps what it had.
                if let Some(o) = replaced {
                    self.w.claim(new, o.id, "dup2 restore");
                    self.owned.insert(new, o);
                    self.verify_owned(new, "failed dup2");
                } else if let Some(id) = self.lookup(new) {
                    self.fail(format!("failed dup2({old}, {new}) left file {id} at {new}"));
                }
            }
            r => self.fail(format!(
                "dup2({old}, {new}) = {r:?} (old own: {old_own:?}, stably file {stable:?})"
            )),
        }
    }

    pub(super) fn dupfd(&mut self) {
        let Some((old, own)) = self.random_owned() else {
            return;
        };
        let end = self.base + RANGE as i32;
        let Some(want) = (self.base..end).find(|fd| !self.owned.contains_key(fd)) else {
            return;
        };
        let cloexec = self.rng.chance(50);
        let cmd = if cloexec { F_DUPFD_CLOEXEC } else { F_DUPFD };
        let r = self.p.fcntl(old, cmd, self.base as u64);
        if r != Ok(want) {
            self.fail(format!(
                "fcntl({old}, {cmd}, {}) = {r:?}, want the lowest free fd of the range, {want}",
                self.base
            ));
            return;
        }
        let id = self.installed(want, "F_DUPFD");
        if id != own.id {
            self.fail(format!(
                "F_DUPFD of {old} installed file {id}, want {}",
                own.id
            ));
        }
        self.w.claim(want, id, "F_DUPFD");
        self.owned.insert(want, Own { id, cloexec });
        self.check_getfd(want);
    }

    pub(super) fn close_range(&mut self) {
        let a = self.base + self.rng.below(RANGE) as i32;
        let end = self.base + RANGE as i32;
        let b = a + self.rng.below((end - a) as usize) as i32;
        if self.rng.chance(40) {
            let r = self.p.close_range(a as u32, b as u32, CLOSE_RANGE_CLOEXEC);
            if r != Ok(()) {
                self.fail(format!("close_range({a}, {b}, CLOEXEC) = {r:?}"));
            }
            let fds: Vec<i32> = self.owned.range(a..=b).map(|(&fd, _)| fd).collect();
            for fd in fds {
                self.owned.get_mut(&fd).unwrap().cloexec = true;
                self.check_getfd(fd);
            }
            return;
        }
        let fds: Vec<i32> = self.owned.range(a..=b).map(|(&fd, _)| fd).collect();
        for &fd in &fds {
            self.w.unclaim(fd);
            self.owned.remove(&fd);
        }
        let r = self.p.close_range(a as u32, b as u32, 0);
        if r != Ok(()) {
            self.fail(format!("close_range({a}, {b}, 0) = {r:?}"));
        }
        for fd in a..=b {
            if let Some(id) = self.lookup(fd) {
                self.fail(format!("close_range({a}, {b}) left file {id} at {fd}"));
            }
        }
    }

    pub(super) fn setfd(&mut self) {
        let Some((fd, _)) = self.random_owned() else {
            return;
        };
        let on = self.rng.chance(50);
        let r = self.p.fcntl(fd, F_SETFD, u64::from(on));
        if r != Ok(0) {
            self.fail(format!("F_SETFD({fd}) = {r:?}"));
        }
        self.owned.get_mut(&fd).unwrap().cloexec = on;
        self.check_getfd(fd);
    }

    pub(super) fn getfl(&mut self) {
        let Some((fd, own)) = self.random_owned() else {
            return;
        };
        let Some(want) = self
            .p
            .fget(fd)
            .ok()
            .and_then(|f| probe_of(&f).map(|p| p.flags))
        else {
            return self.fail(format!("own fd {fd} has no file with a probe"));
        };
        // Only the fork threads' children change status flags, and only on
        // files they created: this one keeps its open flags.
        let r = self.p.fcntl(fd, F_GETFL, 0);
        if r != Ok(getfl_of(want)) {
            self.fail(format!(
                "F_GETFL({fd}) of file {} = {r:?}, want {:#o}",
                own.id,
                getfl_of(want)
            ));
        }
    }

    pub(super) fn verify_all(&mut self) {
        let fds: Vec<i32> = self.owned.keys().copied().collect();
        for fd in fds {
            self.verify_owned(fd, "sweep");
        }
    }

    pub(super) fn foreign_lookup(&mut self) {
        let fd = match self.rng.below(20) {
            0 => self
                .rng
                .pick(&[-1, -100, i32::MIN, i32::MAX, 1_000_000, 1 << 20]),
            1..=3 => (LOW_LIMIT + self.rng.below(WATCH - LOW_LIMIT)) as i32,
            _ => self.rng.below(LOW_LIMIT.min(SHARED_THREADS * LOW_CAP + 8)) as i32,
        };
        self.w.stats.lookups.fetch_add(1, SeqCst);
        let w1 = self.w.word(fd);
        let got = self.lookup(fd);
        let w2 = self.w.word(fd);
        if !(0..WATCH as i32).contains(&fd) {
            if got.is_some() {
                self.fail(format!("lookup of fd {fd} found a file"));
            }
            return;
        }
        if w1 == w2 && w1 != 0 {
            self.w.stats.validated.fetch_add(1, SeqCst);
            let want = w1 & 0xffff_ffff;
            if got != Some(want) {
                self.fail(format!(
                    "lookup of fd {fd}, installed with file {want} (claim {}) throughout, \
                     returned {got:?}",
                    w1 >> 32
                ));
            }
        } else if w1 != w2 {
            self.w.stats.raced.fetch_add(1, SeqCst);
        }
    }
}
