//! Signals into blocked uvfs calls under the shim, against the host: one C
//! program blocks in `F_SETLKW` (against an OFD lock of another open of
//! the file), a blocking flock (against another open's), a FIFO open
//! waiting for a writer and a read of an empty FIFO, while a second thread
//! sends it `SIGALRM` (`pthread_kill`) whose handler only counts. Without
//! `SA_RESTART` each call must return `EINTR` and leave nothing behind (no
//! lock taken, no reader counted: a non-blocking writer then gets
//! `ENXIO`); with it each call must go on waiting until the second thread,
//! once three handlers ran, lets it finish. The program prints what each
//! call returned, its errno and what is left; the shim's output on the
//! prefix must equal the host's on a tmpfs directory. Nothing is decided
//! by time: the helper signals until the call returned (or three handlers
//! ran), however long that takes; after 500 signals (10 s of them) it
//! lets the call finish and the run says "NOT INTERRUPTED" (the shim
//! before interruptible sleeps hung here).

mod support;
use support::cprog::{Scratch, compile_c, host_reference, shim_matches};

const C_PROG: &str = r##"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uvfs_test.h"

static volatile sig_atomic_t handled;
static void on_alrm(int s) { (void)s; handled++; }

/* The helper: signals the main thread until its call returned (without
   SA_RESTART) or until three handlers ran (with it), then does `release`
   so a restarted call can finish. The outcome depends on neither timing
   nor count: only how many signals it takes to see it does. */
static pthread_t main_t;
static volatile int done, restart;
static void (*release)(void);
static volatile int gave_up;
static void *helper(void *a) {
    (void)a;
    int sent = 0;
    while (!done && !(restart && handled >= 3)) {
        /* A call that is never interrupted: let it finish, so the run
           prints a difference instead of hanging. */
        if (++sent > 500) { gave_up = 1; break; }
        pthread_kill(main_t, SIGALRM);
        usleep(20000);
    }
    if (release && (restart || gave_up)) release();
    return 0;
}

static int holder = -1, wfd = -1;
static void rel_ofd(void) {
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
    fcntl(holder, F_OFD_SETLK, &fl);
}
static void rel_flock(void) { flock(holder, LOCK_UN); }
static void rel_open(void) { wfd = open(at("fifo"), O_WRONLY); }
static void rel_write(void) { write(wfd, "x", 1); }

static void run(const char *tag, long (*call)(void), void (*rel)(void)) {
    pthread_t t;
    handled = 0;
    done = 0;
    release = rel;
    pthread_create(&t, 0, helper, 0);
    errno = 0;
    long r = call();
    int e = r < 0 ? errno : 0;
    done = 1;
    pthread_join(t, 0);
    printf("%s: %ld errno %d (handled %s)%s\n", tag, r < 0 ? -1L : r, e, handled > 0 ? "yes" : "no",
           gave_up ? " NOT INTERRUPTED" : "");
    gave_up = 0; fflush(stdout);
    fflush(stdout);
}

static int lfd, rfd = -1;
static long do_setlkw(void) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    return fcntl(lfd, F_SETLKW, &fl);
}
static long do_flock(void) { return flock(lfd, LOCK_EX); }
static long do_open(void) { return (rfd = open(at("fifo"), O_RDONLY)) < 0 ? -1 : 0; }
static long do_read(void) { char b[4]; return read(rfd, b, sizeof b); }

int main(int argc, char **argv) {
    snprintf(P, sizeof P, "%s", argv[1]);
    restart = argc > 2 && strcmp(argv[2], "restart") == 0;
    main_t = pthread_self();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alrm;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGALRM, &sa, 0);
    printf("mode %s\n", restart ? "SA_RESTART" : "no SA_RESTART"); fflush(stdout);

    /* F_SETLKW against an OFD lock of another open of the file. */
    holder = open(at("f"), O_RDWR | O_CREAT, 0644);
    lfd = open(at("f"), O_RDWR);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    printf("ofd lock %d\n", fcntl(holder, F_OFD_SETLK, &fl)); fflush(stdout);
    run("F_SETLKW", do_setlkw, rel_ofd);
    /* After an interrupted F_SETLKW nothing of it is left: the OFD lock
       can be taken again once released, and the test lock sees ours only
       if the call succeeded. */
    rel_ofd();
    fl.l_type = F_WRLCK; fl.l_pid = 0;
    fcntl(holder, F_OFD_GETLK, &fl);
    printf("after: OFD test sees %s\n", fl.l_type == F_UNLCK ? "nothing" : "a lock"); fflush(stdout);
    fl.l_type = F_UNLCK;
    fcntl(lfd, F_SETLK, &fl);

    /* A blocking flock against another open's flock. */
    printf("flock holder %d\n", flock(holder, LOCK_SH)); fflush(stdout);
    run("flock", do_flock, rel_flock);
    printf("after: holder LOCK_EX|LOCK_NB %d\n", flock(holder, LOCK_EX | LOCK_NB)); fflush(stdout);
    flock(holder, LOCK_UN);
    flock(lfd, LOCK_UN);

    /* A FIFO open waiting for a writer, then a read of the empty FIFO. */
    printf("mkfifo %d\n", mkfifo(at("fifo"), 0644)); fflush(stdout);
    run("open fifo", do_open, rel_open);
    errno = 0;
    int w2 = open(at("fifo"), O_WRONLY | O_NONBLOCK);
    printf("after: nonblocking writer %d errno %d\n", w2 < 0 ? -1 : 0, w2 < 0 ? errno : 0); fflush(stdout);
    if (rfd < 0) {
        rfd = open(at("fifo"), O_RDONLY | O_NONBLOCK);
        fcntl(rfd, F_SETFL, 0);
    }
    if (wfd < 0) wfd = w2 >= 0 ? w2 : open(at("fifo"), O_WRONLY);
    else if (w2 >= 0) close(w2);
    run("read fifo", do_read, rel_write);
    return 0;
}
"##;

#[test]
fn blocked_calls_interrupted_as_on_the_host() {
    let dir = Scratch::new("intr");
    let Some(bin) = compile_c(&dir, C_PROG) else {
        return;
    };
    for (mode, wants) in [
        (
            "intr",
            &[
                "F_SETLKW: -1 errno 4 (handled yes)",
                "flock: -1 errno 4",
                "open fifo: -1 errno 4",
                "nonblocking writer -1 errno 6",
                "read fifo: -1 errno 4",
            ][..],
        ),
        (
            "restart",
            &[
                "F_SETLKW: 0 errno 0 (handled yes)",
                "flock: 0 errno 0",
                "open fifo: 0 errno 0",
                "read fifo: 1 errno 0",
            ][..],
        ),
    ] {
        let host = dir.join(&format!("host-{mode}"));
        std::fs::create_dir(&host).unwrap();
        let want = host_reference(&[&bin, host.to_str().unwrap(), mode], wants);
        let prefix = dir.join(&format!("uvfs-{mode}"));
        shim_matches(
            &[&bin, prefix.to_str().unwrap(), mode],
            &[
                ("UVFS_PREFIX", prefix.to_str().unwrap()),
                ("UVFS_TREE", "0"),
            ],
            &want,
            &format!("the interrupted calls ({mode})"),
        );
        assert!(!prefix.join("fifo").exists());
    }
}
