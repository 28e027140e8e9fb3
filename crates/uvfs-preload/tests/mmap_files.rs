//! mmap of uvfs files (issue 14, item 3): `MAP_SHARED` and `MAP_PRIVATE`,
//! coherence with `read`/`write` both ways, across `fork`, `msync`,
//! `mprotect`, `munmap`, `SIGBUS` past the end after a truncation, stat
//! and `SEEK_DATA`/`SEEK_HOLE` of a file before and after its first
//! mapping, and the errors of `mmap` in Linux's order — a C program run on
//! a host directory and under the shim, with the same output; then git
//! (which maps its index and pack files) and sqlite in WAL mode (which maps
//! its `-shm` file) under the prefix.

use std::path::Path;

mod support;
use support::cprog::{Scratch, compile_c, err, have, host_reference, out, run, shim_matches};

const C_MMAP: &str = r##"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uvfs_test.h"

static sigjmp_buf jb;
static void on_bus(int s) { siglongjmp(jb, s); }
/* Reads byte `i` of `m`: the byte, or -SIGBUS / -SIGSEGV. */
static int peek(volatile char *m, long i) {
    int s = sigsetjmp(jb, 1);
    if (s) return -s;
    return (unsigned char)m[i];
}
static int poke(volatile char *m, long i, char c) {
    int s = sigsetjmp(jb, 1);
    if (s) return -s;
    m[i] = c;
    return 0;
}

#define MM(tag, len, prot, flags, fd, off) do { \
    errno = 0; void *m_ = mmap(0, len, prot, flags, fd, off); \
    printf("%s: %s errno %d\n", tag, m_ == MAP_FAILED ? "failed" : "mapped", m_ == MAP_FAILED ? errno : 0); \
    if (m_ != MAP_FAILED) munmap(m_, len); } while (0)

static void layout(const char *tag, int fd) {
    struct stat st;
    fstat(fd, &st);
    printf("%s: size %ld blocks %ld", tag, (long)st.st_size, (long)st.st_blocks);
    long offs[] = {0, 1, 4096, 8192, 16384, 20000, 40000, 45055};
    for (int i = 0; i < 8; i++) {
        errno = 0;
        long d = lseek(fd, offs[i], SEEK_DATA);
        int de = errno;
        errno = 0;
        long h = lseek(fd, offs[i], SEEK_HOLE);
        printf(" [%ld d%ld/%d h%ld/%d]", offs[i], d, d < 0 ? de : 0, h, h < 0 ? errno : 0);
    }
    printf("\n");
}

