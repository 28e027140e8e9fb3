//! The tests: will-it-scale's file-system tests, by the same names and with
//! the same loops, plus `openneg` (seed 001's failed open).
//!
//! Each test has a shared preparation (files every task uses, made once
//! before the tasks start), a per-task setup, the loop body (one iteration =
//! one counted operation, as will-it-scale counts), a per-task teardown and
//! a shared cleanup. All of it runs against a [`Sys`], so the host and uvfs
//! run the very same sequence of calls on paths of the same shape under a
//! work directory `W`:
//!
//! | test | setup | one iteration |
//! |---|---|---|
//! | open1 | `W/willitscale.N` made for each task beforehand | open it `O_RDWR`, close |
//! | open2 | own directory `W/willitscale.N.d` holding `willitscale` | open it `O_RDWR`, close |
//! | open3 | one file `W/willitscale.shared` for all tasks | open it `O_RDWR`, close |
//! | dup1 | own file, kept open | dup the fd, close the copy |
//! | lseek1 | own 4 KiB file, unlinked, kept open | lseek to 0 |
//! | lseek2 | one shared 4 KiB file, each task opens it | lseek to 0 |
//! | read1 | own 1 MiB file, unlinked, kept open | read 4 KiB; at end of file, seek to 0 |
//! | read2 | one shared 1 MiB file, each task opens it read-only | read 4 KiB; at end of file, seek to 0 |
//! | pread1 | own 4 KiB file, unlinked, kept open | pread 4 KiB at offset 0 |
//! | write1 | own empty file, unlinked, kept open | write 4 KiB; after 1 MiB, seek to 0 |
//! | unlink1 | own name `W/willitscale.N` | create it, close, unlink |
//! | unlink2 | own directory `W/willitscale.N.d` | create `willitscale` in it, close, unlink |
//! | openneg | nothing | open `W/nonexistent` read-only, expect `ENOENT` |
//! | getfl | own file, kept open | `fcntl(fd, F_GETFL)` (seed 003: one fd lookup per call) |
//! | dup100 | own file open, 100 copies with a hole at the 68th | dup the fd (it lands in the hole), close the copy |

use crate::backend::{Sys, cpath};
use std::ffi::CString;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use uvfs::{Errno, uapi};

/// will-it-scale's buffer length.
const BUFLEN: usize = 4096;
/// will-it-scale's file size for the read and write tests.
const FILESIZE: usize = 1024 * 1024;
/// dup100's copies, and which of them is closed to make the hole (the
/// 68th: with the first fds at 3 or so, past the first 64-bit word).
const DUP100_COPIES: usize = 100;
const DUP100_HOLE: usize = 67;

/// A test by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Test {
    /// Separate file open/close.
    Open1,
    /// Separate file open/close in different directories.
    Open2,
    /// Same file open/close.
    Open3,
    /// Separate file dup/close.
    Dup1,
    /// Separate file lseek.
    Lseek1,
    /// Same file lseek.
    Lseek2,
    /// Separate file read.
    Read1,
    /// Same file read.
    Read2,
    /// Separate file pread.
    Pread1,
    /// Separate file write.
    Write1,
    /// Separate file open/close/unlink.
    Unlink1,
    /// Separate file open/close/unlink in different directories.
    Unlink2,
    /// Open of a missing file (ENOENT).
    Openneg,
    /// fcntl(F_GETFL): an fd lookup and little else.
    Getfl,
    /// dup/close with 100 fds open and a hole among them.
    Dup100,
}

/// One entry of the test list.
pub struct Entry {
    /// The name on the command line and in the JSON.
    pub name: &'static str,
    /// The test, or `None` while it is only planned.
    pub test: Option<Test>,
    /// One line: what a task does.
    pub description: &'static str,
}

