//! Minimal reproductions of the mismatches the path API's differential test
//! (`path_differential.rs`) found: the fixed ones must keep agreeing with
//! the host kernel; the known ones (still open) run with `--ignored`.
#![cfg(target_os = "linux")]

mod support;

use support::pathdiff::*;

fn p(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Minimal reproductions of the known mismatches, one per finding of
/// the diff-findings notes (the generator leaves these cases out unless
/// `UVFS_DIFF_KNOWN` is set). Each starts in a fresh sandbox directory (the
/// cwd); `#0` is the first fd opened.
fn known_cases() -> Vec<(&'static str, Vec<Op>)> {
    let rw = O_RDWR | O_CREAT;
    let x = |len| Data { len, seed: 1 };
    let omit = Ts {
        sec: 0,
        nsec: UTIME_OMIT,
    };
    vec![
        (
            "finding 1: pread/pwrite with pos + count overflowing i64 (EINVAL)",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Pwrite(Fd::Idx(0), x(1), i64::MAX),
                Op::Pread(Fd::Idx(0), 4096, i64::MAX),
            ],
        ),
        (
            "finding 2: open of a directory with access mode 3 (EISDIR)",
            vec![Op::Mkdir(p("c"), 0o755), Op::Open(p("c"), 3, 0)],
        ),
        (
            "finding 3: statx result mask and attributes_mask",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Statx(Fd::Cwd, p("d"), 0, STATX_BASIC_STATS),
                Op::Statx(Fd::Cwd, p("d"), 0, 1),
            ],
        ),
        (
            "finding 4: utimensat checks the times after the path lookup",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Utimensat(
                    Fd::Idx(0),
                    p("l"),
                    Some([
                        Ts {
                            sec: 7,
                            nsec: 1_000_000_000,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_NOW,
                        },
                    ]),
                    0,
                ),
            ],
        ),
        (
            "finding 5: getdents64 at a position past the last cookie lists from the head",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Lseek(Fd::Idx(2), 100, SEEK_SET),
                Op::Getdents(Fd::Idx(2), 4096),
                Op::Lseek(Fd::Idx(2), 1 << 40, SEEK_SET),
                Op::Getdents(Fd::Idx(2), 4096),
            ],
        ),
        (
            "finding 5b: past EOD, resume at the entry with the largest cookie, not the head",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("c"), rw, 0o644),
                // "a" (cookie 3) replaced by c: at the head with cookie 3.
                Op::Rename(p("c"), p("a")),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Getdents(Fd::Idx(3), 4096),
                Op::Lseek(Fd::Idx(3), 100, SEEK_SET),
                Op::Getdents(Fd::Idx(3), 4096),
                Op::Lseek(Fd::Idx(3), 1 << 40, SEEK_SET),
                Op::Getdents(Fd::Idx(3), 4096),
            ],
        ),
        (
            "finding 6: O_TMPFILE | O_PATH opens the directory as O_PATH",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Open(p("d"), O_TMPFILE | O_PATH | O_RDWR, 0o644),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 7: RENAME_EXCHANGE/NOREPLACE check the target before the source's trailing slash",
            vec![
                Op::Open(p("l"), rw, 0o644),
                Op::Open(p("a"), rw, 0o644),
                Op::Renameat2(Fd::Cwd, p("l/"), Fd::Cwd, p("nx"), 2),
                Op::Renameat2(Fd::Cwd, p("l/"), Fd::Cwd, p("a"), 1),
            ],
        ),
        (
            "finding 8: read updates an old atime (relatime)",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Write(Fd::Idx(0), x(10)),
                Op::Futimens(
                    Fd::Idx(0),
                    Some([
                        Ts {
                            sec: 1_000_000_000,
                            nsec: 0,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_OMIT,
                        },
                    ]),
                ),
                Op::Pread(Fd::Idx(0), 10, 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 9: negative pread/pwrite offset and ftruncate length are checked before the fd",
            vec![
                Op::Pwrite(Fd::Bad(1_000_000), x(1), -1),
                Op::Pread(Fd::Bad(-1), 1, -1),
                Op::Ftruncate(Fd::Bad(1_000_000), -1),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Pwrite(Fd::Idx(0), x(1), -1),
            ],
        ),
        (
            "finding 10: utimensat/futimens with both times UTIME_OMIT succeed before any check",
            vec![
                Op::Utimensat(Fd::Cwd, p("missing"), Some([omit, omit]), 0),
                Op::Utimensat(Fd::Cwd, p("missing"), Some([omit, omit]), 1),
                Op::Futimens(Fd::Bad(1_000_000), Some([omit, omit])),
            ],
        ),
        (
            "finding 11: futimens on an O_PATH fd is EBADF",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("a"), O_PATH, 0),
                Op::Futimens(Fd::Idx(1), None),
            ],
        ),
        (
            "finding 12: lookup in a removed directory is ENOENT before ENAMETOOLONG",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Chdir(p("d")),
                Op::Rmdir(p("../d")),
                Op::Access(vec![b'y'; 256], 0),
            ],
        ),
        (
            "finding 13: readlinkat with an empty path on a non-symlink is ENOENT",
            vec![
                Op::Mkdir(p("t"), 0o755),
                Op::Open(p("t"), O_RDONLY, 0),
                Op::Readlinkat(Fd::Idx(0), Vec::new(), 4096),
                Op::Readlinkat(Fd::Cwd, Vec::new(), 4096),
            ],
        ),
        (
            "finding 14: a getdents64 that reaches the end leaves the position at the end cookie",
            vec![
                Op::Mkdir(p("e"), 0o755),
                Op::Open(p("e"), O_RDONLY | O_DIRECTORY, 0),
                Op::Lseek(Fd::Idx(0), 100, SEEK_SET),
                Op::Getdents(Fd::Idx(0), 4096),
                Op::Lseek(Fd::Idx(0), 0, SEEK_CUR),
                Op::Open(p("e/f"), rw, 0o644),
                Op::Getdents(Fd::Idx(0), 4096),
            ],
        ),
        (
            "finding 15: readv/writev of zero total length return 0 before the file-type checks",
            vec![
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Readv(Fd::Idx(0), vec![]),
                Op::Readv(Fd::Idx(0), vec![0, 0]),
            ],
        ),
        (
            "finding 16: open of an existing \".\" with O_CREAT | O_EXCL is EEXIST",
            vec![Op::Open(p("."), O_CREAT | O_EXCL | O_RDWR, 0o644)],
        ),
        (
            "finding 17: a getdents64 too small for the next entry (EINVAL) still moves the position",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Lseek(Fd::Idx(2), 12288, SEEK_SET),
                Op::Getdents(Fd::Idx(2), 10),
                Op::Lseek(Fd::Idx(2), 0, SEEK_CUR),
                Op::Open(p("c"), rw, 0o644),
                Op::Getdents(Fd::Idx(2), 4096),
            ],
        ),
        (
            "finding 18: O_DIRECT open of a directory is EINVAL",
            vec![Op::Mkdir(p("b"), 0o755), Op::Open(p("b"), O_DIRECT, 0)],
        ),
        (
            "finding 19: open's flag checks (EINVAL) come before the path (ENAMETOOLONG)",
            vec![Op::Open(
                vec![b'a'; 4096],
                O_CREAT | O_DIRECTORY | O_WRONLY,
                0o644,
            )],
        ),
        (
            "finding 20: fallocate over already fallocated pages makes them data for SEEK_DATA",
            vec![
                Op::Open(p("f"), rw, 0o644),
                Op::Fallocate(Fd::Idx(0), 0, 1 << 20, 1 << 20),
                Op::Lseek(Fd::Idx(0), 0, SEEK_DATA),
                Op::Fallocate(Fd::Idx(0), 0, 1 << 20, 8192),
                Op::Lseek(Fd::Idx(0), 0, SEEK_DATA),
                Op::Lseek(Fd::Idx(0), 1 << 20, SEEK_HOLE),
            ],
        ),
        (
            "finding 21: RENAME_EXCHANGE: a trailing slash requires that name to be a directory",
            vec![
                Op::Open(p("b"), rw, 0o644),
                Op::Open(p("m"), rw, 0o644),
                Op::Mkdir(p("d"), 0o755),
                Op::Renameat2(Fd::Cwd, p("b"), Fd::Cwd, p("d/"), 2),
                Op::Renameat2(Fd::Cwd, p("b"), Fd::Cwd, p("m/"), 2),
            ],
        ),
        (
            "finding 22: O_TMPFILE | O_NOFOLLOW on a symlink is ENOTDIR",
            vec![
                Op::Mkdir(p("d"), 0o755),
                Op::Symlink(p("d"), p("t")),
                Op::Open(p("t"), O_TMPFILE | O_NOFOLLOW | O_RDWR, 0o644),
                Op::Open(p("missing-link"), O_TMPFILE | O_NOFOLLOW | O_RDWR, 0o644),
            ],
        ),
        (
            "finding 23: chown with uid and gid both -1 still changes ctime",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Fstat(Fd::Idx(0)),
                Op::Fchownat(Fd::Cwd, p("a"), u32::MAX, u32::MAX, 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 24a: rename into a removed directory is ENOENT before the trailing-slash ENOTDIR",
            vec![
                Op::Open(p("t"), rw, 0o644),
                Op::Mkdir(p("b"), 0o755),
                Op::Open(p("b"), O_RDONLY | O_DIRECTORY, 0),
                Op::Rmdir(p("b")),
                Op::Renameat2(Fd::Cwd, p("t"), Fd::Idx(1), p("z1/"), 0),
            ],
        ),
        (
            "finding 24b: rename of an ancestor into a removed cwd is ENOENT, not EINVAL",
            vec![
                Op::Mkdir(p("l"), 0o755),
                Op::Chdir(p("l")),
                Op::Rmdir(p("../l")),
                Op::Rename(p("/dev/shm"), p("m")),
            ],
        ),
        (
            "finding 24c: link of a directory into a removed cwd is ENOENT, not EPERM",
            vec![
                Op::Mkdir(p("l"), 0o755),
                Op::Chdir(p("l")),
                Op::Rmdir(p("../l")),
                Op::Link(p(".."), p("d")),
            ],
        ),
        (
            "finding 24d: linkat(AT_EMPTY_PATH) of a removed cwd to a name cached as negative: ENOENT, not EPERM",
            vec![
                Op::Open(p("."), O_RDONLY | O_DIRECTORY, 0),
                Op::Mkdirat(Fd::Idx(0), p("a/"), 0o755),
                Op::Chdir(p("a")),
                // A negative dentry for the new name, in the directory to be
                // removed.
                Op::Unlink(p("a")),
                Op::Unlinkat(Fd::Idx(0), p("a"), AT_REMOVEDIR),
                Op::Linkat(Fd::Cwd, Vec::new(), Fd::Cwd, p("a"), AT_EMPTY_PATH),
            ],
        ),
        (
            "finding 25: truncate(2) to the current size changes neither mtime nor ctime",
            vec![
                Op::Open(p("f"), rw, 0o644),
                Op::Fstat(Fd::Idx(0)),
                Op::Truncate(p("f"), 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 26: rename looks both names up before the trailing-slash checks",
            vec![
                Op::Open(p("c"), rw, 0o644),
                Op::Rename(p("c/"), vec![b'y'; 256]),
            ],
        ),
        (
            "finding 27: O_CREAT|O_NOFOLLOW on another user's symlink in a sticky world-writable directory is EACCES",
            vec![
                Op::Symlink(p("a"), p("l")),
                Op::Chmod(p("."), 0o1777),
                Op::Lchown(p("l"), 1000, 0),
                Op::Open(p("l"), O_CREAT | O_NOFOLLOW | O_WRONLY, 0o644),
            ],
        ),
        (
            "finding 28: SEEK_HOLE after data in the last page before i64::MAX",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Pwrite(Fd::Idx(0), x(4096), i64::MAX - 4096),
                Op::Lseek(Fd::Idx(0), 0, SEEK_DATA),
                Op::Lseek(Fd::Idx(0), i64::MAX - 8191, SEEK_HOLE),
            ],
        ),
        (
            "finding 29: a zero-length read updates atime",
            vec![
                Op::Open(p("a"), rw, 0o644),
                Op::Futimens(
                    Fd::Idx(0),
                    Some([
                        Ts {
                            sec: 1_000_000_000,
                            nsec: 0,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_OMIT,
                        },
                    ]),
                ),
                Op::Read(Fd::Idx(0), 0),
                Op::Fstat(Fd::Idx(0)),
            ],
        ),
        (
            "finding 30: following a symlink updates the symlink's atime",
            vec![
                Op::Symlink(p("missing"), p("z0")),
                Op::Utimensat(
                    Fd::Cwd,
                    p("z0"),
                    Some([
                        Ts {
                            sec: 1_000_000_000,
                            nsec: 0,
                        },
                        Ts {
                            sec: 0,
                            nsec: UTIME_OMIT,
                        },
                    ]),
                    AT_SYMLINK_NOFOLLOW,
                ),
                Op::Stat(p("z0")),
                Op::Lstat(p("z0")),
            ],
        ),
        (
            "finding 32: 40 links before the last component, then a trailing symlink: ELOOP",
            {
                let mut v = vec![
                    Op::Mkdir(p("l"), 0o755),
                    Op::Mkdir(p("a"), 0o755),
                    Op::Mkdir(p("a/e"), 0o755),
                    Op::Symlink(p("../../l"), p("a/e/f")),
                ];
                // z1 -> z2 -> ... -> z40 -> a: 40 links to reach a.
                for i in 1..=40 {
                    let t = if i == 40 {
                        p("a")
                    } else {
                        format!("z{}", i + 1).into_bytes()
                    };
                    v.push(Op::Symlink(t, format!("z{i}").into_bytes()));
                }
                v.push(Op::Stat(p("z1/e")));
                v.push(Op::Open(p("z1/e/f"), O_RDONLY, 0));
                v.push(Op::Open(p("z1/e/f"), O_RDWR | O_CREAT, 0o644));
                v
            },
        ),
        (
            "finding 31: futimens with a negative fd is EBADF (glibc), also with both times UTIME_OMIT",
            vec![Op::Futimens(Fd::Bad(-2), Some([omit, omit]))],
        ),
    ]
}

fn run_cases(fixed: bool) {
    let mut failed = Vec::new();
    for (name, ops) in known_cases() {
        if is_fixed(name) != fixed {
            continue;
        }
        if let Some(report) = check_ops(name, ops) {
            eprintln!("{report}");
            failed.push(name);
        }
    }
    assert!(failed.is_empty(), "still mismatching: {failed:#?}");
}

/// The known mismatches, still present: run with `--ignored` to see which
/// remain (each is listed in the diff-findings notes).
#[test]
#[ignore = "known mismatch: see notes"]
fn known_mismatches() {
    run_cases(false);
}

/// The reproductions of fixed findings must keep agreeing.
#[test]
fn fixed_findings_stay_fixed() {
    run_cases(true);
}
