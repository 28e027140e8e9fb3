//! Fork threads: fork the shared process, then drive the private child
//! with exact expectations.

use super::*;

pub(super) struct ChildModel {
    pub(super) fds: BTreeMap<i32, Own>,
    /// F_GETFL expected for files created in this child (nobody else can
    /// reach them).
    pub(super) getfl: HashMap<u64, i32>,
    pub(super) created: Vec<Arc<Probe>>,
}

impl ChildModel {
    pub(super) fn lowest_free(&self, from: i32) -> i32 {
        (from..).find(|fd| !self.fds.contains_key(fd)).unwrap()
    }
}

pub(super) struct Forker<'w> {
    pub(super) w: &'w World,
    pub(super) t: usize,
    pub(super) h: Process,
    pub(super) rng: Rng,
}

impl Forker<'_> {
    pub(super) fn fail(&self, msg: String) {
        self.w.fail(format!("[fork thread {}] {msg}", self.t));
    }

    pub(super) fn round(&mut self) {
        let before: Vec<u64> = (0..WATCH as i32).map(|fd| self.w.word(fd)).collect();
        let mut child = match self.h.fork() {
            Ok(c) => c,
            Err(e) => return self.fail(format!("fork: {e:?}")),
        };
        self.w.stats.forks.fetch_add(1, SeqCst);
        let mut m = ChildModel {
            fds: BTreeMap::new(),
            getfl: HashMap::new(),
            created: Vec::new(),
        };
        // The copy: every fd has a live file; count the new slots.
        let mut kept: Vec<FileRef> = Vec::new();
        for fd in child.fd_table().open_fds() {
            let fd = fd as i32;
            match child.fget(fd) {
                Ok(f) => {
                    let id = count_install(self.w, &f, fd, Table::Child);
                    inspect(self.w, &f, fd, Table::Child, false);
                    let cloexec = child.fcntl(fd, F_GETFD, 0) == Ok(FD_CLOEXEC);
                    m.fds.insert(fd, Own { id, cloexec });
                    if kept.len() < 4 && self.rng.chance(20) {
                        kept.push(f);
                    }
                }
                Err(e) => self.fail(format!("fork copy: fd {fd} open without a file: {e:?}")),
            }
        }
        // Fds of the parent that were installed throughout the fork are in
        // the copy, with the same file.
        for (fd, &w1) in before.iter().enumerate() {
            let w2 = self.w.word(fd as i32);
            if w1 == w2 && w1 != 0 {
                let want = w1 & 0xffff_ffff;
                let got = m.fds.get(&(fd as i32)).map(|o| o.id);
                if got != Some(want) {
                    self.fail(format!(
                        "fork: parent fd {fd} held file {want} throughout, the copy has {got:?}"
                    ));
                }
            }
        }
        if let Err(e) = child.fd_table().check_invariants() {
            self.fail(format!("fork copy: check_invariants: {e}"));
        }
        let n = 48 + self.rng.below(64);
        for _ in 0..n {
            if self.w.stopped() {
                break;
            }
            self.child_op(&mut child, &mut m);
            self.w.stats.child_ops.fetch_add(1, SeqCst);
            if uvfs::task_work::pending() {
                self.fail("deferred releases left queued after a call".into());
            }
        }
        self.verify_child(&mut child, &m);
        for f in kept {
            inspect(self.w, &f, -1, Table::Child, false);
        }
        drop(child);
        // The child's own files were only ever in its table: the exit of
        // its last thread released them.
        for p in &m.created {
            let want = usize::from(p.opened.load(SeqCst));
            if p.released.load(SeqCst) != want {
                self.fail(format!(
                    "file {} of a dropped child: released {} times, want {want}",
                    p.id,
                    p.released.load(SeqCst)
                ));
            }
        }
    }

    pub(super) fn verify_child(&self, c: &mut Process, m: &ChildModel) {
        let open: Vec<i32> = c.fd_table().open_fds().iter().map(|&f| f as i32).collect();
        let want: Vec<i32> = m.fds.keys().copied().collect();
        if open != want {
            self.fail(format!("child open fds {open:?}, model {want:?}"));
        }
        for (&fd, o) in &m.fds {
            let got = c.with_file(fd, |f| inspect(self.w, f, fd, Table::Child, false));
            if got != Ok(o.id) {
                self.fail(format!("child fd {fd}: found {got:?}, want file {}", o.id));
            }
            let getfd = c.fcntl(fd, F_GETFD, 0);
            if getfd != Ok(i32::from(o.cloexec)) {
                self.fail(format!(
                    "child F_GETFD({fd}) = {getfd:?}, want {}",
                    o.cloexec
                ));
            }
            if let Some(&fl) = m.getfl.get(&o.id) {
                let got = c.fcntl(fd, F_GETFL, 0);
                if got != Ok(fl) {
                    self.fail(format!("child F_GETFL({fd}) = {got:?}, want {fl:#o}"));
                }
            }
        }
        if let Err(e) = c.fd_table().check_invariants() {
            self.fail(format!("child check_invariants: {e}"));
        }
    }

    pub(super) fn pick_fd(&mut self, m: &ChildModel) -> i32 {
        if !m.fds.is_empty() && self.rng.chance(75) {
            let i = self.rng.below(m.fds.len());
            *m.fds.keys().nth(i).unwrap()
        } else {
            self.rng.below(100) as i32
        }
    }

    pub(super) fn expect<T: PartialEq + std::fmt::Debug>(
        &self,
        what: String,
        got: T,
        want: T,
    ) -> bool {
        if got != want {
            self.fail(format!("child {what} = {got:?}, want {want:?}"));
        }
        got == want
    }

    pub(super) fn child_open(&mut self, c: &mut Process, m: &mut ChildModel, soft: u64) {
        let flags = access_flags(&mut self.rng);
        let probe = self.w.new_probe(flags);
        m.created.push(probe.clone());
        let fail = self.rng.chance(15);
        let ops = probe.clone();
        let r = c.open_with(flags, |o| {
            o.set_ops(ops);
            if fail { Err(Errno::ENOENT) } else { Ok(()) }
        });
        let fd = m.lowest_free(0);
        let want = if fd as u64 >= soft {
            Err(Errno::EMFILE)
        } else if fail {
            Err(Errno::ENOENT)
        } else {
            Ok(fd)
        };
        if self.expect(format!("open({flags:#o})"), r, want) && r.is_ok() {
            probe.opened.store(true, SeqCst);
            probe.installs.fetch_add(1, SeqCst);
            let cloexec = flags & O_CLOEXEC != 0;
            m.fds.insert(
                fd,
                Own {
                    id: probe.id,
                    cloexec,
                },
            );
            m.getfl.insert(probe.id, getfl_of(flags));
        }
    }

    /// Records that `new` now refers to `old`'s file.
    pub(super) fn child_installed(
        &self,
        c: &mut Process,
        m: &mut ChildModel,
        old: i32,
        new: i32,
        cloexec: bool,
    ) {
        let id = m.fds[&old].id;
        let got = c
            .fget(new)
            .map(|f| count_install(self.w, &f, new, Table::Child));
        if got != Ok(id) {
            self.fail(format!(
                "child fd {new} has {got:?} after a dup of {old} (file {id})"
            ));
        }
        m.fds.insert(new, Own { id, cloexec });
    }

    pub(super) fn child_op(&mut self, c: &mut Process, m: &mut ChildModel) {
        const SOFT: u64 = 1024;
        match self.rng.below(100) {
            0..=24 => self.child_open(c, m, SOFT),
            25..=39 => {
                let fd = self.pick_fd(m);
                let want = if m.fds.remove(&fd).is_some() {
                    Ok(())
                } else {
                    Err(Errno::EBADF)
                };
                let r = c.close(fd);
                self.expect(format!("close({fd})"), r, want);
            }
            40..=47 => {
                let old = self.pick_fd(m);
                let new = m.lowest_free(0);
                let want = if m.fds.contains_key(&old) {
                    Ok(new)
                } else {
                    Err(Errno::EBADF)
                };
                if self.expect(format!("dup({old})"), c.dup(old), want) && want.is_ok() {
                    self.child_installed(c, m, old, new, false);
                }
            }
            48..=59 => {
                let old = self.pick_fd(m);
                let new = self.pick_fd(m);
                let dup3 = self.rng.chance(40);
                let cloexec = dup3 && self.rng.chance(50);
                let (r, want) = if dup3 {
                    let r = c.dup3(old, new, if cloexec { O_CLOEXEC } else { 0 });
                    let want = if old == new {
                        Err(Errno::EINVAL)
                    } else if m.fds.contains_key(&old) {
                        Ok(new)
                    } else {
                        Err(Errno::EBADF)
                    };
                    (r, want)
                } else {
                    let r = c.dup2(old, new);
                    let want = if m.fds.contains_key(&old) {
                        Ok(new)
                    } else {
                        Err(Errno::EBADF)
                    };
                    (r, want)
                };
                if self.expect(format!("dup2/3({old}, {new}, {cloexec})"), r, want)
                    && r.is_ok()
                    && old != new
                {
                    self.child_installed(c, m, old, new, cloexec);
                }
            }
            60..=66 => {
                let old = self.pick_fd(m);
                let from = self.rng.below(100) as i32;
                let cloexec = self.rng.chance(50);
                let cmd = if cloexec { F_DUPFD_CLOEXEC } else { F_DUPFD };
                let new = m.lowest_free(from);
                let want = if m.fds.contains_key(&old) {
                    Ok(new)
                } else {
                    Err(Errno::EBADF)
                };
                let r = c.fcntl(old, cmd, from as u64);
                if self.expect(format!("fcntl({old}, {cmd}, {from})"), r, want) && r.is_ok() {
                    self.child_installed(c, m, old, new, cloexec);
                }
            }
            67..=71 => {
                let a = self.rng.below(100) as u32;
                let b = a + self.rng.below(8) as u32;
                let cloexec = self.rng.chance(40);
                let flags = if cloexec { CLOSE_RANGE_CLOEXEC } else { 0 };
                let r = c.close_range(a, b, flags);
                self.expect(format!("close_range({a}, {b}, {flags})"), r, Ok(()));
                let fds: Vec<i32> = m.fds.range(a as i32..=b as i32).map(|(&f, _)| f).collect();
                for fd in fds {
                    if cloexec {
                        m.fds.get_mut(&fd).unwrap().cloexec = true;
                    } else {
                        m.fds.remove(&fd);
                    }
                }
            }
            72..=77 => {
                let fd = self.pick_fd(m);
                let on = self.rng.chance(50);
                let r = c.fcntl(fd, F_SETFD, u64::from(on));
                let want = match m.fds.get_mut(&fd) {
                    Some(o) => {
                        o.cloexec = on;
                        Ok(0)
                    }
                    None => Err(Errno::EBADF),
                };
                self.expect(format!("F_SETFD({fd}, {on})"), r, want);
            }
            78..=83 => {
                // Status flags, on files no one outside this child can see.
                let mine: Vec<(i32, u64)> = m
                    .fds
                    .iter()
                    .filter(|(_, o)| m.getfl.contains_key(&o.id))
                    .map(|(&fd, o)| (fd, o.id))
                    .collect();
                if mine.is_empty() {
                    return;
                }
                let (fd, id) = self.rng.pick(&mine);
                let arg = self
                    .rng
                    .pick(&[0, O_APPEND, O_NONBLOCK, O_APPEND | O_NONBLOCK]);
                let r = c.fcntl(fd, F_SETFL, arg as u64);
                self.expect(format!("F_SETFL({fd}, {arg:#o})"), r, Ok(0));
                let fl = m.getfl.get_mut(&id).unwrap();
                *fl = (*fl & !(O_APPEND | O_NONBLOCK)) | arg;
                let fl = *fl;
                self.expect(format!("F_GETFL({fd})"), c.fcntl(fd, F_GETFL, 0), Ok(fl));
            }
            84..=89 => {
                let fd = self.pick_fd(m);
                let want = m.fds.get(&fd).map(|o| o.id).ok_or(Errno::EBADF);
                let w = self.w;
                let r = c.with_file(fd, |f| inspect(w, f, fd, Table::Child, false));
                self.expect(format!("with_file({fd})"), r, want);
            }
            90..=94 => self.emfile_phase(c, m),
            95 => {
                let r = c.exec();
                self.expect("exec".into(), r, Ok(()));
                m.fds.retain(|_, o| !o.cloexec);
                self.verify_child(c, m);
            }
            _ => self.verify_child(c, m),
        }
    }

    /// Lowers the soft limit just above the table's use and checks EMFILE,
    /// then restores it.
    pub(super) fn emfile_phase(&mut self, c: &mut Process, m: &mut ChildModel) {
        let (soft0, hard) = c.getrlimit_nofile();
        let soft = m.lowest_free(0) as u64 + self.rng.below(3) as u64;
        self.expect(
            format!("setrlimit({soft})"),
            c.setrlimit_nofile(soft, hard),
            Ok(()),
        );
        for _ in 0..4 {
            self.child_open(c, m, soft);
        }
        if let Some((&old, _)) = m.fds.iter().next() {
            let want = if (m.lowest_free(0) as u64) < soft {
                Ok(m.lowest_free(0))
            } else {
                Err(Errno::EMFILE)
            };
            let r = c.dup(old);
            if self.expect(format!("dup({old}) at limit {soft}"), r, want)
                && let Ok(new) = r
            {
                self.child_installed(c, m, old, new, false);
            }
            // dup2(fd, fd) does not look at the limit.
            let new = soft as i32;
            let want = if old == new {
                Ok(new)
            } else {
                Err(Errno::EBADF)
            };
            let r = c.dup2(old, new);
            self.expect(format!("dup2({old}, {new}) at limit {soft}"), r, want);
            let r = c.fcntl(old, F_DUPFD, soft);
            self.expect(
                format!("F_DUPFD({old}, {soft}) at limit {soft}"),
                r,
                Err(Errno::EINVAL),
            );
        }
        self.expect(
            "setrlimit restore".into(),
            c.setrlimit_nofile(soft0, hard),
            Ok(()),
        );
    }

    pub(super) fn foreign_lookups(&mut self) {
        for _ in 0..16 {
            let fd = self.rng.below(WATCH) as i32;
            let w1 = self.w.word(fd);
            let w = self.w;
            let got = match self.rng.below(2) {
                0 => {
                    let y = self.rng.below(64) == 0;
                    let f = self.h.fget(fd).ok();
                    f.map(|f| inspect(w, &f, fd, Table::Shared, y))
                }
                _ => self
                    .h
                    .with_file(fd, |f| inspect(w, f, fd, Table::Shared, false))
                    .ok(),
            };
            let w2 = self.w.word(fd);
            if w1 == w2 && w1 != 0 && got != Some(w1 & 0xffff_ffff) {
                self.fail(format!(
                    "lookup of fd {fd}, installed with file {} throughout, returned {got:?}",
                    w1 & 0xffff_ffff
                ));
            }
        }
    }
}