/// Every test, in `list` order.
pub const TESTS: &[Entry] = &[
    Entry {
        name: "open1",
        test: Some(Test::Open1),
        description: "separate file open/close: each task opens and closes its own file",
    },
    Entry {
        name: "open2",
        test: Some(Test::Open2),
        description: "separate file open/close in different directories: own directory each",
    },
    Entry {
        name: "open3",
        test: Some(Test::Open3),
        description: "same file open/close: every task opens and closes one shared file",
    },
    Entry {
        name: "dup1",
        test: Some(Test::Dup1),
        description: "separate file dup/close: dup an open fd and close the copy",
    },
    Entry {
        name: "lseek1",
        test: Some(Test::Lseek1),
        description: "separate file lseek: lseek(fd, 0, SEEK_SET) on its own 4 KiB file",
    },
    Entry {
        name: "lseek2",
        test: Some(Test::Lseek2),
        description: "same file lseek: each task's own fd on one shared 4 KiB file",
    },
    Entry {
        name: "read1",
        test: Some(Test::Read1),
        description: "separate file read: 4 KiB reads through its own 1 MiB file, rewinding",
    },
    Entry {
        name: "read2",
        test: Some(Test::Read2),
        description: "same file read: 4 KiB reads through one shared 1 MiB file, rewinding",
    },
    Entry {
        name: "pread1",
        test: Some(Test::Pread1),
        description: "separate file pread: pread 4 KiB at offset 0 of its own file",
    },
    Entry {
        name: "write1",
        test: Some(Test::Write1),
        description: "separate file write: 4 KiB writes, rewinding every 1 MiB",
    },
    Entry {
        name: "unlink1",
        test: Some(Test::Unlink1),
        description: "separate file open/close/unlink: create, close, unlink its own file",
    },
    Entry {
        name: "unlink2",
        test: Some(Test::Unlink2),
        description: "as unlink1, each task in its own directory",
    },
    Entry {
        name: "openneg",
        test: Some(Test::Openneg),
        description: "seed 001: open of a missing file, expecting ENOENT",
    },
    Entry {
        name: "getfl",
        test: Some(Test::Getfl),
        description: "seed 003: fcntl(fd, F_GETFL) on its own open file, one fd lookup per call",
    },
    Entry {
        name: "dup100",
        test: Some(Test::Dup100),
        description: "seed 004: dup/close with 100 copies open and the lowest hole past word 0",
    },
    Entry {
        name: "fstree",
        test: None,
        description: "planned (seed 002): stat walk over per-task trees larger than the caches",
    },
    Entry {
        name: "blogbench",
        test: None,
        description: "planned (seed 004): blogbench-like writers, rewriters, readers, commenters",
    },
];

impl Test {
    /// Looks a test up by name: `Err` with a message for an unknown or a
    /// planned one.
    pub fn from_name(name: &str) -> Result<Test, String> {
        match TESTS.iter().find(|e| e.name == name) {
            Some(Entry { test: Some(t), .. }) => Ok(*t),
            Some(_) => Err(format!("test {name} is planned, not implemented yet")),
            None => Err(format!(
                "unknown test {name}; `uvfs-bench list` shows the tests"
            )),
        }
    }

    /// The test's name.
    pub fn name(self) -> &'static str {
        TESTS
            .iter()
            .find(|e| e.test == Some(self))
            .map(|e| e.name)
            .expect("every test is listed")
    }

    /// Every implemented test.
    pub fn all() -> impl Iterator<Item = Test> {
        TESTS.iter().filter_map(|e| e.test)
    }
}

/// What the preparation made for all tasks.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Files to unlink at cleanup.
    files: Vec<CString>,
}

/// The file all tasks share in open3, lseek2 and read2.
fn shared_file(workdir: &str) -> CString {
    cpath(format!("{workdir}/willitscale.shared"))
}

/// Task `n`'s own file name.
fn own_file(workdir: &str, n: usize) -> CString {
    cpath(format!("{workdir}/willitscale.{n}"))
}

/// Task `n`'s own directory.
fn own_dir(workdir: &str, n: usize) -> CString {
    cpath(format!("{workdir}/willitscale.{n}.d"))
}

