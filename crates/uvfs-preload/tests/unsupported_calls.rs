//! No silent fallthrough (issue 14, item 7): every call the shim cannot
//! serve for a uvfs path or fd fails with a clear errno and one line on
//! stderr per call per process, and never reaches the kernel; the calls
//! glibc would otherwise send to the placeholder are served.
//!
//! The prefix is `H/uvfs`, and the host has a decoy directory of that name
//! holding a file, a directory and an executable script of the same names
//! as the program makes in uvfs: a call that leaked to the kernel would
//! find them (read the decoy's data, run the script, which leaves a mark in
//! `H`, bind a socket there, chroot into it), and the test checks that the
//! decoy and `H` are exactly as they were.

use std::path::Path;

mod support;
use support::cprog::{Scratch, compile_c, err, out, run};

const C_CALLS: &str = r##"
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE
#include <aio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fts.h>
#include <ftw.h>
#include <glob.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;
#include "uvfs_test.h"
#define R(tag, expr) do { errno = 0; long r_ = (long)(expr); printf("%s: %s errno %d\n", tag, r_ < 0 ? "-1" : r_ == 0 ? "0" : "ok", r_ < 0 ? errno : 0); } while (0)
static int walk(const char *p, const struct stat *s, int t, struct FTW *f) { return 0; }
static int walk1(const char *p, const struct stat *s, int t) { return 0; }