int main(int argc, char **argv) {
    snprintf(P, sizeof P, "%s", argv[1]);
    struct sigaction sa = { .sa_handler = on_bus };
    sigaction(SIGBUS, &sa, 0);
    sigaction(SIGSEGV, &sa, 0);
    char buf[64];

    /* Shared mapping, coherent both ways. */
    int fd = open(at("f"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "hello world", 11);
    char *m = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("shared: %s '%.11s'\n", m == MAP_FAILED ? "failed" : "mapped", m == MAP_FAILED ? "" : m);
    m[0] = 'H';
    memset(buf, 0, sizeof buf);
    pread(fd, buf, 11, 0);
    printf("read after map write: '%s'\n", buf);
    pwrite(fd, "W", 1, 6);
    printf("map after pwrite: '%.11s'\n", m);
    printf("past size in page: %d\n", peek(m, 100));
    printf("page past the end: %d\n", peek(m, 4096));
    m[20] = 'x'; /* beyond the size, inside the last page: not file data */
    struct stat st;
    fstat(fd, &st);
    printf("size %ld blocks %ld\n", (long)st.st_size, (long)st.st_blocks);
    printf("msync %d\n", msync(m, 4096, MS_SYNC));
    printf("msync async %d\n", msync(m, 4096, MS_ASYNC | MS_INVALIDATE));

    /* Growing with ftruncate: the second page appears in the mapping. */
    ftruncate(fd, 8192);
    printf("after grow: %d %d\n", peek(m, 20), peek(m, 5000));
    m[5000] = 'y';
    pread(fd, buf, 1, 5000);
    printf("read grown page '%c'\n", buf[0]);
    fstat(fd, &st);
    printf("size %ld blocks %ld\n", (long)st.st_size, (long)st.st_blocks);

    /* Shrinking: SIGBUS past the end. */
    ftruncate(fd, 100);
    printf("after shrink: %d %d %d\n", peek(m, 50), peek(m, 4000), peek(m, 5000));
    printf("poke past end: %d\n", poke(m, 6000, 'z'));
    fstat(fd, &st);
    printf("size %ld blocks %ld\n", (long)st.st_size, (long)st.st_blocks);

    /* Private mapping: copy on write. */
    char *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    printf("private: '%.5s'\n", p);
    pwrite(fd, "J", 1, 0);
    printf("private sees untouched page's change: '%c'\n", p[0]);
    p[1] = 'Q';
    pwrite(fd, "K", 1, 0);
    pread(fd, buf, 5, 0);
    printf("private '%.5s' file '%.5s' shared '%.5s'\n", p, buf, m);
    munmap(p, 4096);

    /* fork: the child's writes through the mapping and through the fd
       reach the parent. */
    pid_t c = fork();
    if (c == 0) {
        m[2] = 'C';
        pwrite(fd, "D", 1, 3);
        _exit(0);
    }
    waitpid(c, 0, 0);
    pread(fd, buf, 5, 0);
    printf("after child: map '%.5s' file '%.5s'\n", m, buf);

    /* O_TRUNC through another open: the mapping loses its pages. */
    int t = open(at("f"), O_RDWR | O_TRUNC);
    printf("after O_TRUNC: %d\n", peek(m, 0));
    write(t, "again", 5);
    printf("after rewrite: '%.5s'\n", m);
    close(t);
    printf("munmap %d\n", munmap(m, 8192));
    close(fd);

    /* The mapping outlives the fd and the name. */
    fd = open(at("g"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "kept", 4);
    m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    unlink(at("g"));
    m[0] = 'K';
    printf("after close and unlink: '%.4s'\n", m);
    munmap(m, 4096);

    /* An empty file maps, and faults. */
    fd = open(at("empty"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    m = mmap(0, 4096, PROT_READ, MAP_SHARED, fd, 0);
    printf("empty: %s %d\n", m == MAP_FAILED ? "failed" : "mapped", m == MAP_FAILED ? 0 : peek(m, 0));
    if (m != MAP_FAILED) munmap(m, 4096);
    close(fd);

    /* Holes, preallocation and blocks before and after the first mapping,
       then the data calls on the mapped file. */
    fd = open(at("h"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    pwrite(fd, "a", 1, 0);
    fallocate(fd, FALLOC_FL_KEEP_SIZE, 16384, 8192);
    fallocate(fd, FALLOC_FL_KEEP_SIZE, 20480, 4096); /* again: zeroed data */
    pwrite(fd, "b", 1, 40000);
    fallocate(fd, FALLOC_FL_KEEP_SIZE, 45056, 8192); /* past the size */
    layout("before", fd);
    m = mmap(0, 40960, PROT_READ, MAP_SHARED, fd, 0);
    layout("mapped", fd);
    printf("map reads %d %d %d\n", peek(m, 0), peek(m, 16384), peek(m, 40000));
    fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096);
    layout("punched", fd);
    printf("punched page reads %d\n", peek(m, 0));
    fallocate(fd, 0, 8192, 4096);
    fallocate(fd, 0, 60000, 100);
    layout("allocated", fd);
    pwrite(fd, "c", 1, 70000);
    layout("written past", fd);
    ftruncate(fd, 30000);
    layout("truncated", fd);
    errno = 0;
    int fr = fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 1);
    printf("fallocate bad mode %d errno %d\n", fr, errno);
    printf("seek end %ld\n", (long)lseek(fd, 0, SEEK_END));
    printf("pread at end %zd, past %zd\n", pread(fd, buf, 10, 29995), pread(fd, buf, 10, 40000));
    munmap(m, 40960);
    close(fd);

    /* Closing every other fd number (as a daemon or a child before its
       work does) leaves the mapped file's data alone. */
    fd = open(at("z"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "zz", 2);
    m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    for (int i = fd + 1; i < 70000; i++) close(i);
    close_range(fd + 1, ~0U, 0);
    m[0] = 'Z';
    memset(buf, 0, sizeof buf);
    pread(fd, buf, 2, 0);
    pwrite(fd, "Y", 1, 1);
    printf("after closing every other fd: read '%s' map '%.2s'\n", buf, m);
    munmap(m, 4096);
    close(fd);

    /* Errors, in Linux's order. */
    int rw = open(at("e"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(rw, "eeee", 4);
    int ro = open(at("e"), O_RDONLY);
    int wo = open(at("e"), O_WRONLY);
    int ap = open(at("e"), O_RDWR | O_APPEND);
    int pa = open(at("e"), O_PATH);
    int dir = open(P, O_RDONLY | O_DIRECTORY);
    int closed = open(at("e"), O_RDONLY);
    close(closed);
    MM("ro shared read", 4096, PROT_READ, MAP_SHARED, ro, 0);
    MM("ro shared write", 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0);
    MM("ro private write", 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0);
    MM("wo private read", 4096, PROT_READ, MAP_PRIVATE, wo, 0);
    MM("wo shared write", 4096, PROT_WRITE, MAP_SHARED, wo, 0);
    MM("wo shared none", 4096, PROT_NONE, MAP_SHARED, wo, 0);
    MM("append shared write", 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ap, 0);
    MM("O_PATH", 4096, PROT_READ, MAP_PRIVATE, pa, 0);
    MM("directory", 4096, PROT_READ, MAP_PRIVATE, dir, 0);
    MM("directory len 0", 0, PROT_READ, MAP_PRIVATE, dir, 0);
    MM("directory no type", 4096, PROT_READ, 0, dir, 0);
    MM("closed", 4096, PROT_READ, MAP_PRIVATE, closed, 0);
    MM("closed odd offset", 4096, PROT_READ, MAP_PRIVATE, closed, 1);
    MM("len 0", 0, PROT_READ, MAP_SHARED, rw, 0);
    MM("wo len 0", 0, PROT_READ, MAP_SHARED, wo, 0);
    MM("odd offset", 4096, PROT_READ, MAP_SHARED, rw, 100);
    MM("no type", 4096, PROT_READ, 0, rw, 0);
    MM("both types", 4096, PROT_READ, MAP_SHARED | MAP_PRIVATE, rw, 0);
    MM("validate unknown bit", 4096, PROT_READ, MAP_SHARED_VALIDATE | 0x4000000, rw, 0);
    MM("validate MAP_SYNC", 4096, PROT_READ, MAP_SHARED_VALIDATE | MAP_SYNC, rw, 0);
    MM("huge offset", 4096, PROT_READ, MAP_SHARED, rw, 0x7ffffffffffff000L);
    MM("huge length", (size_t)-4096, PROT_READ, MAP_SHARED, rw, 0);
    MM("offset past end", 4096, PROT_READ, MAP_SHARED, rw, 1L << 30);
    m = mmap(0, 4096, PROT_READ, MAP_SHARED, ro, 0);
    errno = 0;
    int pr = mprotect(m, 4096, PROT_READ | PROT_WRITE);
    printf("mprotect ro shared to write: %d errno %d\n", pr, errno);
    munmap(m, 4096);
    m = mmap(0, 4096, PROT_READ, MAP_PRIVATE, ro, 0);
    errno = 0;
    pr = mprotect(m, 4096, PROT_READ | PROT_WRITE);
    printf("mprotect ro private to write: %d errno %d\n", pr, errno);
    munmap(m, 4096);
    /* MAP_FIXED onto a mapping of ours: a failing call leaves it. */
    char *keep = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    keep[0] = 'k';
    MM("fixed directory", 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, dir, 0);
    printf("fixed target kept: %c\n", keep[0]);
    return 0;
}
"##;

/// The C program on a host directory and under the shim (prefix `/uvfs`,
/// cache on and off): the same output, and the host run shows what the
/// test is about.
#[test]
fn c_mmap_matches_the_host() {
    let dir = Scratch::new("mmap");
    let Some(bin) = compile_c(&dir, C_MMAP) else {
        return;
    };
    let host_d = dir.join("host");
    std::fs::create_dir(&host_d).unwrap();
    let host_out = host_reference(
        &[&bin, host_d.to_str().unwrap()],
        &[
            "shared: mapped 'hello world'",
            "read after map write: 'Hello world'",
            "map after pwrite: 'Hello World'",
            "page past the end: -7",
            "after shrink: 0 0 -7",
            "after child: map 'KeCDo' file 'KeCDo'",
            "after O_TRUNC: -7",
            "ro shared write: failed errno 13",
            "wo private read: failed errno 13",
            "directory: failed errno 19",
            "directory len 0: failed errno 22",
            "mprotect ro shared to write: -1 errno 13",
        ],
    );
    for cache in ["16", "0"] {
        let shim = shim_matches(
            &[&bin, "/uvfs"],
            // UVFS_TREE=0: the program forks, and this test is about the
            // in-process mmap (a tree maps through its mount instead; a
            // mapping made before the first child is docs/preload.md's
            // known gap).
            &[
                ("UVFS_PREFIX", "/uvfs"),
                ("UVFS_FD_CACHE", cache),
                ("UVFS_TREE", "0"),
            ],
            &host_out,
            &format!("UVFS_FD_CACHE={cache}"),
        );
        assert_eq!(err(&shim), "", "the shim said something");
    }
}

/// Runs `cmd` once in `/uvfs` under the shim, seeded from `from` and
/// dumped to `to` (each git command is its own process, hence its own
/// uvfs: the tree goes from one to the next through the host), or on the
/// host in `host` when `from` is `None`.
fn git(work: &Path, step: Option<(&Path, &Path)>, args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new("git");
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", work)
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .env("LC_ALL", "C")
        .args([
            "-c",
            "user.name=uvfs",
            "-c",
            "user.email=uvfs@example.com",
            "-c",
            "gc.auto=0",
            "-c",
            "maintenance.auto=false",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.fsmonitor=false",
        ]);
    match step {
        Some((from, to)) => {
            c.env("LD_PRELOAD", support::shim())
                .env("UVFS_PREFIX", "/uvfs")
                .env("UVFS_SEED", from)
                .env("UVFS_DUMP", to)
                .args(["-C", "/uvfs"]);
        }
        None => {
            c.arg("-C").arg(work.join("host"));
        }
    }
    c.args(args).output().unwrap()
}

/// git under the shim, one process per command (a command that spawns
/// others is issue 14's item 4): `hash-object` (which maps the file it
/// hashes), `init`, `add`, `commit`, `log`, `status`, `ls-files`,
/// `cat-file` (which read the index and pack files through mmap), each
/// with the output of the same command on a host directory, and the same
/// commit id.
#[test]
fn git_one_process_per_command() {
    if !have("git") {
        return;
    }
    let dir = Scratch::new("mmap-git");
    let w = dir.path();
    let host = w.join("host");
    std::fs::create_dir(&host).unwrap();
    let s0 = w.join("s0");
    std::fs::create_dir(&s0).unwrap();
    let big: String = (0..20000).map(|i| format!("line {i}\n")).collect();
    for d in [&host, &s0] {
        std::fs::write(d.join("a.txt"), "hello\n").unwrap();
        std::fs::write(d.join("big.txt"), &big).unwrap();
    }
    let steps: &[&[&str]] = &[
        &["hash-object", "big.txt"],
        &["init", "-q"],
        &["add", "a.txt", "big.txt"],
        &["commit", "-qm", "first"],
        &["log", "--format=%H %s"],
        &["status", "--porcelain"],
        &["ls-files", "-s"],
        &["cat-file", "-p", "HEAD:a.txt"],
        &["rev-parse", "HEAD"],
    ];
    let mut from = s0;
    for (i, args) in steps.iter().enumerate() {
        let h = git(w, None, args);
        assert!(h.status.success(), "host git {args:?}: {}", err(&h));
        let to = w.join(format!("s{}", i + 1));
        let u = git(w, Some((&from, &to)), args);
        assert!(
            u.status.success(),
            "git {args:?} under the shim: {}",
            err(&u)
        );
        assert_eq!(out(&u), out(&h), "git {args:?}: stderr {}", err(&u));
        from = to;
    }
    // The repository the shim's runs left is one the host's git accepts.
    let fsck = run(
        &["git", "-C", from.to_str().unwrap(), "fsck", "--strict"],
        false,
        &[],
    );
    assert!(
        fsck.status.success(),
        "git fsck: {}{}",
        out(&fsck),
        err(&fsck)
    );
}

/// sqlite3 in WAL mode under the prefix (its `-shm` index is a shared
/// mapping): create, fill, index, delete, checkpoint and query, with the
/// output of the same run on the host; the host's sqlite then reads the
/// database the shim's run left.
#[test]
fn sqlite_wal() {
    if !have("sqlite3") {
        return;
    }
    let dir = Scratch::new("mmap-sqlite");
    let sql = "\
PRAGMA journal_mode=WAL;
CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<3000)
  INSERT INTO t(v) SELECT printf('row %d', x) FROM c;
CREATE INDEX tv ON t(v);
DELETE FROM t WHERE id % 3 = 0;
SELECT count(*), sum(id) FROM t;
PRAGMA wal_checkpoint;
BEGIN; UPDATE t SET v = v || '!' WHERE id % 5 = 0; COMMIT;
SELECT v FROM t WHERE v LIKE 'row 299%' ORDER BY id;
PRAGMA integrity_check;
";
    let script = dir.join("q.sql");
    std::fs::write(&script, sql).unwrap();
    let sh = |db: &str| format!("sqlite3 {db} < {}", script.display());
    let host_db = dir.join("host.db");
    let host = run(&["sh", "-c", &sh(host_db.to_str().unwrap())], false, &[]);
    assert!(host.status.success(), "host sqlite3: {}", err(&host));
    assert!(out(&host).starts_with("wal\n"), "{}", out(&host));
    let seed = dir.join("seed");
    let dump = dir.join("dump");
    std::fs::create_dir(&seed).unwrap();
    let u = run(
        &["sh", "-c", &sh("/uvfs/db")],
        true,
        &[
            ("UVFS_PREFIX", "/uvfs"),
            ("UVFS_SEED", seed.to_str().unwrap()),
            ("UVFS_DUMP", dump.to_str().unwrap()),
            // The in-process mmap, in the exec'd sqlite3 with its own uvfs:
            // in a tree, dash (which ends with _exit, never running exit
            // handlers) would owe the dump.
            ("UVFS_TREE", "0"),
        ],
    );
    // `sh` runs sqlite3 (an exec: the shim is loaded again in it, with its
    // own uvfs, seeded and dumped by that process).
    assert!(u.status.success(), "sqlite3 under the shim: {}", err(&u));
    assert_eq!(out(&u), out(&host), "stderr: {}", err(&u));
    let check = run(
        &[
            "sqlite3",
            dump.join("db").to_str().unwrap(),
            "PRAGMA integrity_check; PRAGMA journal_mode; SELECT count(*), sum(length(v)) FROM t;",
        ],
        false,
        &[],
    );
    let again = run(
        &[
            "sqlite3",
            host_db.to_str().unwrap(),
            "PRAGMA integrity_check; PRAGMA journal_mode; SELECT count(*), sum(length(v)) FROM t;",
        ],
        false,
        &[],
    );
    assert!(check.status.success(), "{}", err(&check));
    assert_eq!(out(&check), out(&again));
}
