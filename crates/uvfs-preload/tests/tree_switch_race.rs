//! A call that races the tree's switch (`src/restart.rs`): a thread's call
//! that looked its uvfs fd up (or routed its path) before the process
//! became a client of its tree's mount, and reaches the fork gate after,
//! starts again on the kernel's side. The race is made to happen every
//! time by the shim's test hook: `UVFS_TEST_PARK=CALL:9` parks the first
//! call of hook `CALL` that found a uvfs fd, between its look-up and the
//! gate, after writing `P` to fd 9; the main thread, reading it, runs
//! `system`, whose switch reopens every uvfs fd through the mount; the
//! parked call then goes on. Each call's result must be what Linux gives
//! on the file (now the mount's), not `EBADF`, `POLLNVAL`, `EXDEV` or an
//! action on the process's private copy. A call that never parks (a
//! shim without the hook) fails the run: the worker's `D` comes first.
//!
//! These need root and `/dev/fuse`; without them each case is skipped.

mod support;
use support::tree::run_c_in_tree_env;

const PROGRAM: &str = r#"
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <unistd.h>
static const char *mode, *dir;
static int fd, out;
static DIR *d;
static char res[512];
static void *worker(void *a) {
    char buf[64] = {0};
    if (!strcmp(mode, "dup2")) {
        int r = dup2(fd, 20);
        int e = errno;
        ssize_t n = pread(20, buf, 5, 0);
        snprintf(res, sizeof res, "dup2 %d errno %d read %zd %s", r, r < 0 ? e : 0, n, buf);
    } else if (!strcmp(mode, "poll")) {
        struct pollfd p = { fd, POLLIN, 0 };
        int r = poll(&p, 1, 0);
        snprintf(res, sizeof res, "poll %d revents %#x", r, p.revents);
    } else if (!strcmp(mode, "select")) {
        /* A regular file: readable, no exceptional condition. */
        fd_set rs, xs;
        FD_ZERO(&rs);
        FD_SET(fd, &rs);
        FD_ZERO(&xs);
        FD_SET(fd, &xs);
        struct timeval tv = { 0, 0 };
        int r = select(fd + 1, &rs, 0, &xs, &tv);
        snprintf(res, sizeof res, "select %d read %d except %d errno %d", r, FD_ISSET(fd, &rs),
                 FD_ISSET(fd, &xs), r < 0 ? errno : 0);
    } else if (!strcmp(mode, "readdir")) {
        char names[8][8];
        int k = 0;
        struct dirent *e;
        errno = 0;
        while ((e = readdir(d)) && k < 8)
            if (e->d_name[0] != '.') snprintf(names[k++], 8, "%s", e->d_name);
        int err = errno;
        qsort(names, k, 8, (int (*)(const void *, const void *))strcmp);
        snprintf(res, sizeof res, "readdir %d errno %d:", k, err);
        for (int i = 0; i < k; i++) { strcat(res, " "); strcat(res, names[i]); }
    } else if (!strcmp(mode, "copy_file_range")) {
        loff_t oi = 0, oo = 0;
        ssize_t r = copy_file_range(fd, &oi, out, &oo, 6, 0);
        int e = errno;
        ssize_t n = pread(out, buf, 6, 0);
        snprintf(res, sizeof res, "copy_file_range %zd errno %d read %zd %s", r, r < 0 ? e : 0, n, buf);
    } else if (!strcmp(mode, "mmap")) {
        char *m = mmap(0, 4096, PROT_READ, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) snprintf(res, sizeof res, "mmap failed errno %d", errno);
        else snprintf(res, sizeof res, "mmap %.5s", m);
    } else if (!strcmp(mode, "mkstemp")) {
        char t[4096];
        snprintf(t, sizeof t, "%s/tmpXXXXXX", dir);
        int r = mkstemp(t);
        int e = errno;
        struct stat st;
        int seen = r >= 0 && fstat(r, &st) == 0 && stat(t, &st) == 0;
        snprintf(res, sizeof res, "mkstemp %s errno %d seen %d", r >= 0 ? "fd" : "-1", r < 0 ? e : 0, seen);
    }
    write(9, "D", 1);
    return a;
}
int main(int argc, char **argv) {
    mode = argv[1];
    dir = argv[2];
    char path[4096], cmd[8192];
    int p[2];
    if (pipe(p) || dup2(p[1], 9) != 9) return 2;
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/f", dir);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "hello\n", 6) != 6) return 3;
    snprintf(path, sizeof path, "%s/g", dir);
    out = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    snprintf(path, sizeof path, "%s/d", dir);
    mkdir(path, 0755);
    for (const char *n = "abc"; *n; n++) {
        snprintf(path, sizeof path, "%s/d/%c", dir, *n);
        close(open(path, O_WRONLY | O_CREAT, 0644));
    }
    snprintf(path, sizeof path, "%s/d", dir);
    d = opendir(path);
    if (out < 0 || !d) return 4;
    pthread_t t;
    pthread_create(&t, 0, worker, 0);
    char c = 0;
    if (read(p[0], &c, 1) != 1) return 5;
    if (c != 'P') {
        pthread_join(t, 0);
        printf("did not park: %s\n", res);
        return 1;
    }
    /* The first child: the switch, while the worker is parked. */
    snprintf(cmd, sizeof cmd, "cat %s/f > /dev/null", dir);
    int st = system(cmd);
    pthread_join(t, 0);
    printf("system %d\n%s\n", st, res);
    return 0;
}
"#;

