//! `syscall(2)` under the shim (`src/hooks/syscall.rs`): a C program that
//! makes its file calls with raw `syscall(SYS_…)` runs on a host tmpfs
//! directory and under the shim with the prefix at a path absent on the
//! host; every result, errno and byte it prints must be the same, and
//! nothing may appear on the host at the prefix's path. Then `openat2`
//! with a `RESOLVE_*` rule (ENOSYS, said once), and `SYS_fork` and
//! glibc's `clone` in a process tree (the child's file is the parent's).

use std::process::Command;

mod support;
use support::cprog::{Scratch, compile_c, err, have, host_reference, out, run, shim_matches};

const PROG: &str = r##"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <poll.h>
#include <sys/select.h>
#include <unistd.h>

static char D[4096];
static char *at(const char *name) {
    static char b[4][4200];
    static int i;
    i = (i + 1) % 4;
    snprintf(b[i], sizeof b[i], "%s/%s", D, name);
    return b[i];
}
#define R(what, call) do { errno = 0; long r_ = (call); \
    printf("%s: %ld%s%s\n", what, r_, r_ < 0 ? " " : "", r_ < 0 ? strerrorname_np(errno) : ""); } while (0)

struct open_how_ { uint64_t flags, mode, resolve; };

static int clone_child(void *arg) {
    long fd = syscall(SYS_openat, AT_FDCWD, at("child"), O_CREAT | O_WRONLY, 0644);
    write((int)fd, "from the child\n", 15);
    return 0;
}

