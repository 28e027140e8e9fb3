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