/// Runs the program in mode `call` with the hook parking hook `call`;
/// returns its stdout, or `None` when skipped.
fn raced(call: &str) -> Option<String> {
    let park = format!("{call}:9");
    let (out, err) = run_c_in_tree_env(
        &format!("race-{call}"),
        PROGRAM,
        &[call, "$U"],
        &[("UVFS_TEST_PARK", &park)],
    )?;
    assert!(
        !err.contains("uvfs-preload"),
        "{call}: the shim complained:\n{err}"
    );
    Some(out)
}

/// Each hook the test parks, and what its raced call must give: what
/// Linux gives on the mount's file.
const CASES: &[(&str, &str)] = &[
    ("dup2", "dup2 20 errno 0 read 5 hello"),
    ("poll", "poll 1 revents 0x1"),
    ("select", "select 1 read 1 except 0 errno 0"),
    ("readdir", "readdir 3 errno 0: a b c"),
    (
        "copy_file_range",
        "copy_file_range 6 errno 0 read 6 hello\n",
    ),
    ("mmap", "mmap hello"),
    ("mkstemp", "mkstemp fd errno 0 seen 1"),
];

/// Every case, each run alone; the failures listed together.
#[test]
fn calls_that_raced_the_switch_start_again_on_the_mount() {
    let mut wrong = Vec::new();
    for (call, want) in CASES {
        let Some(out) = raced(call) else { return };
        let want = format!("system 0\n{want}\n");
        if out != want {
            wrong.push(format!("{call}: got {out:?}, want {want:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A thread asleep in a lock wait on the private uvfs when the switch
/// comes: the lock it waits for is held through another fd of the process,
/// whose unlock would go to the mount after the switch and never wake it.
/// The switch wakes the wait (the holder's private fd is closed when it is
/// reopened, its lock released; a wait it did not wake is cancelled), and
/// it is made again on the mount, where the holder's fd holds no lock:
/// the worker gets the lock there (the holder's fd then conflicts with
/// it), and that is said once. Before, the worker got the lock on the
/// private copy, silently, and the holder could lock again on the mount.
const LOCK_WAIT: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#define MAXW 100
static int a, bs[MAXW], gots[MAXW], nw = 1;
static pid_t tids[MAXW];
/* Worker `x` waits for the whole file (one worker) or its own byte. */
static void *worker(void *x) {
    long i = (long)x;
    struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = nw > 1 ? i : 0, .l_len = nw > 1 };
    tids[i] = syscall(SYS_gettid);
    gots[i] = fcntl(bs[i], F_OFD_SETLKW, &l);
    return x;
}
/* Whether thread `t` sleeps in a read (the shim's wait on its eventfd). */
static int in_read(pid_t t) {
    char p[64], s[256] = {0};
    snprintf(p, sizeof p, "/proc/self/task/%d/syscall", t);
    FILE *f = fopen(p, "r");
    if (!f) return 0;
    fgets(s, sizeof s, f);
    fclose(f);
    return atoi(s) == SYS_read;
}
int main(int argc, char **argv) {
    char path[4096];
    alarm(20);
    mkdir(argv[1], 0755);
    snprintf(path, sizeof path, "%s/lock", argv[1]);
    a = open(path, O_RDWR | O_CREAT, 0644);
    int linked = argc > 2;
    if (argc > 3) nw = atoi(argv[3]);
    if (nw < 1 || nw > MAXW) return 4;
    if (linked) {
        /* The holder's file loses its name (it stays private at the
           switch); the workers' is reached by a second name (reopened
           through the mount). */
        char other[4096];
        snprintf(other, sizeof other, "%s/lock2", argv[1]);
        if (link(path, other) != 0) return 3;
        for (int i = 0; i < nw; i++) bs[i] = open(other, O_RDWR);
        unlink(path);
    } else {
        for (int i = 0; i < nw; i++) bs[i] = open(path, O_RDWR);
    }
    struct flock l = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    if (a < 0 || fcntl(a, F_OFD_SETLK, &l) != 0) return 2;
    pthread_t t[MAXW];
    for (long i = 0; i < nw; i++) {
        if (bs[i] < 0) return 2;
        gots[i] = -2;
        pthread_create(&t[i], 0, worker, (void *)i);
    }
    for (int i = 0; i < nw; i++)
        while (!tids[i] || !in_read(tids[i])) usleep(1000);
    int st = system("true");
    for (int i = 0; i < nw; i++) pthread_join(t[i], 0);
    if (nw > 1) {
        int ok = 0;
        for (int i = 0; i < nw; i++) ok += gots[i] == 0;
        printf("system %d workers locked %d of %d\n", st, ok, nw);
        return 0;
    }
    /* The worker's lock is the mount's now: `a`, another open file of
       the same file, conflicts with it there. */
    int again = fcntl(a, F_OFD_SETLK, &l);
    printf("system %d worker %d relock %d errno %d\n", st, gots[0], again, again ? errno : 0);
    return 0;
}
"#;

/// Runs the lock program with `args` and checks its stdout (`want`) and
/// the one line said on stderr.
fn lock_wait(name: &str, args: &[&str], want: &str) {
    let Some((out, err)) = support::tree::run_c_in_tree(name, LOCK_WAIT, args) else {
        return;
    };
    assert_eq!(out, want);
    let said = err
        .matches("uvfs-preload: fcntl: a lock wait asleep on the process's private uvfs")
        .count();
    assert_eq!(said, 1, "{err}");
}

/// The holder's file kept private (no name) while the worker's moves to
/// the mount: nothing there holds the lock, and nothing in the private
/// copy would ever release it. The switch cancels the private wait; made
/// again on the mount it gets the lock at once. Without the cancel the
/// worker waits for ever (`alarm` ends the run).
#[test]
fn a_lock_wait_the_switch_leaves_without_a_holder_is_cancelled() {
    lock_wait(
        "race-lock-kept",
        &["$U", "linked"],
        "system 0 worker 0 relock 0 errno 0\n",
    );
}

#[test]
fn a_lock_wait_asleep_at_the_switch_is_made_again_on_the_mount() {
    lock_wait(
        "race-lock",
        &["$U"],
        "system 0 worker 0 relock -1 errno 11\n",
    );
}

/// More lock waits asleep at the switch than the 64 slots the
/// cancellable waits once had: every one is cancelled and made again on
/// the mount, where each gets its own byte at once (a wait left without a
/// slot would sleep on the private copy until the program's `alarm`).
#[test]
fn seventy_lock_waits_asleep_at_the_switch_are_all_cancelled() {
    lock_wait(
        "race-lock-many",
        &["$U", "linked", "70"],
        "system 0 workers locked 70 of 70\n",
    );
}
