//! Access times under `relatime` (the default mount option, and the host's
//! `/dev/shm`): the same sequence of reads, writes, listings, readlinks and
//! explicit time changes on the host kernel and on uvfs, comparing after
//! each step whether atime moved (and that ctime did not move on access).

mod support;

use std::ffi::CString;
use std::thread::sleep;
use std::time::Duration;
use support::host::TempDir;
use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

#[derive(Clone, Copy, Debug)]
enum Step {
    Write,
    Read,
    ReadNoatime,
    List,
    Readlink,
    /// Sets atime two days back and mtime to a day before that.
    AgeAtime,
    /// Sets atime a day ahead, mtime left alone (`UTIME_OMIT`): later
    /// than mtime and ctime until a day has passed, so relatime leaves it
    /// even after a write (which moves mtime and ctime to now, still
    /// before it).
    FutureAtime,
    Chmod,
}

const STEPS: &[Step] = &[
    Step::Read,
    Step::Read,
    Step::Write,
    Step::ReadNoatime,
    Step::Read,
    Step::Read,
    Step::List,
    Step::List,
    Step::Readlink,
    Step::Readlink,
    Step::AgeAtime,
    Step::Read,
    Step::Read,
    Step::Chmod,
    Step::Read,
    Step::Read,
    Step::FutureAtime,
    Step::Read,
    Step::Write,
    Step::Read,
    Step::Read,
];

/// (file atime, file ctime, dir atime, link atime) in nanoseconds.
type Times = (i128, i128, i128, i128);

fn ns(sec: i64, nsec: i64) -> i128 {
    i128::from(sec) * 1_000_000_000 + i128::from(nsec)
}

