//! poll, ppoll, select, pselect and ioctl(FIONREAD) under the prefix: one
//! C program, run on a host directory without the shim and on the prefix
//! under it, must print the same. It polls a FIFO's ends through their
//! life mixed with a kernel pipe in one set, polls regular files and
//! directories, closed and `O_PATH` fds, selects over the same mix
//! (`EBADF` for a closed fd, none for one past the fd table, an `O_PATH`
//! fd ready in every set), sleeps in poll, ppoll, select and pselect
//! until another thread writes to the FIFO or to the kernel pipe, and is
//! interrupted by a signal while it sleeps (`EINTR`).

mod support;
use support::cprog::{Scratch, compile_c, host_reference, shim_matches};

const C_POLL: &str = r##"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/select.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "uvfs_test.h"
#define R(tag, expr) do { errno = 0; long r_ = (long)(expr); printf("%s: %ld errno %d\n", tag, r_ < 0 ? -1L : r_, r_ < 0 ? errno : 0); fflush(stdout); } while (0)

static void show(const char *tag, struct pollfd *p, int n, int r) {
    printf("%s: %d errno %d |", tag, r, r < 0 ? errno : 0);
    for (int i = 0; i < n; i++) printf(" %#x", p[i].revents);
    printf("\n");
    fflush(stdout);
}

static int later_fd;
static void *later(void *a) {
    (void)a;
    struct timespec t = {0, 30 * 1000 * 1000};
    nanosleep(&t, 0);
    if (write(later_fd, "z", 1) != 1) printf("late write failed\n");
    return 0;
}
static void write_later(int fd, pthread_t *t) {
    later_fd = fd;
    pthread_create(t, 0, later, 0);
}

static void on_alarm(int s) { (void)s; }