/// Creates `path` (it must not exist) holding `len` zero bytes; returns
/// the fd, open read-write.
fn create_file<S: Sys>(sys: &mut S, path: &CString, len: usize) -> Result<i32, Errno> {
    let fd = sys.open(path, uapi::O_RDWR | uapi::O_CREAT | uapi::O_EXCL, 0o600)?;
    let buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        done += sys.write(fd, &buf[done..])?;
    }
    Ok(fd)
}

/// The shared preparation, run once before the tasks exist.
pub fn prepare<S: Sys>(
    test: Test,
    sys: &mut S,
    workdir: &str,
    tasks: usize,
) -> Result<Prepared, Errno> {
    let mut files = Vec::new();
    let size = match test {
        Test::Open1 => {
            for n in 0..tasks {
                let path = own_file(workdir, n);
                let fd = create_file(sys, &path, 0)?;
                sys.close(fd)?;
                files.push(path);
            }
            return Ok(Prepared { files });
        }
        Test::Open3 => 0,
        Test::Lseek2 => BUFLEN,
        Test::Read2 => FILESIZE,
        _ => return Ok(Prepared { files }),
    };
    let path = shared_file(workdir);
    let fd = create_file(sys, &path, size)?;
    sys.close(fd)?;
    files.push(path);
    Ok(Prepared { files })
}

/// Undoes [`prepare`].
pub fn cleanup<S: Sys>(sys: &mut S, prepared: Prepared) -> Result<(), Errno> {
    for f in &prepared.files {
        sys.unlink(f)?;
    }
    Ok(())
}

/// One task's state: what its loop works on.
#[derive(Debug)]
pub struct TaskState {
    test: Test,
    /// The fd the loop uses, or -1.
    fd: i32,
    /// The path the loop opens (or creates and unlinks).
    path: CString,
    /// The task's own directory, if it has one.
    dir: Option<CString>,
    /// Unlink `path` at teardown (a file the setup made and kept).
    unlink_path: bool,
    buf: Vec<u8>,
    /// Bytes written since the last rewind (write1).
    size: usize,
    /// Extra fds held open for the loop's duration (dup100).
    extra: Vec<i32>,
}

/// Task `n`'s setup (in the task's own process or thread, before the start).
pub fn setup<S: Sys>(test: Test, sys: &mut S, workdir: &str, n: usize) -> Result<TaskState, Errno> {
    let mut st = TaskState {
        test,
        fd: -1,
        path: own_file(workdir, n),
        dir: None,
        unlink_path: false,
        buf: vec![0u8; BUFLEN],
        size: 0,
        extra: Vec::new(),
    };
    match test {
        Test::Open1 | Test::Unlink1 => {}
        Test::Open2 | Test::Unlink2 => {
            let dir = own_dir(workdir, n);
            sys.mkdir(&dir, 0o700)?;
            st.path = cpath(format!("{}/willitscale", dir.to_str().expect("UTF-8 path")));
            st.dir = Some(dir);
            if test == Test::Open2 {
                let fd = create_file(sys, &st.path, 0)?;
                sys.close(fd)?;
                st.unlink_path = true;
            }
        }
        Test::Open3 => st.path = shared_file(workdir),
        Test::Openneg => st.path = cpath(format!("{workdir}/nonexistent")),
        Test::Dup1 | Test::Getfl => {
            st.fd = create_file(sys, &st.path, 0)?;
            st.unlink_path = true;
        }
        Test::Dup100 => {
            st.fd = create_file(sys, &st.path, 0)?;
            st.unlink_path = true;
            for _ in 0..DUP100_COPIES {
                let d = sys.dup(st.fd)?;
                st.extra.push(d);
            }
            // The hole: the loop's dup finds it as the lowest free fd (in
            // processes mode; threads share one table and its holes).
            let hole = st.extra.remove(DUP100_HOLE);
            sys.close(hole)?;
        }
        Test::Lseek1 | Test::Read1 | Test::Pread1 | Test::Write1 => {
            let len = match test {
                Test::Read1 => FILESIZE,
                Test::Write1 => 0,
                _ => BUFLEN,
            };
            st.fd = create_file(sys, &st.path, len)?;
            sys.unlink(&st.path)?;
        }
        Test::Lseek2 => st.fd = sys.open(&shared_file(workdir), uapi::O_RDWR, 0)?,
        Test::Read2 => st.fd = sys.open(&shared_file(workdir), uapi::O_RDONLY, 0)?,
    }
    Ok(st)
}