int main(int argc, char **argv) {
    snprintf(D, sizeof D, "%s", argv[1]);
    char buf[4096];
    struct stat st;
    if (argc > 2 && strcmp(argv[2], "resolve") == 0) {
        syscall(SYS_mkdir, D, 0755);
        long fd = syscall(SYS_openat, AT_FDCWD, at("f"), O_CREAT | O_WRONLY, 0644);
        syscall(SYS_close, fd);
        struct open_how_ how = { O_RDONLY, 0, 0x04 /* RESOLVE_NO_SYMLINKS */ };
        R("openat2 resolve", syscall(SYS_openat2, AT_FDCWD, at("f"), &how, sizeof how));
        R("openat2 resolve again", syscall(SYS_openat2, AT_FDCWD, at("f"), &how, sizeof how));
        return 0;
    }
    if (argc > 2 && (strcmp(argv[2], "fork") == 0 || strcmp(argv[2], "clone") == 0)) {
        syscall(SYS_mkdir, D, 0755);
        long pid;
        if (strcmp(argv[2], "clone") == 0) {
            static char stack[1 << 16];
            pid = clone(clone_child, stack + sizeof stack, SIGCHLD, 0);
        } else
            pid = syscall(SYS_fork);
        if (pid == 0) {
            long fd = syscall(SYS_openat, AT_FDCWD, at("child"), O_CREAT | O_WRONLY, 0644);
            syscall(SYS_write, fd, "from the child\n", 15);
            _exit(0);
        }
        int ws;
        waitpid(pid, &ws, 0);
        long fd = syscall(SYS_openat, AT_FDCWD, at("child"), O_RDONLY);
        long n = syscall(SYS_read, fd, buf, sizeof buf);
        printf("parent read %ld: %.*s", n, (int)(n > 0 ? n : 0), buf);
        return 0;
    }
    R("mkdir", syscall(SYS_mkdir, D, 0755));
    R("mkdirat", syscall(SYS_mkdirat, AT_FDCWD, at("d"), 0755));
    R("mkdirat again", syscall(SYS_mkdirat, AT_FDCWD, at("d"), 0755));
    long fd = syscall(SYS_openat, AT_FDCWD, at("d/f"), O_CREAT | O_RDWR, 0644);
    printf("openat: %s\n", fd >= 0 ? "fd" : strerrorname_np(errno));
    R("write", syscall(SYS_write, fd, "hello world", 11));
    R("lseek", syscall(SYS_lseek, fd, 0, SEEK_SET));
    long n = syscall(SYS_read, fd, buf, 5);
    printf("read %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    n = syscall(SYS_pread64, fd, buf, 5, 6);
    printf("pread64 %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    R("fstat", syscall(SYS_fstat, fd, &st));
    printf("  size %ld mode %o\n", (long)st.st_size, st.st_mode);
    R("newfstatat", syscall(SYS_newfstatat, AT_FDCWD, at("d/f"), &st, 0));
    printf("  size %ld\n", (long)st.st_size);
    struct statx sx;
    R("statx", syscall(SYS_statx, AT_FDCWD, at("d/f"), 0, STATX_SIZE, &sx));
    printf("  size %llu\n", (unsigned long long)sx.stx_size);
    R("symlinkat", syscall(SYS_symlinkat, "f", AT_FDCWD, at("d/l")));
    n = syscall(SYS_readlinkat, AT_FDCWD, at("d/l"), buf, sizeof buf);
    printf("readlinkat %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    R("faccessat W_OK", syscall(SYS_faccessat, AT_FDCWD, at("d/f"), W_OK));
    R("faccessat missing", syscall(SYS_faccessat, AT_FDCWD, at("d/nope"), F_OK));
    R("fchmodat", syscall(SYS_fchmodat, AT_FDCWD, at("d/f"), 0600));
    R("fchmod", syscall(SYS_fchmod, fd, 0640));
    syscall(SYS_newfstatat, AT_FDCWD, at("d/f"), &st, 0);
    printf("  mode %o\n", st.st_mode);
    R("renameat2 noreplace", syscall(SYS_renameat2, AT_FDCWD, at("d/f"), AT_FDCWD, at("d/g"), 1));
    R("renameat2 again", syscall(SYS_renameat2, AT_FDCWD, at("d/f"), AT_FDCWD, at("d/g"), 1));
    long dfd = syscall(SYS_openat, AT_FDCWD, at("d"), O_RDONLY | O_DIRECTORY);
    n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
    int names = 0;
    for (long off = 0; n > 0 && off < n;) {
        unsigned short reclen = *(unsigned short *)(buf + off + 16);
        names++;
        off += reclen;
    }
    printf("getdents64: %s, %d names\n", n > 0 ? "ok" : "failed", names);
    long g = syscall(SYS_openat, dfd, "g", O_RDONLY);
    n = syscall(SYS_read, g, buf, sizeof buf);
    printf("openat from a dirfd, read %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    R("dup3", syscall(SYS_dup3, g, 100, O_CLOEXEC));
    R("fcntl F_GETFD", syscall(SYS_fcntl, 100, F_GETFD));
    R("lseek dup", syscall(SYS_lseek, 100, 0, SEEK_CUR));
    R("ftruncate", syscall(SYS_ftruncate, fd, 3));
    syscall(SYS_fstat, g, &st);
    printf("  size after ftruncate %ld\n", (long)st.st_size);
    R("unlinkat a directory", syscall(SYS_unlinkat, AT_FDCWD, at("d"), 0));
    R("openat missing", syscall(SYS_openat, AT_FDCWD, at("d/missing"), O_RDONLY));
    struct open_how_ how = { O_RDONLY, 0, 0 };
    long o2 = syscall(SYS_openat2, AT_FDCWD, at("d/g"), &how, sizeof how);
    n = syscall(SYS_read, o2, buf, sizeof buf);
    printf("openat2 read %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    struct open_how_ bad = { O_RDONLY, 0644, 0 };
    R("openat2 mode without O_CREAT", syscall(SYS_openat2, AT_FDCWD, at("d/g"), &bad, sizeof bad));
    R("chdir", syscall(SYS_chdir, at("d")));
    n = syscall(SYS_getcwd, buf, sizeof buf);
    printf("getcwd %s, ends with /d: %s\n", n > 0 ? "ok" : "failed",
           n > 2 && strcmp(buf + strlen(buf) - 2, "/d") == 0 ? "yes" : "no");
    R("relative newfstatat", syscall(SYS_newfstatat, AT_FDCWD, "g", &st, 0));
    /* Served through the shim's functions since the switch work: before,
       the kernel got the placeholder or a host path. */
    long h = syscall(SYS_openat, AT_FDCWD, at("d/h"), O_CREAT | O_RDWR, 0644);
    loff_t ci = 0;
    R("copy_file_range", syscall(SYS_copy_file_range, g, &ci, h, NULL, 3, 0));
    off_t so = 0;
    R("sendfile", syscall(SYS_sendfile, h, g, &so, 2));
    R("fsetxattr", syscall(SYS_fsetxattr, h, "user.k", "v1", 2, 0));
    n = syscall(SYS_fgetxattr, h, "user.k", buf, sizeof buf);
    printf("fgetxattr %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    R("getxattr", syscall(SYS_getxattr, at("d/h"), "user.k", buf, sizeof buf));
    R("removexattr", syscall(SYS_removexattr, at("d/h"), "user.k"));
    R("getxattr removed", syscall(SYS_getxattr, at("d/h"), "user.k", buf, sizeof buf));
    struct iovec iv = { buf, 5 };
    n = syscall(SYS_preadv, h, &iv, 1, 0, 0);
    printf("preadv %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    R("syncfs", syscall(SYS_syncfs, h));
    /* Served since the table became complete: before, the kernel got the
       placeholder /dev/null, silently. */
    struct iovec wv = { "XY", 2 };
    R("pwritev2 at 1", syscall(SYS_pwritev2, h, &wv, 1, 1, 0, 0));
    R("pwritev2 RWF_APPEND", syscall(SYS_pwritev2, h, &wv, 1, 0, 0, RWF_APPEND));
    R("pwritev2 bad flag", syscall(SYS_pwritev2, h, &wv, 1, 0, 0, 0x40000000));
    memset(buf, 0, 16);
    struct iovec rv = { buf, 16 };
    n = syscall(SYS_preadv2, h, &rv, 1, 0, 0, 0);
    printf("preadv2 %ld: %.*s\n", n, (int)(n > 0 ? n : 0), buf);
    R("fadvise64", syscall(SYS_fadvise64, h, 0, 0, POSIX_FADV_SEQUENTIAL));
    R("fadvise64 bad advice", syscall(SYS_fadvise64, h, 0, 0, 99));
    struct pollfd pf[2] = { { h, POLLIN | POLLOUT, 0 }, { g, POLLIN, 0 } };
    struct timespec zero = { 0, 0 };
    R("ppoll", syscall(SYS_ppoll, pf, 2, &zero, NULL, 8));
    printf("  revents %x %x\n", pf[0].revents, pf[1].revents);
    fd_set rs, ws;
    FD_ZERO(&rs); FD_ZERO(&ws);
    FD_SET(h, &rs); FD_SET(g, &ws);
    struct { const sigset_t *ss; size_t len; } mask = { NULL, 8 };
    R("pselect6", syscall(SYS_pselect6, (h > g ? h : g) + 1, &rs, &ws, NULL, &zero, &mask));
    printf("  set %d %d\n", FD_ISSET(h, &rs), FD_ISSET(g, &ws));
#ifdef SYS_poll
    pf[0].revents = pf[1].revents = 0;
    R("poll", syscall(SYS_poll, pf, 2, 0));
    printf("  revents %x %x\n", pf[0].revents, pf[1].revents);
    struct timeval tv = { 0, 0 };
    FD_ZERO(&rs); FD_SET(g, &rs);
    R("select", syscall(SYS_select, g + 1, &rs, NULL, NULL, &tv));
#endif
    R("dup3 to 120", syscall(SYS_dup3, h, 120, 0));
    R("close_range 120", syscall(SYS_close_range, 120, 120, 0));
    R("fcntl after close_range", syscall(SYS_fcntl, 120, F_GETFD));
    R("close h", syscall(SYS_close, h));
    R("unlinkat h", syscall(SYS_unlinkat, AT_FDCWD, at("d/h"), 0));
#ifdef SYS_open
    long lf = syscall(SYS_open, at("d/legacy"), O_CREAT | O_WRONLY, 0600);
    printf("open: %s\n", lf >= 0 ? "fd" : strerrorname_np(errno));
    R("stat", syscall(SYS_stat, at("d/legacy"), &st));
    R("lstat link", syscall(SYS_lstat, at("d/l"), &st));
    printf("  link: %d\n", S_ISLNK(st.st_mode));
    R("access", syscall(SYS_access, at("d/legacy"), R_OK));
    R("rename", syscall(SYS_rename, at("d/legacy"), at("d/legacy2")));
    R("unlink", syscall(SYS_unlink, at("d/legacy2")));
    R("mkdir", syscall(SYS_mkdir, at("d/sub"), 0700));
    R("rmdir", syscall(SYS_rmdir, at("d/sub")));
    R("close legacy", syscall(SYS_close, lf));
#endif
    R("close", syscall(SYS_close, fd));
    R("close dup", syscall(SYS_close, 100));
    R("close again", syscall(SYS_close, 100));
    R("unlinkat l", syscall(SYS_unlinkat, AT_FDCWD, at("d/l"), 0));
    R("unlinkat g", syscall(SYS_unlinkat, AT_FDCWD, at("d/g"), 0));
    R("chdir out", syscall(SYS_chdir, "/"));
    R("rmdir d", syscall(SYS_unlinkat, AT_FDCWD, at("d"), AT_REMOVEDIR));
    R("gettid is the pid", syscall(SYS_gettid) == getpid());
    return 0;
}
"##;

#[test]
fn raw_file_syscalls_agree_with_the_host() {
    let sc = Scratch::new("raw-syscalls");
    let Some(bin) = compile_c(&sc, PROG) else {
        return;
    };
    let host = sc.join("host");
    let uv = sc.join("uvfs");
    let (host, uv) = (host.to_str().unwrap(), uv.to_str().unwrap());
    // The prefix is uvfs's root, which exists: so does the host's
    // directory (the first mkdir is EEXIST on both).
    std::fs::create_dir(host).unwrap();
    let h = host_reference(
        &[&bin, host],
        &[
            "read 5: hello\n",
            "getdents64: ok, 4 names\n",
            "openat from a dirfd, read 11: hello world\n",
            "openat2 read 3: hel\n",
            "getcwd ok, ends with /d: yes\n",
            "rmdir d: 0\n",
        ],
    );
    let u = shim_matches(
        &[&bin, uv],
        &[("UVFS_PREFIX", uv), ("UVFS_TREE", "0")],
        &h,
        "the raw system calls",
    );
    assert!(err(&u).is_empty(), "the shim complained:\n{}", err(&u));
    assert!(
        !std::path::Path::new(uv).exists(),
        "a raw syscall reached the host at the prefix's path"
    );
}

#[test]
fn openat2_with_a_resolve_rule_is_enosys_said_once() {
    let sc = Scratch::new("raw-openat2");
    let Some(bin) = compile_c(&sc, PROG) else {
        return;
    };
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let u = run(
        &[&bin, uv, "resolve"],
        true,
        &[("UVFS_PREFIX", uv), ("UVFS_TREE", "0")],
    );
    assert!(u.status.success(), "{:?}\n{}", u.status, err(&u));
    assert_eq!(
        out(&u),
        "openat2 resolve: -1 ENOSYS\nopenat2 resolve again: -1 ENOSYS\n"
    );
    assert_eq!(
        err(&u),
        "uvfs-preload: openat2 with RESOLVE_* rules of a uvfs path is not supported (ENOSYS)\n"
    );
}

#[test]
fn a_raw_fork_or_clone_child_writes_into_the_parents_uvfs() {
    // SAFETY: a plain id getter.
    let root = unsafe { libc::geteuid() } == 0;
    if !have("cc") || !root || std::fs::metadata("/dev/fuse").is_err() {
        eprintln!("SKIP: needs cc, root and /dev/fuse");
        return;
    }
    let sc = Scratch::new("raw-fork");
    let bin = compile_c(&sc, PROG).expect("cc is there");
    // `SYS_fork` through `syscall`, and glibc's `clone` wrapper without
    // `CLONE_VM`.
    for how in ["fork", "clone"] {
        let uv = sc.join(&format!("uvfs-{how}"));
        let uv = uv.to_str().unwrap();
        let u = Command::new(&bin)
            .args([uv, how])
            .env("LD_PRELOAD", support::shim())
            .env("UVFS_PREFIX", uv)
            .output()
            .unwrap();
        assert!(u.status.success(), "{how}: {:?}\n{}", u.status, err(&u));
        assert_eq!(
            out(&u),
            "parent read 15: from the child\n",
            "{how}: stderr:\n{}",
            err(&u)
        );
    }
}

/// The refusals: each system call below, made raw with a uvfs fd or path,
/// fails with the errno Linux gives for a file of the kind it cannot use
/// there (or EOPNOTSUPP/ENOSYS), says so once on stderr, and never reaches
/// the kernel: a seccomp filter makes each of these calls fail with
/// `ENOTRECOVERABLE` in the kernel, which the last lines show (the same
/// calls with kernel fds get it).
const REFUSE_PROG: &str = r##"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#define R(what, call) do { errno = 0; long r_ = (call); \
    printf("%s: %ld%s%s\n", what, r_, r_ < 0 ? " " : "", r_ < 0 ? strerrorname_np(errno) : ""); } while (0)

static const int TRAPPED[] = {
    SYS_tee, SYS_vmsplice, SYS_epoll_ctl, SYS_epoll_pwait, SYS_inotify_add_watch,
    SYS_connect, SYS_getsockopt, SYS_timerfd_gettime, SYS_signalfd4, SYS_io_submit,
    SYS_io_uring_enter, SYS_io_uring_register, 451 /* cachestat */, 463 /* setxattrat */,
    468 /* file_getattr */, SYS_open_tree, SYS_kcmp, SYS_waitid, SYS_pidfd_send_signal,
    SYS_sendto, SYS_bind, SYS_mq_notify, SYS_setns, SYS_io_uring_setup,
};

/* bpf's pinning at `p` (`pin`: of map `fd`), as errno's name. */
static const char *bpf_obj(int pin, const char *p, int fd) {
    union bpf_attr a;
    memset(&a, 0, sizeof a);
    a.pathname = (uint64_t)(uintptr_t)p;
    a.bpf_fd = fd;
    errno = 0;
    long r = syscall(SYS_bpf, pin ? BPF_OBJ_PIN : BPF_OBJ_GET, &a, sizeof a);
    if (r >= 0 && !pin) close((int)r);
    return r < 0 ? strerrorname_np(errno) : "ok";
}

/* "same", or what differs between the uvfs answer and the host's. */
static void same(const char *what, const char *uv, const char *host) {
    if (strcmp(uv, host) == 0) printf("%s: same\n", what);
    else printf("%s: uvfs %s, host %s\n", what, uv, host);
}

/* prctl(PR_SET_MM, PR_SET_MM_EXE_FILE, fd)'s errno name. */
static const char *exe_file(int fd) {
    errno = 0;
    return prctl(PR_SET_MM, PR_SET_MM_EXE_FILE, fd, 0, 0) < 0 ? strerrorname_np(errno) : "ok";
}

/* Every call in TRAPPED that reaches the kernel fails with ENOTRECOVERABLE. */
static void trap(void) {
    enum { N = sizeof TRAPPED / sizeof TRAPPED[0] };
    struct sock_filter f[N + 3];
    int k = 0;
    f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (int i = 0; i < N; i++)
        f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TRAPPED[i], N - i, 0);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOTRECOVERABLE);
    struct sock_fprog prog = { (unsigned short)k, f };
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
        perror("seccomp");
        exit(3);
    }
}

int main(int argc, char **argv) {
    char path[4200], sock[4200];
    snprintf(path, sizeof path, "%s/f", argv[1]);
    snprintf(sock, sizeof sock, "%s/sock", argv[1]);
    mkdir(argv[1], 0755);
    int u = open(path, O_CREAT | O_RDWR, 0644);
    int p[2], q[2];
    pipe(p);
    pipe(q);
    int ep = epoll_create1(0);
    int s = socket(AF_UNIX, SOCK_DGRAM, 0);
    /* bpf's pinning at a uvfs path answers as at a host path that is not
       in a bpf file system (the host's scratch directory, argv[2]). */
    {
        union bpf_attr a;
        memset(&a, 0, sizeof a);
        a.map_type = BPF_MAP_TYPE_ARRAY;
        a.key_size = 4;
        a.value_size = 4;
        a.max_entries = 1;
        int m = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof a);
        char hf[4200], hm[4200], hd[4200], um[4200], ud[4200];
        snprintf(hf, sizeof hf, "%s/f", argv[2]);
        snprintf(hm, sizeof hm, "%s/missing", argv[2]);
        snprintf(hd, sizeof hd, "%s/nodir/x", argv[2]);
        snprintf(um, sizeof um, "%s/missing", argv[1]);
        snprintf(ud, sizeof ud, "%s/nodir/x", argv[1]);
        close(open(hf, O_CREAT | O_WRONLY, 0644));
        same("bpf get a file", bpf_obj(0, path, 0), bpf_obj(0, hf, 0));
        same("bpf get a missing name", bpf_obj(0, um, 0), bpf_obj(0, hm, 0));
        same("bpf pin at a new name", bpf_obj(1, um, m), bpf_obj(1, hm, m));
        same("bpf pin at a file", bpf_obj(1, path, m), bpf_obj(1, hf, m));
        same("bpf pin in a missing directory", bpf_obj(1, ud, m), bpf_obj(1, hd, m));
        if (m >= 0) close(m);
    }
    int dn = open("/dev/null", O_RDONLY);
    /* After the kernel fds (each kernel fd made empties the placeholder
       cache): a cached placeholder, closed to the program. */
    int stale = dup(u);
    close(stale);
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    snprintf(un.sun_path, sizeof un.sun_path, "%s", sock);
    /* PR_SET_MM_EXE_FILE: a uvfs fd answers as the placeholder, a closed
       one as a closed fd (999: none). */
    same("prctl exe file", exe_file(u), exe_file(dn));
    same("prctl exe file of a closed uvfs fd", exe_file(stale), exe_file(999));
    trap();
    char b[256];
    struct iovec iv = { b, 1 };
    struct epoll_event ev = { EPOLLIN, { 0 } };
    struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(9) };
    socklen_t len = sizeof(int);
    int v;
    sigset_t mask;
    sigemptyset(&mask);
    struct itimerspec its;
    struct iocb cb = { 0 };
    cb.aio_lio_opcode = IOCB_CMD_PREAD;
    cb.aio_fildes = u;
    cb.aio_buf = (uint64_t)(uintptr_t)b;
    cb.aio_nbytes = 1;
    struct iocb *cbp = &cb;
    siginfo_t si;
    R("tee", syscall(SYS_tee, u, p[1], 1, 0));
    R("tee again", syscall(SYS_tee, p[0], u, 1, 0));
    R("vmsplice", syscall(SYS_vmsplice, u, &iv, 1, 0));
    R("epoll_ctl add", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, u, &ev));
    R("epoll_ctl on it", syscall(SYS_epoll_ctl, u, EPOLL_CTL_ADD, p[0], &ev));
    R("epoll_pwait", syscall(SYS_epoll_pwait, u, &ev, 1, 0, NULL, 8));
    R("inotify_add_watch", syscall(SYS_inotify_add_watch, u, "/", IN_ALL_EVENTS));
    R("connect", syscall(SYS_connect, u, &in, sizeof in));
    R("getsockopt", syscall(SYS_getsockopt, u, SOL_SOCKET, SO_TYPE, &v, &len));
    R("timerfd_gettime", syscall(SYS_timerfd_gettime, u, &its));
    R("signalfd4", syscall(SYS_signalfd4, u, &mask, 8, 0));
    R("io_submit", syscall(SYS_io_submit, 0, 1, &cbp));
    R("io_uring_enter", syscall(SYS_io_uring_enter, u, 0, 0, 0, NULL, 0));
    R("io_uring_register files", syscall(SYS_io_uring_register, p[0], 2, &u, 1));
    R("cachestat", syscall(451, u, b, b, 0));
    R("setxattrat", syscall(463, AT_FDCWD, path, 0, "user.k", b, 32));
    R("file_getattr", syscall(468, AT_FDCWD, path, b, 32, 0));
    R("open_tree", syscall(SYS_open_tree, AT_FDCWD, path, 0));
    R("kcmp", syscall(SYS_kcmp, getpid(), getpid(), 0, u, u));
    R("waitid P_PIDFD", syscall(SYS_waitid, 3, u, &si, WEXITED, NULL));
    R("pidfd_send_signal", syscall(SYS_pidfd_send_signal, u, 0, NULL, 0));
    R("sendto a socket path", syscall(SYS_sendto, s, "x", 1, 0, &un, sizeof un));
    R("bind a socket path", syscall(SYS_bind, s, &un, sizeof un));
    R("mq_notify", syscall(SYS_mq_notify, u, NULL));
    R("setns", syscall(SYS_setns, u, 0));
    /* No ring while uvfs lives in the process. */
    char params[120] = {0};
    R("io_uring_setup", syscall(SYS_io_uring_setup, 1, params));
    /* A closed fd is EBADF, as Linux says, without a word. */
    R("tee of a closed uvfs fd", syscall(SYS_tee, stale, p[1], 1, 0));
    /* The same calls with kernel fds reach the kernel (the filter). */
    R("tee of pipes", syscall(SYS_tee, p[0], q[1], 1, 0));
    R("io_uring_register of pipes", syscall(SYS_io_uring_register, p[0], 2, &q[0], 1));
    return 0;
}
"##;

