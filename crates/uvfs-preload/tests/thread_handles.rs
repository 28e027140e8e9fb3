//! Threads under the shim (issue 14, item 5): each thread calls into uvfs
//! through its own handle on the shared fd table, with no process-wide
//! lock. Four threads open, read and close uvfs files at once; every
//! result is checked (contents, fd numbers, the fd table and cwd being the
//! process's, shared by all threads), never timing.

mod support;
use support::cprog::{Scratch, compile_c, err, host_reference, out, run, shim_matches};

const C_THREADS: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 4
#define ROUNDS 20000
static const char *D;
static int bad[N];
static int shared_fds[N];
static pthread_barrier_t go;

static void *worker(void *arg) {
    long id = (long)arg;
    char path[4096], want[64], got[64];
    snprintf(path, sizeof path, "%s/t%ld", D, id);
    snprintf(want, sizeof want, "file of thread %ld", id);
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
    if (fd < 0 || write(fd, want, strlen(want)) != (ssize_t)strlen(want) || close(fd)) bad[id]++;
    pthread_barrier_wait(&go);
    for (int i = 0; i < ROUNDS; i++) {
        /* Its own file, by absolute path; the shared one, relative to the
           cwd the main thread set for the whole process. */
        int a = open(path, O_RDONLY);
        int b = open("shared", O_RDONLY);
        memset(got, 0, sizeof got);
        if (a < 0 || read(a, got, sizeof got - 1) != (ssize_t)strlen(want) || strcmp(got, want)) bad[id]++;
        memset(got, 0, sizeof got);
        if (b < 0 || pread(b, got, 6, 0) != 6 || strcmp(got, "shared")) bad[id]++;
        struct stat st;
        if (fstat(a, &st) || st.st_size != (off_t)strlen(want)) bad[id]++;
        if (a == b || close(a) || close(b)) bad[id]++;
    }
    /* An fd the main thread opened, closed by this thread: the fd table is
       the process's. */
    if (close(shared_fds[id])) bad[id]++;
    return 0;
}

int main(int argc, char **argv) {
    D = argv[1];
    char p[4096];
    snprintf(p, sizeof p, "%s/shared", D);
    int s = open(p, O_CREAT | O_WRONLY, 0644);
    write(s, "shared data", 11);
    close(s);
    if (chdir(D)) { perror("chdir"); return 1; }
    for (int i = 0; i < N; i++) shared_fds[i] = open("shared", O_RDONLY);
    pthread_barrier_init(&go, 0, N);
    pthread_t t[N];
    for (long i = 0; i < N; i++) pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < N; i++) pthread_join(t[i], 0);
    int total = 0;
    for (int i = 0; i < N; i++) total += bad[i];
    int closed = 0;
    for (int i = 0; i < N; i++) closed += fcntl(shared_fds[i], F_GETFD) == -1 && errno == EBADF;
    /* Every fd the threads opened is closed: the next open gets the lowest
       free number, as after the threads' first opens. */
    int next = open("shared", O_RDONLY);
    printf("bad %d, fds closed by other threads %d of %d, next fd %d\n", total, closed, N, next);
    return total != 0 || closed != N;
}
"#;

#[test]
fn four_threads_open_read_close() {
    let dir = Scratch::new("threads");
    let Some(bin) = compile_c(&dir, C_THREADS) else {
        return;
    };
    // The same run on a host directory first: its output is the reference
    // (fd numbers included).
    let seed = dir.join("seed");
    std::fs::create_dir_all(seed.join("dir")).unwrap();
    let host_d = dir.join("host");
    std::fs::create_dir_all(&host_d).unwrap();
    let host = host_reference(&[&bin, host_d.to_str().unwrap()], &[]);
    for cache in ["16", "0", "1"] {
        shim_matches(
            &[&bin, "/uvfs/dir"],
            &[
                ("UVFS_PREFIX", "/uvfs"),
                ("UVFS_FD_CACHE", cache),
                ("UVFS_SEED", seed.to_str().unwrap()),
            ],
            &host,
            &format!("UVFS_FD_CACHE={cache}"),
        );
    }
}

/// The thread that builds uvfs uses the fd table as its only user until a
/// second thread arrives (issue 14, item 6): threads start, dup, read,
/// seek and close the first thread's fd while it does the same, and exit,
/// fifty times over; with `first` the building thread is one that exits
/// before the others start. Every result is checked, never timing.
const C_HAND_OVER: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define ROUNDS 50
#define K 4000
static const char *path;
static int fd = -1;
static int bad;

