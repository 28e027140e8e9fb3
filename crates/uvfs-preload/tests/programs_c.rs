//! C programs under the shim against the same program on a host tmpfs
//! directory (the harness of `programs.rs`): an open/close loop, fd
//! numbering, threads, fork under thread churn, advisory locks, leases.
//! Compiled at test time; skipped without `cc`.

mod support;
use support::programs::*;

const C_LOOP: &str = r#"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

int main(int argc, char **argv) {
    const char *d = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    char path[4096], buf[64];
    snprintf(path, sizeof path, "%s/loop.file", d);
    int fd = open(path, O_CREAT | O_RDWR, 0644);
    if (fd < 0) { perror("create"); return 1; }
    if (write(fd, "0123456789", 10) != 10) { perror("write"); return 1; }
    close(fd);
    long sum = 0;
    for (int i = 0; i < n; i++) {
        fd = open(path, O_RDONLY);
        if (fd < 0) { perror("open"); return 1; }
        sum += fd;
        if (close(fd) != 0) { perror("close"); return 1; }
    }
    printf("opened %d times, fd sum %ld\n", n, sum);
    /* fd numbering, dup family, fcntl */
    int a = open(path, O_RDWR);
    int b = dup(a);
    int c = fcntl(a, F_DUPFD, 100);
    int k = open("/dev/null", O_RDONLY);
    printf("fds %d %d %d kernel %d\n", a, b, c, k);
    printf("cloexec %d %d\n", fcntl(c, F_GETFD), fcntl(fcntl(a, F_DUPFD_CLOEXEC, 0), F_GETFD));
    printf("getfl %o\n", fcntl(a, F_GETFL) & O_ACCMODE);
    lseek(a, 4, SEEK_SET);
    memset(buf, 0, sizeof buf);
    read(b, buf, 3);
    printf("shared offset read %s, pos %ld\n", buf, (long)lseek(c, 0, SEEK_CUR));
    printf("dup2 kernel onto uvfs %d\n", dup2(k, b));
    memset(buf, 0, sizeof buf);
    printf("read now %zd\n", read(b, buf, 3));
    printf("dup2 uvfs onto kernel %d\n", dup2(a, k));
    memset(buf, 0, sizeof buf);
    pread(k, buf, 4, 2);
    printf("pread via dup2'd %s\n", buf);
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 5 };
    printf("setlk %d\n", fcntl(a, F_SETLK, &fl));
    fl.l_type = F_RDLCK;
    int gl = fcntl(a, F_GETLK, &fl);
    printf("getlk %d type-unlocked %d\n", gl, fl.l_type == F_UNLCK);
    char *m = mmap(0, 10, PROT_READ, MAP_PRIVATE, a, 0);
    printf("mmap %s '%.3s'\n", m == MAP_FAILED ? "failed" : "mapped", m == MAP_FAILED ? "" : m);
    if (m != MAP_FAILED) munmap(m, 10);
    struct stat st;
    fstat(a, &st);
    printf("size %ld mode %o\n", (long)st.st_size, st.st_mode);
    close(a); close(b); close(c); close(k);
    errno = 0;
    int cr = close(a);
    printf("closed twice %d errno %d\n", cr, errno);
    ssize_t rr = read(a, buf, 1);
    printf("read closed %zd errno %d\n", rr, errno);
    DIR *dir = opendir(d);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(dir))) entries++;
    closedir(dir);
    printf("entries %d\n", entries);
    struct dirent **names;
    int nn = scandir(d, &names, 0, alphasort);
    printf("scandir %d:", nn);
    for (int i = 0; i < nn; i++) { printf(" %s", names[i]->d_name); free(names[i]); }
    if (nn >= 0) free(names);
    errno = 0;
    nn = scandir("/uvfs-no-such-dir/x", &names, 0, alphasort);
    printf("\nscandir missing %d errno %d\n", nn, errno);
    int u1 = unlink(path);
    int u2 = unlink(path);
    printf("unlink %d, again %d errno %d\n", u1, u2, errno);
    return 0;
}
"#;