int main(int argc, char **argv) {
    snprintf(P, sizeof P, "%s", argv[1]);
    int fd = open(at("f"), O_CREAT | O_RDWR | O_TRUNC, 0644);
    write(fd, "uvfs data", 9);
    int pf = open(at("prog"), O_CREAT | O_WRONLY | O_TRUNC, 0755);
    write(pf, "#!/bin/sh\nexit 0\n", 17);
    close(pf);
    mkdir(at("d"), 0755);
    char *av[] = {at("prog"), 0};

    /* Served: a mapping of uvfs's data, never the decoy's. */
    char *m = mmap(0, 9, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("mmap: %s '%.9s'\n", m == MAP_FAILED ? "-1" : "mapped", m == MAP_FAILED ? "" : m);
    m = mmap64(0, 9, PROT_READ, MAP_SHARED, fd, 0);
    printf("mmap64: %s '%.9s'\n", m == MAP_FAILED ? "-1" : "mapped", m == MAP_FAILED ? "" : m);
    m = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap anonymous: %s\n", m == MAP_FAILED ? "failed" : "mapped");

    /* Refused. */
    R("execve", execve(at("prog"), av, environ));
    R("execv", execv(at("prog"), av));
    R("execvp", execvp(at("prog"), av));
    R("execvpe", execvpe(at("prog"), av, environ));
    R("execl", execl(at("prog"), "prog", "a", "b", "c", "d", "e", "f", "g", "h", (char *)0));
    R("execle", execle(at("prog"), "prog", (char *)0, environ));
    R("execlp", execlp(at("prog"), "prog", (char *)0));
    R("execveat path", execveat(AT_FDCWD, at("prog"), av, environ, 0));
    int xf = open(at("prog"), O_RDONLY);
    R("execveat fd", execveat(xf, "", av, environ, AT_EMPTY_PATH));
    R("fexecve", fexecve(xf, av, environ));
    pid_t pid;
    printf("posix_spawn: %d\n", posix_spawn(&pid, at("prog"), 0, 0, av, environ));
    printf("posix_spawnp: %d\n", posix_spawnp(&pid, at("prog"), 0, 0, av, environ));
    R("chroot", chroot(at("d")));
    R("mount", mount("none", at("d"), "tmpfs", 0, 0));
    R("umount", umount(at("d")));
    R("umount2", umount2(at("d"), 0));
    struct { struct file_handle h; char b[128]; } fh = { .h.handle_bytes = 128 };
    int mid;
    R("name_to_handle_at", name_to_handle_at(AT_FDCWD, at("f"), &fh.h, &mid, 0));
    int in = inotify_init1(0);
    R("inotify_add_watch", inotify_add_watch(in, at("f"), IN_MODIFY));
    close(in);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    snprintf(un.sun_path, sizeof un.sun_path, "%s", at("sock"));
    R("bind", bind(s, (struct sockaddr *)&un, sizeof un));
    R("connect", connect(s, (struct sockaddr *)&un, sizeof un));
    close(s);
    int sp[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
    int ufd = open(at("f"), O_RDONLY);
    union { struct cmsghdr h; char b[CMSG_SPACE(2 * sizeof(int))]; } cmb;
    char one = 'x';
    struct iovec iov = { &one, 1 };
    struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cmb.b, .msg_controllen = sizeof cmb.b };
    struct cmsghdr *ch = CMSG_FIRSTHDR(&mh);
    ch->cmsg_level = SOL_SOCKET;
    ch->cmsg_type = SCM_RIGHTS;
    ch->cmsg_len = CMSG_LEN(2 * sizeof(int));
    int pass[2] = {0, ufd};
    memcpy(CMSG_DATA(ch), pass, sizeof pass);
    R("sendmsg of a uvfs fd", sendmsg(sp[0], &mh, 0));
    pass[1] = 1;
    memcpy(CMSG_DATA(ch), pass, sizeof pass);
    R("sendmsg of kernel fds", sendmsg(sp[0], &mh, 0));
    close(ufd);
    close(sp[0]);
    close(sp[1]);
    R("nftw", nftw(P, walk, 4, 0));
    R("ftw", ftw(P, walk1, 4));
    char *roots[] = {P, 0};
    FTS *t = fts_open(roots, FTS_PHYSICAL, 0);
    printf("fts_open: %s errno %d\n", t ? "opened" : "NULL", t ? 0 : errno);
    glob_t g;
    printf("glob: %d\n", glob(at("*"), 0, 0, &g));
    char ab[16];
    struct aiocb cb = { .aio_fildes = fd, .aio_buf = ab, .aio_nbytes = 4 };
    R("aio_read", aio_read(&cb));
    R("aio_write", aio_write(&cb));
    R("aio_fsync", aio_fsync(O_SYNC, &cb));
    cb.aio_lio_opcode = LIO_READ;
    struct aiocb *lst[2] = {0, &cb};
    R("lio_listio", lio_listio(LIO_WAIT, lst, 2, 0));
    int sd = open(P, O_RDONLY | O_DIRECTORY);
    struct dirent **nl;
    R("scandirat", scandirat(sd, "d", &nl, 0, alphasort));
    R("scandirat cwd", scandirat(AT_FDCWD, P, &nl, 0, alphasort));
    close(sd);

    /* Served. */
    struct statvfs sv;
    R("statvfs", statvfs(P, &sv));
    printf("  namemax %lu\n", sv.f_namemax);
    R("fstatvfs", fstatvfs(fd, &sv));
    R("statvfs missing", statvfs(at("missing"), &sv));
    struct timeval tv[2] = {{1000000, 0}, {2000000, 0}};
    R("futimesat", futimesat(AT_FDCWD, at("f"), tv));
    struct stat st;
    stat(at("f"), &st);
    printf("  mtime %ld\n", (long)st.st_mtime);
    char b[32] = {0};
    struct iovec iv = {b, 4};
    R("preadv2", preadv2(fd, &iv, 1, 5, 0));
    printf("  read '%s'\n", b);
    lseek(fd, 0, SEEK_SET);
    struct iovec wv = {"UVFS", 4};
    R("pwritev2 at the position", pwritev2(fd, &wv, 1, -1, RWF_DSYNC));
    printf("  position %ld\n", (long)lseek(fd, 0, SEEK_CUR));
    R("pwritev2 RWF_APPEND", pwritev2(fd, &wv, 1, 0, RWF_APPEND));
    R("preadv2 unknown flag", preadv2(fd, &iv, 1, 0, 0x40000000));
    R("readahead", readahead(fd, 0, 4096));
    R("sync_file_range", sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE));
    R("sync_file_range bad flags", sync_file_range(fd, 0, 0, 8));
    R("syncfs", syncfs(fd));
    int dfd = open(P, O_RDONLY | O_DIRECTORY);
    char db[4096];
    off_t base = -1;
    R("getdirentries64", getdirentries64(dfd, db, sizeof db, &base));
    printf("  base %ld\n", (long)base);
    close(dfd);
    int pp[2];
    pipe(pp);
    loff_t off = 0;
    R("splice file to pipe", splice(fd, &off, pp[1], 0, 9, 0));
    memset(b, 0, sizeof b);
    read(pp[0], b, sizeof b - 1);
    printf("  pipe got '%s' offset %ld\n", b, (long)off);
    write(pp[1], "spliced", 7);
    off = 20;
    R("splice pipe to file", splice(pp[0], 0, fd, &off, 7, 0));
    memset(b, 0, sizeof b);
    pread(fd, b, 7, 20);
    printf("  file got '%s'\n", b);
    R("splice file to file", splice(fd, 0, fd, 0, 7, 0));
    return 0;
}
"##;