static void loop(int k) {
    for (int i = 0; i < k; i++) {
        int d = dup(fd);
        char c = 0;
        if (d < 0 || pread(d, &c, 1, i % 10) != 1 || c != '0' + i % 10) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
        if (lseek(d, i % 10, SEEK_SET) != i % 10) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
        if (close(d)) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
    }
}

static void *worker(void *arg) {
    (void)arg;
    loop(K);
    return 0;
}

/* Makes the file and opens it: the process's first uvfs calls. */
static void *opener(void *arg) {
    (void)arg;
    int s = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (s < 0 || write(s, "0123456789", 10) != 10 || close(s)) return 0;
    fd = open(path, O_RDONLY);
    return 0;
}

int main(int argc, char **argv) {
    path = argv[1];
    if (argc > 2 && !strcmp(argv[2], "first")) {
        /* From a thread that then exits. */
        pthread_t t;
        pthread_create(&t, 0, opener, 0);
        pthread_join(t, 0);
    } else {
        opener(0);
    }
    if (fd < 0) { perror("open"); return 1; }
    loop(K);
    for (int r = 0; r < ROUNDS; r++) {
        pthread_t t;
        pthread_create(&t, 0, worker, 0);
        loop(K / 4);
        pthread_join(t, 0);
        loop(10);
    }
    /* Alone again: every copy closed, the next fd is the lowest free. */
    int next = dup(fd);
    printf("bad %d, fd %d, next fd %d\n", bad, fd, next);
    return bad != 0;
}
"#;

#[test]
fn the_building_thread_hands_the_table_over_to_new_threads() {
    let dir = Scratch::new("handover");
    let Some(bin) = compile_c(&dir, C_HAND_OVER) else {
        return;
    };
    let host_d = dir.join("host");
    std::fs::create_dir_all(&host_d).unwrap();
    let host_f = host_d.join("f");
    for mode in ["main", "first"] {
        let host = host_reference(&[&bin, host_f.to_str().unwrap(), mode], &[]);
        for cache in ["16", "0"] {
            shim_matches(
                &[&bin, "/uvfs/f", mode],
                &[("UVFS_PREFIX", "/uvfs"), ("UVFS_FD_CACHE", cache)],
                &host,
                &format!("{mode}, UVFS_FD_CACHE={cache}"),
            );
        }
    }
}

/// Signals arriving mid-call while the owner runs alone (its fd table
/// without a second user, the placeholder cache without its lock): a
/// timer's handler dups and closes the same uvfs fd, and reads it, between
/// and during the main loop's calls (during one, its calls go to the
/// kernel, which sees the placeholder). The loop's results, and the fd
/// numbering after it, must be the host's; how often the handler ran is
/// not checked (timing).
const C_SIGNALS: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static int fd = -1;
static volatile sig_atomic_t hbad;

static void on_alarm(int sig) {
    (void)sig;
    int d = dup(fd);
    if (d >= 0 && close(d)) hbad++;
}

int main(int argc, char **argv) {
    (void)argc;
    int s = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (s < 0 || write(s, "0123456789", 10) != 10 || close(s)) { perror("make"); return 1; }
    fd = open(argv[1], O_RDONLY);
    if (fd < 0) { perror("open"); return 1; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, 0);
    struct itimerval it = { { 0, 50 }, { 0, 50 } };
    setitimer(ITIMER_REAL, &it, 0);
    int bad = 0;
    for (int i = 0; i < 200000; i++) {
        int d = dup(fd);
        char c = 0;
        if (d < 0 || pread(d, &c, 1, i % 10) != 1 || c != '0' + i % 10) bad++;
        if (lseek(d, i % 10, SEEK_SET) != i % 10) bad++;
        if (close(d)) bad++;
    }
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, 0);
    int next = dup(fd);
    printf("bad %d, handler bad %d, fd %d, next fd %d\n", bad, (int)hbad, fd, next);
    return bad != 0;
}
"#;

#[test]
fn signals_during_the_owners_calls() {
    let dir = Scratch::new("signals");
    let Some(bin) = compile_c(&dir, C_SIGNALS) else {
        return;
    };
    let host_d = dir.join("host");
    std::fs::create_dir_all(&host_d).unwrap();
    let host = host_reference(&[&bin, host_d.join("f").to_str().unwrap()], &[]);
    for cache in ["16", "0"] {
        shim_matches(
            &[&bin, "/uvfs/f"],
            &[("UVFS_PREFIX", "/uvfs"), ("UVFS_FD_CACHE", cache)],
            &host,
            &format!("UVFS_FD_CACHE={cache}"),
        );
    }
}