#[test]
fn c_open_close_loop() {
    run_c(
        "cloop-build",
        C_LOOP,
        false,
        &["1000"],
        &[("c-loop", &[][..])],
    );
}

/// fd numbers as Linux gives them, across uvfs and kernel fds: every number
/// the program sees is printed and compared with the host run, with the
/// placeholder cache on (the default), off, and of size one.
const C_NUMBERING: &str = r#"
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

static char f[4096];
static int u(void) { return open(f, O_RDWR); }
static int k(void) { return open("/dev/null", O_RDONLY); }
static void valid(const char *tag, int lo, int hi) {
    printf("%s:", tag);
    for (int i = lo; i <= hi; i++) printf(" %d=%d", i, fcntl(i, F_GETFD) >= 0 ? fcntl(i, F_GETFD) : -1);
    printf("\n");
}

int main(int argc, char **argv) {
    snprintf(f, sizeof f, "%s/numbering.file", argv[1]);
    close(open(f, O_CREAT | O_RDWR, 0600));
    int a = u(); close(a);
    int b = k();
    printf("uvfs %d closed, kernel open %d\n", a, b);
    a = u(); close(b); close(a);
    printf("uvfs %d, kernel %d closed below it, uvfs open %d\n", a, b, (b = u()));
    close(b);
    int x = u(), y = u(), z = u();
    close(y); close(x);
    int p1 = u(), p2 = u(), p3 = k();
    printf("out of order: %d %d %d then %d %d kernel %d\n", x, y, z, p1, p2, p3);
    close(p1); close(p2); close(p3); close(z);
    int pp[2];
    close(u());
    pipe(pp);
    printf("pipe %d %d\n", pp[0], pp[1]);
    close(pp[0]); close(pp[1]);
    close(u());
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    close(u());
    int e = eventfd(0, 0);
    close(u());
    int ep = epoll_create1(0);
    close(u());
    int m = memfd_create("n", 0);
    close(u());
    int t = timerfd_create(CLOCK_MONOTONIC, 0);
    printf("socket %d eventfd %d epoll %d memfd %d timerfd %d\n", s, e, ep, m, t);
    close(s); close(e); close(ep); close(m); close(t);
    close(u());
    FILE *fp = fopen("/dev/null", "r");
    int ff = fileno(fp);
    fclose(fp);
    printf("fopen %d, uvfs after fclose %d\n", ff, (a = u()));
    close(a);
    close(u());
    DIR *dp = opendir("/");
    int df = dirfd(dp);
    closedir(dp);
    printf("opendir %d, uvfs after closedir %d\n", df, (a = u()));
    close(a);
    close(u());
    fp = tmpfile();
    printf("tmpfile %d\n", fileno(fp));
    fclose(fp);
    close(u());
    fp = popen("true", "r");
    printf("popen %d\n", fileno(fp));
    pclose(fp);
    close(u());
    printf("dup %d\n", (a = dup(1)));
    close(a);
    close(u());
    printf("F_DUPFD kernel %d\n", (a = fcntl(1, F_DUPFD, 0)));
    close(a);
    a = u(); b = u();
    close(b);
    printf("F_DUPFD uvfs %d\n", (b = fcntl(a, F_DUPFD, 0)));
    close(a); close(b);
    int saved = dup(0);
    close(0);
    a = u();
    close(a);
    b = k();
    dup2(saved, 0);
    close(saved);
    printf("stdin replaced by uvfs %d then kernel %d\n", a, b);
    int r1 = u(), r2 = k(), r3 = u(), r4 = k();
    printf("mixed %d %d %d %d\n", r1, r2, r3, r4);
    valid("before close_range", r1, r4 + 1);
    close_range(r2, r3, CLOSE_RANGE_CLOEXEC);
    valid("cloexec range", r1, r4);
    close_range(r2, r3, 0);
    valid("closed range", r1, r4);
    a = u(); b = k();
    printf("after close_range uvfs %d kernel %d\n", a, b);
    closefrom(r1);
    valid("closefrom", r1, r4);
    printf("after closefrom kernel %d uvfs %d\n", (a = k()), (b = u()));
    close(a); close(b);
    long sum = 0;
    for (int i = 0; i < 200; i++) {
        int q = u(), w = (i % 3) ? k() : u(), v = u();
        sum = sum * 7 + q * 100 + w * 10 + v;
        if (i % 2) { close(q); close(w); } else { close(w); close(q); }
        close(v);
        sum %= 1000000007;
    }
    printf("loop checksum %ld\n", sum);
    printf("next %d %d\n", u(), k());
    unlink(f);
    return 0;
}
"#;

