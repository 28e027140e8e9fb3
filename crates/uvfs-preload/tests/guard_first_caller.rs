//! The re-entry guard and the owner's thread-pointer path (`guard::local`)
//! where a thread could be handed the wrong block: threads started before
//! the shim's first call, one of which makes that call and so builds uvfs
//! and becomes its owner; a signal handler calling uvfs on that thread
//! while it is inside the shim (the handler's calls must find its flag
//! raised and go to the kernel, which sees the placeholder) and between
//! its calls; threads started after the owner exited (glibc hands each the
//! owner's cached stack and thread block, so its thread pointer is the
//! owner's: checked by hand, 2026-11-29); and a `fork` by another thread
//! while the owner is alive but idle, whose child starts a thread of its
//! own (glibc's child reuses the absent threads' stacks, the owner's among
//! them). Every call's result and the fd numbering must be the host's,
//! with the owner's thread-pointer path on and off (`UVFS_OWNER_TP=0`),
//! with and without the placeholder cache. Counts only, never timing: how
//! often the timer's handler ran is not checked.

mod support;
use support::cprog::{Scratch, compile_c, host_reference, shim_matches};

const C_PROG: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *D;
static int fd = -1;
static volatile sig_atomic_t hbad;
static int bad_a, bad_b, bad_c, bad_fork;
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void set_stage(int s) {
    pthread_mutex_lock(&m);
    stage = s;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
}

static void wait_stage(int s) {
    pthread_mutex_lock(&m);
    while (stage < s) pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
}

/* A dup and close of the shared fd: served by uvfs between the thread's
   calls, by the kernel (on the placeholder) while it is inside one. */
static void on_alarm(int sig) {
    (void)sig;
    int d = dup(fd);
    if (d < 0 || close(d)) hbad++;
}

/* The timer's signal reaches only a thread inside `loop`. */
static void alarms(int on) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGALRM);
    pthread_sigmask(on ? SIG_UNBLOCK : SIG_BLOCK, &set, 0);
}

static int loop(int n) {
    int bad = 0;
    alarms(1);
    for (int i = 0; i < n; i++) {
        int d = dup(fd);
        char c = 0;
        if (d < 0 || pread(d, &c, 1, i % 10) != 1 || c != '0' + i % 10) bad++;
        if (lseek(d, i % 10, SEEK_SET) != i % 10) bad++;
        if (close(d)) bad++;
    }
    alarms(0);
    return bad;
}

/* One round of path and fd calls on a file of its own. */
static int round_trip(const char *tag) {
    char p[4096], got[16] = {0};
    snprintf(p, sizeof p, "%s/%s", D, tag);
    int a = open(p, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (a < 0 || write(a, "abc", 3) != 3 || pread(a, got, 3, 0) != 3 || strcmp(got, "abc")) return 1;
    if (close(a) || unlink(p)) return 1;
    return 0;
}

/* Started before any file call; makes the process's first one. */
static void *thread_a(void *arg) {
    (void)arg;
    char p[4096];
    snprintf(p, sizeof p, "%s/data", D);
    int s = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (s < 0 || write(s, "0123456789", 10) != 10 || close(s)) bad_a++;
    fd = open(p, O_RDONLY);
    if (fd < 0) bad_a++;
    set_stage(1);
    /* Signals during and between this thread's calls. */
    struct itimerval it = { { 0, 50 }, { 0, 50 } };
    setitimer(ITIMER_REAL, &it, 0);
    bad_a += loop(100000);
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, 0);
    set_stage(2);
    /* Idle (between calls) while thread B forks. */
    wait_stage(3);
    bad_a += round_trip("a");
    return 0;
}

/* Started before any file call too; works beside A, then forks while A
   waits. */
static void *thread_b(void *arg) {
    (void)arg;
    wait_stage(1);
    for (int i = 0; i < 2000; i++) bad_b += round_trip("b");
    bad_b += loop(20000);
    wait_stage(2);
    for (int i = 0; i < 3; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(120);
            int r = round_trip("child") + loop(1000);
            pthread_t t;
            void *tr = (void *)1;
            if (pthread_create(&t, 0, (void *(*)(void *))thread_c, 0) == 0) pthread_join(t, &tr);
            _exit(r != 0 || tr != 0);
        }
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad_fork++;
    }
    set_stage(3);
    return 0;
}

/* Started after A exited, or in a fork child. */
void *thread_c(void *arg) {
    (void)arg;
    struct itimerval it = { { 0, 50 }, { 0, 50 } };
    setitimer(ITIMER_REAL, &it, 0);
    int bad = loop(20000) + round_trip("c");
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_REAL, &off, 0);
    return (void *)(long)bad;
}

int main(int argc, char **argv) {
    (void)argc;
    D = argv[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, 0);
    alarms(0);
    pthread_t a, b, c;
    pthread_create(&a, 0, thread_a, 0);
    pthread_create(&b, 0, thread_b, 0);
    pthread_join(b, 0);
    pthread_join(a, 0);
    for (int i = 0; i < 3; i++) {
        void *r = (void *)1;
        if (pthread_create(&c, 0, thread_c, 0) || pthread_join(c, &r)) bad_c++;
        bad_c += (int)(long)r;
    }
    int next = dup(fd);
    printf("bad a %d, b %d, c %d, forks %d, handler %d, fd %d, next fd %d\n",
           bad_a, bad_b, bad_c, bad_fork, (int)hbad, fd, next);
    return bad_a || bad_b || bad_c || bad_fork || hbad;
}
"#;

#[test]
fn first_caller_signals_later_threads_and_forks_match_the_host() {
    let dir = Scratch::new("firstcaller");
    // `thread_c` is used (through `thread_b`) before its definition.
    let src = C_PROG.replace(
        "static const char *D;",
        "static const char *D;\nvoid *thread_c(void *arg);",
    );
    let Some(bin) = compile_c(&dir, &src) else {
        return;
    };
    let host_d = dir.join("host");
    std::fs::create_dir_all(&host_d).unwrap();
    let host = host_reference(&[&bin, host_d.to_str().unwrap()], &["bad a 0, b 0, c 0"]);
    for tp in ["1", "0"] {
        for cache in ["16", "0"] {
            shim_matches(
                &[&bin, "/uvfs"],
                &[
                    ("UVFS_PREFIX", "/uvfs"),
                    ("UVFS_FD_CACHE", cache),
                    ("UVFS_OWNER_TP", tp),
                ],
                &host,
                &format!("UVFS_OWNER_TP={tp}, UVFS_FD_CACHE={cache}"),
            );
        }
    }
}