/// Every line the program prints under the shim.
const WANT: &str = "\
mmap: mapped 'uvfs data'
mmap64: mapped 'uvfs data'
mmap anonymous: mapped
execve: -1 errno 13
execv: -1 errno 13
execvp: -1 errno 13
execvpe: -1 errno 13
execl: -1 errno 13
execle: -1 errno 13
execlp: -1 errno 13
execveat path: -1 errno 13
execveat fd: -1 errno 13
fexecve: -1 errno 13
posix_spawn: 13
posix_spawnp: 13
chroot: -1 errno 95
mount: -1 errno 95
umount: -1 errno 95
umount2: -1 errno 95
name_to_handle_at: -1 errno 95
inotify_add_watch: -1 errno 95
bind: -1 errno 95
connect: -1 errno 95
sendmsg of a uvfs fd: -1 errno 95
sendmsg of kernel fds: ok errno 0
nftw: -1 errno 95
ftw: -1 errno 95
fts_open: NULL errno 95
glob: 2
aio_read: -1 errno 95
aio_write: -1 errno 95
aio_fsync: -1 errno 95
lio_listio: -1 errno 95
scandirat: -1 errno 95
scandirat cwd: ok errno 0
statvfs: 0 errno 0
  namemax 255
fstatvfs: 0 errno 0
statvfs missing: -1 errno 2
futimesat: 0 errno 0
  mtime 2000000
preadv2: ok errno 0
  read 'data'
pwritev2 at the position: ok errno 0
  position 4
pwritev2 RWF_APPEND: ok errno 0
preadv2 unknown flag: -1 errno 95
readahead: 0 errno 0
sync_file_range: 0 errno 0
sync_file_range bad flags: -1 errno 22
syncfs: 0 errno 0
getdirentries64: ok errno 0
  base 0
splice file to pipe: ok errno 0
  pipe got 'UVFS data' offset 9
splice pipe to file: ok errno 0
  file got 'spliced'
splice file to file: -1 errno 22
";

/// The calls refused, each named once on stderr (`umount` and `umount2`
/// share a line).
const REFUSED: &[&str] = &[
    "execve of a uvfs file is not supported (EACCES)",
    "execv of a uvfs file is not supported (EACCES)",
    "execvp of a uvfs file is not supported (EACCES)",
    "execvpe of a uvfs file is not supported (EACCES)",
    "execl of a uvfs file is not supported (EACCES)",
    "execle of a uvfs file is not supported (EACCES)",
    "execlp of a uvfs file is not supported (EACCES)",
    "execveat of a uvfs file is not supported (EACCES)",
    "fexecve of a uvfs file is not supported (EACCES)",
    "posix_spawn of a uvfs file is not supported (EACCES)",
    "posix_spawnp of a uvfs file is not supported (EACCES)",
    "chroot into a uvfs directory is not supported (EOPNOTSUPP)",
    "mount on a uvfs directory is not supported (EOPNOTSUPP)",
    "umount of a uvfs directory is not supported (EOPNOTSUPP)",
    "name_to_handle_at on a uvfs file is not supported (EOPNOTSUPP)",
    "inotify_add_watch on a uvfs file is not supported (EOPNOTSUPP)",
    "bind of a socket under the prefix is not supported (EOPNOTSUPP)",
    "connect to a socket under the prefix is not supported (EOPNOTSUPP)",
    "sendmsg of a uvfs fd (SCM_RIGHTS) is not supported (EOPNOTSUPP)",
    "nftw of a uvfs directory is not supported (EOPNOTSUPP)",
    "ftw of a uvfs directory is not supported (EOPNOTSUPP)",
    "fts_open of a uvfs directory is not supported (EOPNOTSUPP)",
    "glob of a uvfs path is not supported (EOPNOTSUPP)",
    "aio_read on a uvfs file is not supported (EOPNOTSUPP)",
    "aio_write on a uvfs file is not supported (EOPNOTSUPP)",
    "aio_fsync on a uvfs file is not supported (EOPNOTSUPP)",
    "lio_listio on a uvfs file is not supported (EOPNOTSUPP)",
    "scandirat of a uvfs directory from a directory fd is not supported (EOPNOTSUPP)",
];