#[test]
fn c_fd_numbering() {
    run_c(
        "cnum-build",
        C_NUMBERING,
        false,
        &[],
        &[
            ("c-numbering-cache", &[][..]),
            ("c-numbering-nocache", &[("UVFS_FD_CACHE", "0")][..]),
            ("c-numbering-cache1", &[("UVFS_FD_CACHE", "1")][..]),
        ],
    );
}

/// Threads opening, reading and closing uvfs files, kernel files and pipes
/// at once: every fd must always reach its own file (the placeholder cache,
/// its flushes and the fd map under contention).
const C_THREADS: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static int bad;

static void *worker(void *arg) {
    long id = (long)arg;
    char path[4096], want[32], got[32];
    snprintf(path, sizeof path, "%s/t%ld", dir, id);
    snprintf(want, sizeof want, "thread %ld", id);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    write(fd, want, strlen(want));
    close(fd);
    for (int i = 0; i < 3000; i++) {
        int u = open(path, O_RDONLY);
        int z = (i % 4 == 0) ? open("/dev/zero", O_RDONLY) : -1;
        int p[2] = {-1, -1};
        if (i % 7 == 0) pipe(p);
        memset(got, 0, sizeof got);
        if (u < 0 || read(u, got, sizeof got - 1) != (ssize_t)strlen(want) || strcmp(got, want)) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
        if (z >= 0) {
            char c = 1;
            if (read(z, &c, 1) != 1 || c != 0) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
            close(z);
        }
        if (p[0] >= 0) {
            char c = 0;
            if (write(p[1], "x", 1) != 1 || read(p[0], &c, 1) != 1 || c != 'x') __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
            close(p[0]); close(p[1]);
        }
        if (close(u) != 0) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
    }
    unlink(path);
    return 0;
}

int main(int argc, char **argv) {
    dir = argv[1];
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    int after = open("/dev/null", O_RDONLY);
    printf("bad %d, next fd %d\n", bad, after);
    return bad != 0;
}
"#;

/// `fork` while other threads open and close uvfs files and exit (a thread
/// exiting returns its cached file objects to uvfs's pool under a lock of
/// the pool's own): every child must be able to use uvfs and exit.
const C_FORK: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static volatile int stop;

static void *shortlived(void *arg) {
    char path[4096];
    snprintf(path, sizeof path, "%s/churn%ld", dir, (long)arg);
    for (int i = 0; i < 50; i++) close(open(path, O_CREAT | O_RDWR, 0600));
    return 0;
}

static void *spawner(void *arg) {
    while (!stop) {
        pthread_t t;
        if (pthread_create(&t, 0, shortlived, arg) == 0) pthread_join(t, 0);
    }
    return 0;
}