fn host_run(dir: &str) -> Vec<(bool, bool, bool, bool)> {
    let c = |s: &str| CString::new(format!("{dir}/{s}")).unwrap();
    let (file, d, link) = (c("f"), CString::new(dir).unwrap(), c("l"));
    let times = || -> Times {
        // SAFETY: zeroed `stat` buffers are valid; the paths are ours.
        unsafe {
            let mut a: libc::stat = std::mem::zeroed();
            let mut b: libc::stat = std::mem::zeroed();
            let mut l: libc::stat = std::mem::zeroed();
            assert_eq!(libc::stat(file.as_ptr(), &mut a), 0);
            assert_eq!(libc::stat(d.as_ptr(), &mut b), 0);
            assert_eq!(libc::lstat(link.as_ptr(), &mut l), 0);
            (
                ns(a.st_atime, a.st_atime_nsec),
                ns(a.st_ctime, a.st_ctime_nsec),
                ns(b.st_atime, b.st_atime_nsec),
                ns(l.st_atime, l.st_atime_nsec),
            )
        }
    };
    // SAFETY: libc calls on paths and fds this function owns.
    unsafe {
        let fd = libc::open(file.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644);
        assert!(fd >= 0);
        assert_eq!(libc::write(fd, b"data".as_ptr().cast(), 4), 4);
        libc::close(fd);
        assert_eq!(libc::symlink(c"f".as_ptr(), link.as_ptr()), 0);
    }
    let mut out = Vec::new();
    for &step in STEPS {
        sleep(Duration::from_millis(15));
        let before = times();
        // SAFETY: as above.
        unsafe {
            let mut buf = [0u8; 64];
            match step {
                Step::Write | Step::Read | Step::ReadNoatime => {
                    let flags = match step {
                        Step::Write => libc::O_WRONLY,
                        Step::Read => libc::O_RDONLY,
                        _ => libc::O_RDONLY | libc::O_NOATIME,
                    };
                    let fd = libc::open(file.as_ptr(), flags);
                    assert!(fd >= 0);
                    if let Step::Write = step {
                        assert_eq!(libc::write(fd, b"more".as_ptr().cast(), 4), 4);
                    } else {
                        assert!(libc::read(fd, buf.as_mut_ptr().cast(), 64) > 0);
                    }
                    libc::close(fd);
                }
                Step::List => {
                    let fd = libc::open(d.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
                    assert!(libc::syscall(libc::SYS_getdents64, fd, buf.as_mut_ptr(), 64) > 0);
                    libc::close(fd);
                }
                Step::Readlink => {
                    assert_eq!(
                        libc::readlink(link.as_ptr(), buf.as_mut_ptr().cast(), 64),
                        1
                    );
                }
                Step::AgeAtime => {
                    let now = libc::time(std::ptr::null_mut());
                    let t = [
                        libc::timespec {
                            tv_sec: now - 2 * 86400,
                            tv_nsec: 0,
                        },
                        libc::timespec {
                            tv_sec: now - 3 * 86400,
                            tv_nsec: 0,
                        },
                    ];
                    assert_eq!(
                        libc::utimensat(libc::AT_FDCWD, file.as_ptr(), t.as_ptr(), 0),
                        0
                    );
                }
                Step::FutureAtime => {
                    let now = libc::time(std::ptr::null_mut());
                    let t = [
                        libc::timespec {
                            tv_sec: now + 86400,
                            tv_nsec: 0,
                        },
                        libc::timespec {
                            tv_sec: 0,
                            tv_nsec: libc::UTIME_OMIT,
                        },
                    ];
                    assert_eq!(
                        libc::utimensat(libc::AT_FDCWD, file.as_ptr(), t.as_ptr(), 0),
                        0
                    );
                }
                Step::Chmod => assert_eq!(libc::chmod(file.as_ptr(), 0o640), 0),
            }
        }
        let after = times();
        out.push((
            after.0 != before.0,
            after.1 != before.1,
            after.2 != before.2,
            after.3 != before.3,
        ));
    }
    out
}

fn uvfs_run(fast: FastPaths) -> Vec<(bool, bool, bool, bool)> {
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).unwrap();
    p.mkdir("/d", 0o755).unwrap();
    let fd = p.open("/d/f", O_CREAT | O_RDWR, 0o644).unwrap();
    assert_eq!(p.write(fd, b"data"), Ok(4));
    p.close(fd).unwrap();
    p.symlink("f", "/d/l").unwrap();
    let times = |p: &mut Process| -> Times {
        let a = p.stat("/d/f").unwrap();
        let b = p.stat("/d").unwrap();
        let l = p.lstat("/d/l").unwrap();
        (
            ns(a.st_atime, a.st_atime_nsec),
            ns(a.st_ctime, a.st_ctime_nsec),
            ns(b.st_atime, b.st_atime_nsec),
            ns(l.st_atime, l.st_atime_nsec),
        )
    };
    let mut out = Vec::new();
    for &step in STEPS {
        sleep(Duration::from_millis(15));
        let before = times(&mut p);
        let mut buf = [0u8; 64];
        match step {
            Step::Write | Step::Read | Step::ReadNoatime => {
                let flags = match step {
                    Step::Write => O_WRONLY,
                    Step::Read => O_RDONLY,
                    _ => O_RDONLY | O_NOATIME,
                };
                let fd = p.open("/d/f", flags, 0).unwrap();
                if let Step::Write = step {
                    assert_eq!(p.write(fd, b"more"), Ok(4));
                } else {
                    assert!(p.read(fd, &mut buf).unwrap() > 0);
                }
                p.close(fd).unwrap();
            }
            Step::List => {
                let fd = p.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
                assert!(p.getdents64(fd, &mut buf).unwrap() > 0);
                p.close(fd).unwrap();
            }
            Step::Readlink => assert_eq!(p.readlink("/d/l", &mut buf), Ok(1)),
            Step::AgeAtime => {
                let now = uvfs::fs::Timespec::now().sec;
                let t = [
                    Timespec {
                        tv_sec: now - 2 * 86400,
                        tv_nsec: 0,
                    },
                    Timespec {
                        tv_sec: now - 3 * 86400,
                        tv_nsec: 0,
                    },
                ];
                p.utimensat(AT_FDCWD, "/d/f", Some(t), 0).unwrap();
            }
            Step::FutureAtime => {
                let now = uvfs::fs::Timespec::now().sec;
                let t = [
                    Timespec {
                        tv_sec: now + 86400,
                        tv_nsec: 0,
                    },
                    Timespec {
                        tv_sec: 0,
                        tv_nsec: UTIME_OMIT,
                    },
                ];
                p.utimensat(AT_FDCWD, "/d/f", Some(t), 0).unwrap();
            }
            Step::Chmod => p.chmod("/d/f", 0o640).unwrap(),
        }
        let after = times(&mut p);
        out.push((
            after.0 != before.0,
            after.1 != before.1,
            after.2 != before.2,
            after.3 != before.3,
        ));
    }
    out
}

#[test]
fn relatime_matches_the_host() {
    let dir = TempDir::new("atime");
    let host = host_run(dir.as_str());
    drop(dir);
    for fast in [FastPaths::seeds(), FastPaths::stock()] {
        let ours = uvfs_run(fast);
        for (i, (h, u)) in host.iter().zip(&ours).enumerate() {
            assert_eq!(
                h, u,
                "{fast}: step {i} {:?}: (file atime, file ctime, dir atime, link atime) moved: host {h:?}, uvfs {u:?}",
                STEPS[i]
            );
        }
    }
    // The sequence exercises both outcomes.
    assert!(host.iter().any(|s| s.0) && host.iter().any(|s| !s.0));
}