/// Undoes [`setup`].
pub fn teardown<S: Sys>(sys: &mut S, st: TaskState) -> Result<(), Errno> {
    for &fd in &st.extra {
        sys.close(fd)?;
    }
    if st.fd >= 0 {
        sys.close(st.fd)?;
    }
    if st.unlink_path {
        sys.unlink(&st.path)?;
    }
    if let Some(dir) = &st.dir {
        // unlink2 may have been stopped by an error between its create and
        // its unlink.
        if st.test == Test::Unlink2 {
            match sys.unlink(&st.path) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
        sys.rmdir(dir)?;
    }
    if st.test == Test::Unlink1 {
        match sys.unlink(&st.path) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Runs `body` until `stop` is set, publishing the iteration count in
/// `count` after each iteration (will-it-scale bumps a counter in shared
/// memory the same way).
#[inline(always)]
fn iterate(
    count: &AtomicU64,
    stop: &AtomicBool,
    mut body: impl FnMut() -> Result<(), Errno>,
) -> Result<(), Errno> {
    let mut n = 0u64;
    while !stop.load(Relaxed) {
        body()?;
        n += 1;
        count.store(n, Relaxed);
    }
    Ok(())
}

/// The test's loop, until `stop`; an unexpected result ends it with that
/// error (`EIO` for a short pread, `EEXIST` when openneg's file exists).
pub fn run<S: Sys>(
    sys: &mut S,
    st: &mut TaskState,
    count: &AtomicU64,
    stop: &AtomicBool,
) -> Result<(), Errno> {
    let fd = st.fd;
    let path = st.path.as_c_str();
    let buf = &mut st.buf[..];
    match st.test {
        Test::Open1 | Test::Open2 | Test::Open3 => iterate(count, stop, || {
            let fd = sys.open(path, uapi::O_RDWR, 0)?;
            sys.close(fd)
        }),
        Test::Dup1 | Test::Dup100 => iterate(count, stop, || {
            let fd2 = sys.dup(fd)?;
            sys.close(fd2)
        }),
        Test::Lseek1 | Test::Lseek2 => {
            iterate(count, stop, || sys.lseek(fd, 0, uapi::SEEK_SET).map(drop))
        }
        Test::Read1 | Test::Read2 => iterate(count, stop, || {
            if sys.read(fd, buf)? == 0 {
                sys.lseek(fd, 0, uapi::SEEK_SET)?;
            }
            Ok(())
        }),
        Test::Pread1 => iterate(count, stop, || {
            if sys.pread(fd, buf, 0)? != BUFLEN {
                return Err(Errno::EIO);
            }
            Ok(())
        }),
        Test::Write1 => {
            let size = &mut st.size;
            iterate(count, stop, || {
                *size += sys.write(fd, buf)?;
                if *size >= FILESIZE {
                    *size = 0;
                    sys.lseek(fd, 0, uapi::SEEK_SET)?;
                }
                Ok(())
            })
        }
        Test::Unlink1 | Test::Unlink2 => iterate(count, stop, || {
            let fd = sys.open(path, uapi::O_RDWR | uapi::O_CREAT, 0o600)?;
            sys.close(fd)?;
            sys.unlink(path)
        }),
        Test::Getfl => iterate(count, stop, || sys.fcntl(fd, uapi::F_GETFL, 0).map(drop)),
        Test::Openneg => iterate(count, stop, || match sys.open(path, uapi::O_RDONLY, 0) {
            Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(e),
            Ok(fd) => {
                sys.close(fd)?;
                Err(Errno::EEXIST)
            }
        }),
    }
}