int main(int argc, char **argv) {
    dir = argv[1];
    pthread_t s[2];
    for (long i = 0; i < 2; i++) pthread_create(&s[i], 0, spawner, (void *)i);
    int ok = 0;
    for (int i = 0; i < 150; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            alarm(20);
            char path[4096];
            snprintf(path, sizeof path, "%s/child", dir);
            for (int j = 0; j < 20; j++) {
                int fd = open(path, O_CREAT | O_RDWR, 0600);
                if (fd < 0 || write(fd, "x", 1) != 1 || close(fd) != 0) _exit(2);
            }
            _exit(0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    stop = 1;
    pthread_join(s[0], 0);
    pthread_join(s[1], 0);
    char path[4096];
    for (int i = 0; i < 2; i++) { snprintf(path, sizeof path, "%s/churn%d", dir, i); unlink(path); }
    snprintf(path, sizeof path, "%s/child", dir);
    unlink(path);
    printf("children ok %d of 150\n", ok);
    return ok != 150;
}
"#;

#[test]
fn c_fork_under_thread_churn() {
    run_c(
        "cfork-build",
        C_FORK,
        true,
        &[],
        &[("c-fork-churn", &[][..])],
    );
}

#[test]
fn c_threads() {
    run_c(
        "cthreads-build",
        C_THREADS,
        true,
        &[],
        &[
            ("c-threads-cache", &[][..]),
            ("c-threads-nocache", &[("UVFS_FD_CACHE", "0")][..]),
        ],
    );
}

/// Advisory locks under the shim, within one process (uvfs under the shim
/// is private to a process): POSIX locks of one process never conflict and
/// go at any close of the file; OFD locks of two open files conflict, with
/// POSIX locks too; a thread sleeping in F_OFD_SETLKW or flock(LOCK_EX)
/// wakes when another thread unlocks; flock conversion drops the old lock;
/// lockf; the argument errors.
const C_LOCKS: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

static int fa, fb;

static void *ofd_waiter(void *x) {
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
    *(int *)x = fcntl(fb, F_OFD_SETLKW, &fl);
    return 0;
}

static void *flock_waiter(void *x) {
    *(int *)x = flock(fb, LOCK_EX);
    return 0;
}

static void show(const char *what, int r) {
    printf("%s %d errno %d\n", what, r, r < 0 ? errno : 0);
    errno = 0;
}

int main(int argc, char **argv) {
    char path[4096];
    snprintf(path, sizeof path, "%s/locks.file", argv[1]);
    fa = open(path, O_CREAT | O_RDWR, 0644);
    fb = open(path, O_RDWR);
    int ro = open(path, O_RDONLY);
    if (fa < 0 || fb < 0 || ro < 0) { perror("open"); return 1; }
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10 };
    show("posix a", fcntl(fa, F_SETLK, &fl));
    show("posix b", fcntl(fb, F_SETLK, &fl));
    fl.l_type = F_WRLCK;
    show("getlk", fcntl(fb, F_GETLK, &fl));
    printf("getlk unlocked %d\n", fl.l_type == F_UNLCK);
    struct flock o = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 5, .l_len = 1 };
    show("ofd over posix", fcntl(fa, F_OFD_SETLK, &o));
    close(ro); /* any close drops the process's POSIX locks */
    show("ofd after close", fcntl(fa, F_OFD_SETLK, &o));
    o.l_type = F_WRLCK; o.l_start = 0; o.l_len = 10;
    show("ofd a write", fcntl(fa, F_OFD_SETLK, &o));
    show("ofd b write", fcntl(fb, F_OFD_SETLK, &o));
    struct flock w = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 9, .l_len = 1 };
    show("posix under ofd", fcntl(fb, F_SETLK, &w));
    struct flock q = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 3, .l_len = 0 };
    show("ofd getlk", fcntl(fb, F_OFD_GETLK, &q));
    printf("found type %d start %ld len %ld pid %d\n", q.l_type, (long)q.l_start, (long)q.l_len, q.l_pid);
    int r1 = -2;
    pthread_t t;
    pthread_create(&t, 0, ofd_waiter, &r1);
    usleep(20000);
    o.l_type = F_UNLCK;
    show("ofd a unlock", fcntl(fa, F_OFD_SETLK, &o));
    pthread_join(t, 0);
    show("ofd waiter", r1);
    o.l_type = F_UNLCK;
    show("ofd b unlock", fcntl(fb, F_OFD_SETLK, &o));
    show("flock a ex", flock(fa, LOCK_EX));
    show("flock b ex nb", flock(fb, LOCK_EX | LOCK_NB));
    int r2 = -2;
    pthread_create(&t, 0, flock_waiter, &r2);
    usleep(20000);
    show("flock a un", flock(fa, LOCK_UN));
    pthread_join(t, 0);
    show("flock waiter", r2);
    show("flock b un", flock(fb, LOCK_UN));
    show("flock a sh", flock(fa, LOCK_SH));
    show("flock b sh", flock(fb, LOCK_SH | LOCK_NB));
    show("flock a convert", flock(fa, LOCK_EX | LOCK_NB));
    show("flock b convert", flock(fb, LOCK_EX | LOCK_NB));
    show("lockf tlock", lockf(fa, F_TLOCK, 4));
    show("lockf test", lockf(fb, F_TEST, 4));
    show("lockf ulock", lockf(fa, F_ULOCK, 4));
    show("lockf bad", lockf(fa, 99, 4));
    struct flock bad = { .l_type = 9, .l_whence = SEEK_SET };
    show("bad type", fcntl(fa, F_SETLK, &bad));
    bad.l_type = F_RDLCK; bad.l_whence = 7;
    show("bad whence", fcntl(fa, F_SETLK, &bad));
    int rd = open(path, O_RDONLY);
    w.l_type = F_WRLCK;
    show("write lock on O_RDONLY", fcntl(rd, F_SETLK, &w));
    w.l_type = F_RDLCK;
    show("read lock on O_RDONLY", fcntl(rd, F_SETLK, &w));
    show("flock bad op", flock(fa, 3));
    show("flock mand", flock(-1, 32 /* LOCK_MAND */));
    return 0;
}
"#;

