//! Multigrain timestamps (Linux 6.13 and later on tmpfs): stamps come from
//! the coarse clock, but a change made after someone saw the ctime always
//! shows, and a change to one file is never stamped earlier than a change
//! made before it to another. The same sequence runs back to back, with no
//! sleeps (so most of it falls within one clock tick), on the host kernel
//! and on uvfs; after each step the outcomes Linux guarantees are recorded
//! and compared.

mod support;

use std::ffi::CString;
use support::host::TempDir;
use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

/// Rounds of the sequence (each a dozen changes).
const ROUNDS: usize = 200;

/// (mtime, ctime) in nanoseconds.
type Mc = (i128, i128);

fn ns(sec: i64, nsec: i64) -> i128 {
    i128::from(sec) * 1_000_000_000 + i128::from(nsec)
}

/// What one system does: the calls of the sequence, on names relative to
/// its work directory.
trait Sys {
    fn stat(&mut self, name: &str) -> Mc;
    fn create(&mut self, name: &str);
    fn pwrite(&mut self, name: &str);
    fn ftruncate_same(&mut self, name: &str);
    fn chmod(&mut self, name: &str, mode: u32);
    fn link(&mut self, old: &str, new: &str);
    fn unlink(&mut self, name: &str);
    fn rename(&mut self, old: &str, new: &str);
}

struct Host(String);

impl Host {
    fn c(&self, name: &str) -> CString {
        CString::new(format!("{}/{name}", self.0)).unwrap()
    }

    fn with_fd(&self, name: &str, f: impl FnOnce(i32)) {
        let p = self.c(name);
        // SAFETY: a path we own; the fd is closed below.
        let fd = unsafe { libc::open(p.as_ptr(), libc::O_RDWR) };
        assert!(fd >= 0, "open {name}");
        f(fd);
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
    }
}

impl Sys for Host {
    fn stat(&mut self, name: &str) -> Mc {
        let p = self.c(name);
        // SAFETY: a zeroed `stat` is valid; the path is ours.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            assert_eq!(libc::stat(p.as_ptr(), &mut st), 0, "stat {name}");
            (
                ns(st.st_mtime, st.st_mtime_nsec),
                ns(st.st_ctime, st.st_ctime_nsec),
            )
        }
    }

    fn create(&mut self, name: &str) {
        let p = self.c(name);
        // SAFETY: a path we own.
        let fd = unsafe { libc::open(p.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644) };
        assert!(fd >= 0);
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
    }

    fn pwrite(&mut self, name: &str) {
        self.with_fd(name, |fd| {
            // SAFETY: a valid buffer of 4 bytes, our fd.
            let n = unsafe { libc::pwrite(fd, b"data".as_ptr().cast(), 4, 0) };
            assert_eq!(n, 4);
        });
    }

    fn ftruncate_same(&mut self, name: &str) {
        self.with_fd(name, |fd| {
            // SAFETY: our fd.
            assert_eq!(unsafe { libc::ftruncate(fd, 4) }, 0);
        });
    }

    fn chmod(&mut self, name: &str, mode: u32) {
        let p = self.c(name);
        // SAFETY: a path we own.
        assert_eq!(unsafe { libc::chmod(p.as_ptr(), mode) }, 0);
    }

    fn link(&mut self, old: &str, new: &str) {
        let (o, n) = (self.c(old), self.c(new));
        // SAFETY: paths we own.
        assert_eq!(unsafe { libc::link(o.as_ptr(), n.as_ptr()) }, 0);
    }

    fn unlink(&mut self, name: &str) {
        let p = self.c(name);
        // SAFETY: a path we own.
        assert_eq!(unsafe { libc::unlink(p.as_ptr()) }, 0);
    }

    fn rename(&mut self, old: &str, new: &str) {
        let (o, n) = (self.c(old), self.c(new));
        // SAFETY: paths we own.
        assert_eq!(unsafe { libc::rename(o.as_ptr(), n.as_ptr()) }, 0);
    }
}

struct Uvfs(Process);

fn at(name: &str) -> String {
    format!("/w/{name}")
}

impl Uvfs {
    fn with_fd(&mut self, name: &str, f: impl FnOnce(&mut Process, i32)) {
        let fd = self.0.open(at(name), O_RDWR, 0).unwrap();
        f(&mut self.0, fd);
        self.0.close(fd).unwrap();
    }
}