/// A directory's entries with their contents (files) or `dir`, sorted.
fn snapshot(d: &Path) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let what = if e.file_type().unwrap().is_dir() {
                "dir".to_string()
            } else {
                String::from_utf8_lossy(&std::fs::read(e.path()).unwrap_or_default()).into_owned()
            };
            (e.file_name().to_string_lossy().into_owned(), what)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn unserved_calls_fail_loudly_and_never_reach_the_host() {
    let dir = Scratch::new("unsupported");
    let Some(bin) = compile_c(&dir, C_CALLS) else {
        return;
    };
    let h = dir.join("h");
    let decoy = h.join("uvfs");
    std::fs::create_dir_all(decoy.join("d")).unwrap();
    std::fs::write(decoy.join("f"), "host").unwrap();
    let script = format!("#!/bin/sh\ntouch {}/LEAKED-exec\n", h.display());
    std::fs::write(decoy.join("prog"), script).unwrap();
    std::fs::set_permissions(
        decoy.join("prog"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let before_h = snapshot(&h);
    let before_decoy = snapshot(&decoy);
    let o = run(
        &[&bin, decoy.to_str().unwrap()],
        true,
        // UVFS_TREE=0: the refusals of a process that keeps its own uvfs
        // (in a tree, exec and mmap go through the tree's mount).
        &[("UVFS_PREFIX", decoy.to_str().unwrap()), ("UVFS_TREE", "0")],
    );
    assert!(
        o.status.success(),
        "status {:?}; stderr:\n{}",
        o.status,
        err(&o)
    );
    assert_eq!(out(&o), WANT, "stderr:\n{}", err(&o));
    let lines: Vec<String> = err(&o).lines().map(str::to_string).collect();
    let mut want: Vec<String> = REFUSED
        .iter()
        .map(|l| format!("uvfs-preload: {l}"))
        .collect();
    want.sort();
    let mut got = lines.clone();
    got.sort();
    assert_eq!(got, want, "stderr, one line per refused call");
    assert_eq!(snapshot(&decoy), before_decoy, "the host's decoy changed");
    assert_eq!(snapshot(&h), before_h, "something reached the host");
}

/// The refusal is said once per process: a forked child says it again.
#[test]
fn refusals_are_said_once_per_process() {
    let src = r#"
#include <stdio.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char p[4096];
    snprintf(p, sizeof p, "%s/f", argv[1]);
    int fd = open(p, O_CREAT | O_RDWR, 0644);
    int in = inotify_init1(0);
    for (int i = 0; i < 3; i++) inotify_add_watch(in, p, IN_MODIFY);
    pid_t c = fork();
    if (c == 0) { inotify_add_watch(in, p, IN_MODIFY); inotify_add_watch(in, p, IN_MODIFY); _exit(0); }
    waitpid(c, 0, 0);
    return 0;
}
"#;
    let dir = Scratch::new("unsupported-once");
    let Some(bin) = compile_c(&dir, src) else {
        return;
    };
    let o = run(
        &[&bin, "/uvfs"],
        true,
        &[("UVFS_PREFIX", "/uvfs"), ("UVFS_TREE", "0")],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        err(&o),
        "uvfs-preload: inotify_add_watch on a uvfs file is not supported (EOPNOTSUPP)\n".repeat(2)
    );
}
