//! FIFOs and other special files under the prefix: one C program, run on
//! a host directory without the shim and on the prefix under it, must
//! print the same. It makes a FIFO, a socket node and (as root) a device
//! node, opens each, moves 200 KiB through the FIFO between two threads
//! (a reader that blocks in open and in read, a writer that blocks in
//! open and in write), forks while the reader is blocked (the fork must
//! not wait for it), and writes with no reader left: `EPIPE` with
//! `SIGPIPE` raised, as the kernel does; and leaves a whiteout with
//! `renameat2(RENAME_WHITEOUT)`.

mod support;
use support::cprog::{Scratch, compile_c, have, host_reference, shim_matches};

const C_FIFO: &str = r##"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uvfs_test.h"
#define R(tag, expr) do { errno = 0; long r_ = (long)(expr); printf("%s: %ld errno %d\n", tag, r_ < 0 ? -1L : r_, r_ < 0 ? errno : 0); fflush(stdout); } while (0)

static volatile sig_atomic_t pipes;
static void on_pipe(int s) { (void)s; pipes++; }

static long got;
static unsigned long sum;
static void *reader(void *a) {
    (void)a;
    int fd = open(at("fifo"), O_RDONLY);
    char b[10000];
    long n;
    while ((n = read(fd, b, sizeof b)) > 0) {
        for (long i = 0; i < n; i++) sum = sum * 31 + (unsigned char)b[i];
        got += n;
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    snprintf(P, sizeof P, "%s", argv[1]);
    umask(022);
    signal(SIGPIPE, on_pipe);
    R("mkfifo", mkfifo(at("fifo"), 0666));
    R("mkfifo again", mkfifo(at("fifo"), 0666));
    struct stat st;
    R("stat", stat(at("fifo"), &st));
    printf("mode %o size %ld\n", st.st_mode, (long)st.st_size);
    R("mknod sock", mknod(at("sock"), S_IFSOCK | 0600, 0));
    R("open sock", open(at("sock"), O_RDONLY));
    R("mknod dir", mknod(at("dir"), S_IFDIR | 0755, 0));
    if (geteuid() == 0) {
        R("mknod chr", mknod(at("chr"), S_IFCHR | 0600, makedev(42, 7)));
        R("stat chr", stat(at("chr"), &st));
        printf("chr %u:%u\n", major(st.st_rdev), minor(st.st_rdev));
        R("open chr", open(at("chr"), O_RDWR));
    }
    R("open w nonblock, no reader", open(at("fifo"), O_WRONLY | O_NONBLOCK));
    /* renameat2(RENAME_WHITEOUT): a character device 0/0 takes the old name. */
    close(open(at("wo"), O_CREAT | O_WRONLY, 0644));
    R("rename whiteout", renameat2(AT_FDCWD, at("wo"), AT_FDCWD, at("wo2"), RENAME_WHITEOUT));
    R("stat whiteout", lstat(at("wo"), &st));
    printf("whiteout mode %o rdev %lu\n", st.st_mode, (unsigned long)st.st_rdev);
    R("whiteout exchange", renameat2(AT_FDCWD, at("wo2"), AT_FDCWD, at("wo"), RENAME_WHITEOUT | RENAME_EXCHANGE));
    R("open whiteout", open(at("wo"), O_RDONLY));

    pthread_t t;
    pthread_create(&t, 0, reader, 0);
    /* The reader is blocked in open or read: a fork goes on. */
    pid_t pid = fork();
    if (pid == 0) _exit(7);
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child exit %d\n", WEXITSTATUS(status));
    static char data[200000];
    for (int i = 0; i < (int)sizeof data; i++) data[i] = i % 251;
    int w = open(at("fifo"), O_WRONLY);
    R("write 200000", write(w, data, sizeof data));
    R("lseek", lseek(w, 0, SEEK_SET));
    R("F_GETPIPE_SZ", fcntl(w, F_GETPIPE_SZ));
    close(w);
    pthread_join(t, 0);
    printf("reader got %ld sum %lu\n", got, sum);

    int r = open(at("fifo"), O_RDONLY | O_NONBLOCK);
    w = open(at("fifo"), O_WRONLY | O_NONBLOCK);
    R("write", write(w, "abc", 3));
    char b[8];
    R("read", read(r, b, sizeof b));
    R("read empty", read(r, b, sizeof b));
    close(r);
    R("write, no reader", write(w, "x", 1));
    printf("SIGPIPE %d\n", (int)pipes);
    close(w);
    R("unlink", unlink(at("fifo")));
    return 0;
}
"##;

#[test]
fn fifo_program_matches_the_host() {
    let dir = Scratch::new("special");
    let Some(bin) = compile_c(&dir, C_FIFO) else {
        return;
    };
    let host = dir.join("host");
    std::fs::create_dir(&host).unwrap();
    let want = host_reference(
        &[&bin, host.to_str().unwrap()],
        &["reader got 200000", "SIGPIPE 1"],
    );
    let prefix = dir.join("uvfs");
    shim_matches(
        &[&bin, prefix.to_str().unwrap()],
        &[("UVFS_PREFIX", prefix.to_str().unwrap())],
        &want,
        "the FIFO program",
    );
    // Nothing reached the host under the prefix.
    assert!(!prefix.join("fifo").exists() && !prefix.join("sock").exists());
}

/// The terminal calls on a uvfs fd and on a closed one, against the host:
/// glibc serves them with calls the shim cannot see, so without the shim's
/// own `isatty`, `ttyname`, `ttyname_r`, `tcgetpgrp`, `tcsetpgrp`,
/// `tcgetattr` and `tcsetattr` a closed number that the placeholder cache
/// still holds answered `ENOTTY` (its `/dev/null`) where Linux says
/// `EBADF`. In one process (`UVFS_TREE=0`), cache on.
#[test]
fn terminal_calls_on_uvfs_and_closed_fds_match_the_host() {
    if !have("/usr/bin/python3") {
        return;
    }
    let dir = Scratch::new("tty");
    let py = "import os, sys, termios\n\
              d = sys.argv[1]\n\
              def show(tag, f):\n\
              \x20   try:\n\
              \x20       print(tag, 'ok', f())\n\
              \x20   except OSError as e:\n\
              \x20       print(tag, 'errno', e.errno)\n\
              fd = os.open(d + '/f', os.O_CREAT | os.O_RDWR, 0o644)\n\
              for tag, n in (('open', fd), ('closed', None)):\n\
              \x20   if n is None:\n\
              \x20       os.close(fd)\n\
              \x20       n = fd\n\
              \x20   show(tag + ' isatty', lambda: os.isatty(n))\n\
              \x20   show(tag + ' ttyname', lambda: os.ttyname(n))\n\
              \x20   show(tag + ' tcgetpgrp', lambda: os.tcgetpgrp(n))\n\
              \x20   show(tag + ' tcsetpgrp', lambda: os.tcsetpgrp(n, os.getpgrp()))\n\
              \x20   try:\n\
              \x20       termios.tcgetattr(n)\n\
              \x20       print(tag, 'tcgetattr ok')\n\
              \x20   except termios.error as e:\n\
              \x20       print(tag, 'tcgetattr errno', e.args[0])\n";
    let host = dir.join("host");
    std::fs::create_dir(&host).unwrap();
    let want = host_reference(
        &["/usr/bin/python3", "-c", py, host.to_str().unwrap()],
        &[
            "open ttyname errno 25",
            "closed ttyname errno 9",
            "closed tcgetattr errno 9",
        ],
    );
    let prefix = dir.join("uvfs");
    shim_matches(
        &["/usr/bin/python3", "-c", py, prefix.to_str().unwrap()],
        &[
            ("UVFS_PREFIX", prefix.to_str().unwrap()),
            ("UVFS_TREE", "0"),
        ],
        &want,
        "the terminal calls",
    );
}