#[test]
fn unlisted_calls_with_a_uvfs_operand_are_refused_never_reaching_the_kernel() {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("SKIP: the refusal table is x86-64's");
        return;
    }
    let sc = Scratch::new("raw-refused");
    let Some(bin) = compile_c(&sc, REFUSE_PROG) else {
        return;
    };
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let d = format!("{uv}/d");
    let host = sc.join("host");
    std::fs::create_dir_all(&host).unwrap();
    let u = run(
        &[&bin, &d, host.to_str().unwrap()],
        true,
        &[("UVFS_PREFIX", uv), ("UVFS_TREE", "0")],
    );
    assert!(u.status.success(), "{:?}\n{}", u.status, err(&u));
    assert_eq!(
        out(&u),
        "bpf get a file: same\n\
         bpf get a missing name: same\n\
         bpf pin at a new name: same\n\
         bpf pin at a file: same\n\
         bpf pin in a missing directory: same\n\
         prctl exe file: same\n\
         prctl exe file of a closed uvfs fd: same\n\
         tee: -1 EINVAL\n\
         tee again: -1 EINVAL\n\
         vmsplice: -1 EBADF\n\
         epoll_ctl add: -1 EPERM\n\
         epoll_ctl on it: -1 EINVAL\n\
         epoll_pwait: -1 EINVAL\n\
         inotify_add_watch: -1 EINVAL\n\
         connect: -1 ENOTSOCK\n\
         getsockopt: -1 ENOTSOCK\n\
         timerfd_gettime: -1 EINVAL\n\
         signalfd4: -1 EINVAL\n\
         io_submit: -1 EOPNOTSUPP\n\
         io_uring_enter: -1 EOPNOTSUPP\n\
         io_uring_register files: -1 EOPNOTSUPP\n\
         cachestat: -1 EOPNOTSUPP\n\
         setxattrat: -1 ENOSYS\n\
         file_getattr: -1 ENOSYS\n\
         open_tree: -1 EOPNOTSUPP\n\
         kcmp: -1 EOPNOTSUPP\n\
         waitid P_PIDFD: -1 EBADF\n\
         pidfd_send_signal: -1 EBADF\n\
         sendto a socket path: -1 EOPNOTSUPP\n\
         bind a socket path: -1 EOPNOTSUPP\n\
         mq_notify: -1 EBADF\n\
         setns: -1 EINVAL\n\
         io_uring_setup: -1 ENOSYS\n\
         tee of a closed uvfs fd: -1 EBADF\n\
         tee of pipes: -1 ENOTRECOVERABLE\n\
         io_uring_register of pipes: -1 ENOTRECOVERABLE\n",
        "stderr:\n{}",
        err(&u)
    );
    let said = |call: &str, what: &str, e: &str| {
        format!("uvfs-preload: syscall(SYS_{call}) {what} is not supported ({e})\n")
    };
    let fd = "with a uvfs fd";
    let path = "on a uvfs path";
    let want: String = [
        said("tee", fd, "EINVAL"),
        said("vmsplice", fd, "EBADF"),
        said("epoll_ctl", fd, "EPERM"),
        said("epoll_ctl", fd, "EINVAL"),
        said("epoll_pwait", fd, "EINVAL"),
        said("inotify_add_watch", fd, "EINVAL"),
        said("connect", fd, "ENOTSOCK"),
        said("getsockopt", fd, "ENOTSOCK"),
        said("timerfd_gettime", fd, "EINVAL"),
        said("signalfd4", fd, "EINVAL"),
        said("io_submit", fd, "EOPNOTSUPP"),
        said("io_uring_enter", fd, "EOPNOTSUPP"),
        said("io_uring_register", fd, "EOPNOTSUPP"),
        said("cachestat", fd, "EOPNOTSUPP"),
        said("setxattrat", path, "ENOSYS"),
        said("file_getattr", path, "ENOSYS"),
        said("open_tree", path, "EOPNOTSUPP"),
        said("kcmp", fd, "EOPNOTSUPP"),
        said("waitid", fd, "EBADF"),
        said("pidfd_send_signal", fd, "EBADF"),
        said(
            "sendto",
            "with a socket path under the prefix",
            "EOPNOTSUPP",
        ),
        "uvfs-preload: bind of a socket under the prefix is not supported (EOPNOTSUPP)\n".into(),
        said("mq_notify", fd, "EBADF"),
        said("setns", fd, "EINVAL"),
        said(
            "io_uring_setup",
            "while the process keeps uvfs in its own memory (the kernel would read uvfs fds and paths from the ring, unseen)",
            "ENOSYS",
        ),
    ]
    .concat();
    assert_eq!(err(&u), want);
    assert!(
        !std::path::Path::new(uv).exists(),
        "a raw syscall reached the host at the prefix's path"
    );
}