/// The fork gate and the attach protocol under load: three threads open,
/// read and close uvfs files without pause; a fourth starts a short-lived
/// thread at a time, whose one call attaches it to the fd table, and exits;
/// meanwhile the main thread forks again and again. Each child (a copy of
/// the process taken while no thread was inside uvfs) must find uvfs
/// usable: it reads a file, makes and removes one, starts a thread that
/// does the same, and exits. A lock copied held would hang the child (its
/// `alarm` then kills it: counted, not timed). Counts only: every call's
/// result, every child's exit status.
const C_FORK_STRESS: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define WORKERS 3
#define FORKS 150
#define ATTACHES 150
static const char *D;
static int stop, bad, attached_ok, attached, ops;

static void bump(int *c) { __atomic_add_fetch(c, 1, __ATOMIC_RELAXED); }

/* One round of uvfs calls; 0 if every result is right. */
static int round_trip(const char *tag) {
    char p[4096], q[4096], got[16] = {0};
    snprintf(p, sizeof p, "%s/data", D);
    snprintf(q, sizeof q, "%s/%s", D, tag);
    int a = open(p, O_RDONLY);
    if (a < 0 || read(a, got, sizeof got - 1) != 10 || strcmp(got, "0123456789") || close(a)) return 1;
    int b = open(q, O_CREAT | O_EXCL | O_WRONLY, 0600);
    struct stat st;
    if (b < 0 || write(b, "x", 1) != 1 || fstat(b, &st) || st.st_size != 1 || close(b)) return 1;
    return unlink(q) != 0;
}

static void *worker(void *arg) {
    char tag[32];
    snprintf(tag, sizeof tag, "w%ld", (long)arg);
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        if (round_trip(tag)) bump(&bad);
        bump(&ops);
    }
    return 0;
}

static void *once(void *arg) {
    char tag[32];
    snprintf(tag, sizeof tag, "t%ld", (long)arg);
    return (void *)(long)round_trip(tag);
}

static void *attacher(void *arg) {
    (void)arg;
    for (long i = 0; i < ATTACHES; i++) {
        pthread_t t;
        void *r;
        if (pthread_create(&t, 0, once, (void *)i) || pthread_join(t, &r)) { bump(&bad); continue; }
        bump(&attached);
        if (r == 0) bump(&attached_ok);
    }
    return 0;
}

int main(int argc, char **argv) {
    (void)argc;
    D = argv[1];
    char p[4096];
    snprintf(p, sizeof p, "%s/data", D);
    int s = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (s < 0 || write(s, "0123456789", 10) != 10 || close(s)) { perror("data"); return 1; }
    pthread_t w[WORKERS], at;
    for (long i = 0; i < WORKERS; i++) pthread_create(&w[i], 0, worker, (void *)i);
    pthread_create(&at, 0, attacher, 0);
    int forked = 0, children_ok = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(120);
            char tag[32];
            snprintf(tag, sizeof tag, "c%d", i);
            int r = round_trip(tag);
            pthread_t t;
            void *tr = (void *)1;
            if (pthread_create(&t, 0, once, (void *)(long)(1000 + i)) == 0) pthread_join(t, &tr);
            _exit(r != 0 || tr != 0);
        }
        if (pid < 0) { bad++; continue; }
        forked++;
        int st;
        if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0) children_ok++;
        else break; /* one failed child is enough (a hung one took its alarm) */
    }
    pthread_join(at, 0);
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < WORKERS; i++) pthread_join(w[i], 0);
    printf("children %d of %d ok, attached threads %d of %d ok, bad %d, worker calls made %d\n",
           children_ok, forked, attached_ok, attached, bad, ops > 0);
    return bad != 0 || children_ok != forked || attached_ok != attached;
}
"#;

#[test]
fn forks_and_attaches_while_threads_are_inside_uvfs() {
    let dir = Scratch::new("forkstress");
    let Some(bin) = compile_c(&dir, C_FORK_STRESS) else {
        return;
    };
    let host_d = dir.join("host");
    std::fs::create_dir_all(&host_d).unwrap();
    let host = run(&[&bin, host_d.to_str().unwrap()], false, &[]);
    assert!(host.status.success(), "host: {}{}", out(&host), err(&host));
    assert_eq!(
        out(&host),
        "children 150 of 150 ok, attached threads 150 of 150 ok, bad 0, worker calls made 1\n"
    );
    for cache in ["16", "0"] {
        let o = run(
            &[&bin, "/uvfs"],
            true,
            &[("UVFS_PREFIX", "/uvfs"), ("UVFS_FD_CACHE", cache)],
        );
        assert!(
            o.status.success(),
            "UVFS_FD_CACHE={cache}: {}{}",
            out(&o),
            err(&o)
        );
        assert_eq!(out(&o), out(&host), "UVFS_FD_CACHE={cache}");
    }
}