int main(int argc, char **argv) {
    snprintf(P, sizeof P, "%s", argv[1]);
    int kp[2];
    if (pipe(kp) != 0) return 1;
    R("mkfifo", mkfifo(at("fifo"), 0644));
    int r = open(at("fifo"), O_RDONLY | O_NONBLOCK);
    struct pollfd p[8];
    int n;
    p[0] = (struct pollfd){r, POLLIN, 0};
    p[1] = (struct pollfd){kp[0], POLLIN, 0};
    p[2] = (struct pollfd){kp[1], POLLOUT, 0};
    n = poll(p, 3, 0); show("no writer yet", p, 3, n);
    int w = open(at("fifo"), O_WRONLY | O_NONBLOCK);
    p[3] = (struct pollfd){w, POLLOUT | POLLIN, 0};
    n = poll(p, 4, 0); show("writer", p, 4, n);
    R("write", write(w, "hello", 5));
    int nr = -1;
    R("FIONREAD fifo", ioctl(r, FIONREAD, &nr));
    printf("nread %d\n", nr);
    n = poll(p, 4, 0); show("data", p, 4, n);
    close(w);
    n = poll(p, 3, -1); show("hang up", p, 3, n);
    char b[64];
    R("read", read(r, b, sizeof b));
    n = poll(p, 3, 10); show("hang up, empty", p, 3, n);
    w = open(at("fifo"), O_WRONLY | O_NONBLOCK);
    close(r);
    p[0] = (struct pollfd){w, POLLOUT, 0};
    n = poll(p, 3, 0); show("no reader", p, 3, n);
    close(w);

    /* Files, directories, O_PATH and closed fds. */
    int f = open(at("reg"), O_CREAT | O_RDWR, 0644);
    R("write reg", write(f, "0123456789", 10));
    R("lseek", lseek(f, 3, SEEK_SET));
    R("FIONREAD reg", ioctl(f, FIONREAD, &nr));
    printf("nread %d\n", nr);
    mkdir(at("d"), 0755);
    int d = open(at("d"), O_RDONLY | O_DIRECTORY);
    R("FIONREAD dir", ioctl(d, FIONREAD, &nr));
    int op = open(at("reg"), O_PATH);
    R("FIONREAD O_PATH", ioctl(op, FIONREAD, &nr));
    int gone = open(at("reg"), O_RDONLY);
    close(gone);
    p[0] = (struct pollfd){f, POLLIN | POLLOUT, 0};
    p[1] = (struct pollfd){d, POLLIN | POLLOUT | POLLPRI, 0};
    p[2] = (struct pollfd){op, POLLIN, 0};
    p[3] = (struct pollfd){gone, POLLIN, 0};
    p[4] = (struct pollfd){-1, POLLIN, 0};
    p[5] = (struct pollfd){kp[1], POLLOUT, 0};
    n = poll(p, 6, -1); show("files", p, 6, n);

    /* select over a FIFO, a file and a kernel pipe. */
    r = open(at("fifo"), O_RDONLY | O_NONBLOCK);
    w = open(at("fifo"), O_WRONLY | O_NONBLOCK);
    fd_set rs, ws, xs;
    FD_ZERO(&rs); FD_ZERO(&ws); FD_ZERO(&xs);
    FD_SET(r, &rs); FD_SET(kp[0], &rs); FD_SET(f, &rs);
    FD_SET(w, &ws); FD_SET(kp[1], &ws);
    FD_SET(r, &xs);
    int maxfd = r;
    int all[] = {w, kp[0], kp[1], f, d};
    for (int i = 0; i < 5; i++) if (all[i] > maxfd) maxfd = all[i];
    struct timeval tv = {0, 0};
    n = select(maxfd + 1, &rs, &ws, &xs, &tv);
    printf("select: %d r %d %d %d w %d %d x %d\n", n, FD_ISSET(r, &rs), FD_ISSET(kp[0], &rs),
           FD_ISSET(f, &rs), FD_ISSET(w, &ws), FD_ISSET(kp[1], &ws), FD_ISSET(r, &xs));
    FD_ZERO(&rs);
    FD_SET(r, &rs); FD_SET(900, &rs);
    tv = (struct timeval){0, 0};
    R("select fd past the table", select(901, &rs, 0, 0, &tv));
    int g2 = open(at("reg"), O_RDONLY);
    close(g2);
    FD_ZERO(&rs); FD_SET(r, &rs); FD_SET(g2, &rs);
    tv = (struct timeval){0, 0};
    R("select closed fd", select((r > g2 ? r : g2) + 1, &rs, 0, 0, &tv));
    FD_ZERO(&rs); FD_SET(op, &rs); FD_SET(r, &rs);
    tv = (struct timeval){0, 0};
    R("select O_PATH fd", select((r > op ? r : op) + 1, &rs, 0, 0, &tv));
    printf("opath %d r %d\n", FD_ISSET(op, &rs), FD_ISSET(r, &rs));
    fd_set ws2; FD_ZERO(&ws2); FD_SET(op, &ws2); FD_ZERO(&xs); FD_SET(op, &xs); tv = (struct timeval){0, 0};
    R("select O_PATH w x", select(op + 1, 0, &ws2, &xs, &tv));
    printf("opath w %d x %d\n", FD_ISSET(op, &ws2), FD_ISSET(op, &xs));
    tv = (struct timeval){-1, 0};
    FD_ZERO(&rs); FD_SET(r, &rs);
    R("select bad time", select(r + 1, &rs, 0, 0, &tv));

    /* Sleeping: woken by the FIFO, or by the kernel pipe, in one set. */
    pthread_t t;
    p[0] = (struct pollfd){r, POLLIN, 0};
    p[1] = (struct pollfd){kp[0], POLLIN, 0};
    write_later(w, &t);
    n = poll(p, 2, -1); show("poll woken by the fifo", p, 2, n);
    pthread_join(t, 0);
    R("read", read(r, b, sizeof b));
    write_later(kp[1], &t);
    n = poll(p, 2, -1); show("poll woken by the pipe", p, 2, n);
    pthread_join(t, 0);
    R("read pipe", read(kp[0], b, sizeof b));
    struct timespec ts = {5, 0};
    write_later(w, &t);
    n = ppoll(p, 2, &ts, 0); show("ppoll woken by the fifo", p, 2, n);
    pthread_join(t, 0);
    R("read", read(r, b, sizeof b));
    FD_ZERO(&rs); FD_SET(r, &rs); FD_SET(kp[0], &rs);
    write_later(w, &t);
    tv = (struct timeval){5, 0};
    n = select(maxfd + 1, &rs, 0, 0, &tv);
    printf("select woken: %d r %d pipe %d time left %d\n", n, FD_ISSET(r, &rs), FD_ISSET(kp[0], &rs),
           tv.tv_sec > 0 && tv.tv_sec < 5);
    pthread_join(t, 0);
    R("read", read(r, b, sizeof b));
    FD_ZERO(&rs); FD_SET(r, &rs);
    write_later(w, &t);
    n = pselect(maxfd + 1, &rs, 0, 0, &ts, 0);
    printf("pselect woken: %d r %d\n", n, FD_ISSET(r, &rs));
    pthread_join(t, 0);
    R("read", read(r, b, sizeof b));
    n = poll(p, 2, 50); show("poll times out", p, 2, n);

    /* A signal ends the sleep. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, 0);
    alarm(1);
    n = poll(p, 2, -1); show("poll interrupted", p, 2, n);
    alarm(1);
    FD_ZERO(&rs); FD_SET(r, &rs);
    R("select interrupted", select(r + 1, &rs, 0, 0, 0));
    R("unlink", unlink(at("fifo")));
    return 0;
}
"##;

#[test]
fn poll_program_matches_the_host() {
    let dir = Scratch::new("poll");
    let Some(bin) = compile_c(&dir, C_POLL) else {
        return;
    };
    let host = dir.join("host");
    std::fs::create_dir(&host).unwrap();
    let want = host_reference(
        &[&bin, host.to_str().unwrap()],
        &["poll interrupted: -1 errno 4"],
    );
    let prefix = dir.join("uvfs");
    shim_matches(
        &[&bin, prefix.to_str().unwrap()],
        &[("UVFS_PREFIX", prefix.to_str().unwrap())],
        &want,
        "the poll program",
    );
    assert!(!prefix.join("fifo").exists());
}