impl Sys for Uvfs {
    fn stat(&mut self, name: &str) -> Mc {
        let st = self.0.stat(at(name)).unwrap();
        (
            ns(st.st_mtime, st.st_mtime_nsec),
            ns(st.st_ctime, st.st_ctime_nsec),
        )
    }

    fn create(&mut self, name: &str) {
        let fd = self.0.open(at(name), O_CREAT | O_RDWR, 0o644).unwrap();
        self.0.close(fd).unwrap();
    }

    fn pwrite(&mut self, name: &str) {
        self.with_fd(name, |p, fd| assert_eq!(p.pwrite(fd, b"data", 0), Ok(4)));
    }

    fn ftruncate_same(&mut self, name: &str) {
        self.with_fd(name, |p, fd| assert_eq!(p.ftruncate(fd, 4), Ok(())));
    }

    fn chmod(&mut self, name: &str, mode: u32) {
        self.0.chmod(at(name), mode).unwrap();
    }

    fn link(&mut self, old: &str, new: &str) {
        self.0.link(at(old), at(new)).unwrap();
    }

    fn unlink(&mut self, name: &str) {
        self.0.unlink(at(name)).unwrap();
    }

    fn rename(&mut self, old: &str, new: &str) {
        self.0.rename(at(old), at(new)).unwrap();
    }
}

/// After each step, whether the guaranteed outcome held: one bool per
/// check, in a fixed order.
fn run(s: &mut dyn Sys) -> Vec<(usize, &'static str, bool)> {
    let mut out = Vec::new();
    s.create("a");
    s.create("b");
    s.create("sub_marker");
    s.pwrite("a");
    s.pwrite("b");
    for round in 0..ROUNDS {
        let mut check = |what: &'static str, ok: bool| out.push((round, what, ok));

        // stat, write, stat: both times move.
        let before = s.stat("a");
        s.pwrite("a");
        let after = s.stat("a");
        check("write after stat moves mtime", after.0 > before.0);
        check("write after stat moves ctime", after.1 > before.1);

        // stat, stat: nothing moves.
        check("stat moves nothing", s.stat("a") == after);

        // A queried file written, then an unqueried one: the second is not
        // stamped earlier (the floor).
        s.stat("a");
        s.pwrite("a");
        s.pwrite("b");
        let (a, b) = (s.stat("a"), s.stat("b"));
        check("a later write to another file is not older", b.0 >= a.0);

        // ftruncate to the same size stamps both times.
        let before = s.stat("a");
        s.ftruncate_same("a");
        let after = s.stat("a");
        check("ftruncate after stat moves mtime", after.0 > before.0);
        check("ftruncate after stat moves ctime", after.1 > before.1);

        // chmod moves ctime, not mtime.
        let before = s.stat("a");
        s.chmod("a", if round % 2 == 0 { 0o640 } else { 0o644 });
        let after = s.stat("a");
        check("chmod after stat moves ctime", after.1 > before.1);
        check("chmod leaves mtime", after.0 == before.0);

        // Creating a name in the directory moves its times.
        let before = s.stat(".");
        s.create("x");
        let after = s.stat(".");
        check("create after stat moves dir mtime", after.0 > before.0);
        check("create after stat moves dir ctime", after.1 > before.1);

        // link moves the inode's ctime.
        let before = s.stat("x");
        s.link("x", "y");
        let after = s.stat("x");
        check("link after stat moves ctime", after.1 > before.1);

        // unlink of one name moves the inode's ctime (seen by the other).
        let before = s.stat("y");
        s.unlink("x");
        let after = s.stat("y");
        check("unlink after stat moves ctime", after.1 > before.1);

        // rename moves the renamed inode's ctime.
        let before = s.stat("y");
        s.rename("y", "z");
        let after = s.stat("z");
        check("rename after stat moves ctime", after.1 > before.1);
        s.unlink("z");
    }
    out
}

#[test]
fn multigrain_stamps_match_the_host() {
    let dir = TempDir::new("mgtime");
    let host = run(&mut Host(dir.as_str().to_string()));
    drop(dir);
    // What Linux guarantees held on the host.
    for (round, what, ok) in &host {
        assert!(ok, "host, round {round}: {what} did not hold");
    }
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkdir("/w", 0o755).unwrap();
        let ours = run(&mut Uvfs(p));
        assert_eq!(ours.len(), host.len());
        for (h, u) in host.iter().zip(&ours) {
            assert_eq!(h, u, "{fast}: round {}: {} differs from the host", h.0, h.1);
        }
    }
}