#[test]
fn c_locks() {
    run_c("clocks-build", C_LOCKS, true, &[], &[("c-locks", &[][..])]);
}

const C_LEASES: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static char path[4096];

static void on_sig(int s) { (void)s; got++; }

static void show(const char *what, int r) {
    printf("%s %d errno %d\n", what, r, r < 0 ? errno : 0);
    errno = 0;
}

static void *writer(void *x) {
    int fd = open(path, O_WRONLY);
    *(int *)x = fd >= 0 ? 0 : errno;
    if (fd >= 0) close(fd);
    return 0;
}

static void *truncater(void *x) {
    *(int *)x = truncate(path, 0) == 0 ? 0 : errno;
    return 0;
}

static void wait_for(int n) { while (got < n) sched_yield(); }

int main(int argc, char **argv) {
    snprintf(path, sizeof path, "%s/leases.file", argv[1]);
    signal(SIGUSR1, on_sig);
    int fa = open(path, O_CREAT | O_RDONLY, 0644);
    show("setsig", fcntl(fa, F_SETSIG, SIGUSR1));
    show("write lease", fcntl(fa, F_SETLEASE, F_WRLCK));
    show("getlease", fcntl(fa, F_GETLEASE));
    show("owner is me", fcntl(fa, F_GETOWN) == getpid());
    show("reader nonblock", open(path, O_RDONLY | O_NONBLOCK));
    wait_for(1);
    show("getlease in break", fcntl(fa, F_GETLEASE));
    show("downgrade", fcntl(fa, F_SETLEASE, F_RDLCK));
    int r = -1;
    pthread_t t;
    pthread_create(&t, 0, writer, &r);
    wait_for(2);
    show("getlease in write break", fcntl(fa, F_GETLEASE));
    show("read lease refused", fcntl(fa, F_SETLEASE, F_RDLCK));
    show("unlock", fcntl(fa, F_SETLEASE, F_UNLCK));
    pthread_join(t, 0);
    show("writer errno", r);
    show("owner cleared", fcntl(fa, F_GETOWN));
    show("sig cleared", fcntl(fa, F_GETSIG));
    fcntl(fa, F_SETSIG, SIGUSR1);
    fcntl(fa, F_SETOWN, getpid());
    show("read lease", fcntl(fa, F_SETLEASE, F_RDLCK));
    pthread_create(&t, 0, truncater, &r);
    wait_for(3);
    show("getlease in truncate break", fcntl(fa, F_GETLEASE));
    close(fa);
    pthread_join(t, 0);
    show("truncate errno", r);
    show("signals", got);
    return 0;
}
"#;

#[test]
fn c_leases() {
    run_c(
        "cleases-build",
        C_LEASES,
        true,
        &[],
        &[("c-leases", &[][..])],
    );
}
