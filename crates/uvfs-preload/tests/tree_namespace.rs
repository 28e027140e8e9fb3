//! One uvfs for the whole process tree (`src/namespace.rs`): shell
//! scripts whose children and exec'd programs write and read under the
//! prefix, each run twice, on a host tmpfs directory and under the shim
//! with the prefix at a path absent on the host, and compared (same
//! stdout with the directory masked, same exit status). After every run
//! under the shim: no mount at the prefix in this process's namespace and
//! no process of the run left alive (its server included), found by a tag
//! in the environment.
//!
//! These need root and `/dev/fuse` (a FUSE mount in a private mount
//! namespace); without them each case is skipped with a message.

use std::io::Write;
use std::process::{Command, Output, Stdio};

mod support;
use support::cprog::{Scratch, compile_c, have};
use support::shim;
use support::tree::{bash, can_mount, no_leftovers, run_c_in_tree, tag, tree_server};

/// Runs `script` on a host directory and under the shim; compares stdout
/// (the directory masked as `$D`) and exit status; checks for leftovers.
/// `setup` prepares the scratch directory (inputs outside both trees).
fn same(name: &str, script: &str) -> Option<String> {
    if !can_mount() {
        return None;
    }
    let sc = Scratch::new(&format!("tree-{name}"));
    let host = sc.join("host");
    std::fs::create_dir(&host).unwrap();
    let uv = sc.join("uvfs");
    let (host, uv) = (host.to_str().unwrap(), uv.to_str().unwrap());
    let t = tag(name);
    let h = bash(&sc, script, host, None);
    let u = bash(&sc, script, uv, Some(&t));
    no_leftovers(&t, uv);
    let mask = |o: &Output, d: &str| String::from_utf8_lossy(&o.stdout).replace(d, "$D");
    let (ho, uo) = (mask(&h, host), mask(&u, uv));
    assert_eq!(
        ho,
        uo,
        "stdout differs (host, then shim); shim's stderr:\n{}",
        String::from_utf8_lossy(&u.stderr)
    );
    assert_eq!(
        h.status.code(),
        u.status.code(),
        "exit status differs; host stderr:\n{}\nshim stderr:\n{}",
        String::from_utf8_lossy(&h.stderr),
        String::from_utf8_lossy(&u.stderr)
    );
    assert!(
        h.status.success(),
        "the host run failed:\n{}",
        String::from_utf8_lossy(&h.stderr)
    );
    let e = String::from_utf8_lossy(&u.stderr).into_owned();
    assert!(!e.contains("uvfs-preload"), "the shim complained:\n{e}");
    Some(uo)
}

#[test]
fn a_child_makes_a_file_that_an_execd_program_reads() {
    let out = same(
        "oneliner",
        "mkdir -p $D/a && echo hi > $D/a/f && cat $D/a/f",
    );
    if let Some(o) = out {
        assert_eq!(o, "hi\n");
    }
}

#[test]
fn find_and_du_see_what_tar_extracted_in_the_same_shell() {
    if !have("tar") {
        return;
    }
    // The archive: 3 directories of 20 files of 0 to 19 KiB, outside
    // both trees.
    let src = Scratch::new("tree-tar-src");
    for d in 0..3 {
        let dir = src.join(&format!("t/d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..20 {
            std::fs::write(dir.join(format!("f{f}")), vec![b'x'; f * 1024 + d]).unwrap();
        }
    }
    let tarball = src.join("t.tar");
    let st = Command::new("tar")
        .arg("-cf")
        .arg(&tarball)
        .arg("-C")
        .arg(src.path())
        .arg("t")
        .status()
        .unwrap();
    assert!(st.success());
    let script = format!(
        "mkdir -p $D && cd $D && tar -xf {} && find . | wc -l && du -s . && du -s --apparent-size -b t && ls t/d1 | wc -l",
        tarball.display()
    );
    if let Some(o) = same("tar", &script) {
        assert!(o.starts_with("65\n"), "{o}");
    }
}

#[test]
fn make_compiles_links_and_runs_a_c_project() {
    if !have("make") || !have("cc") {
        return;
    }
    let script = r#"mkdir -p $D/c && cd $D/c &&
printf 'int add(int a, int b);\nint main(void) { return add(2, 3) == 5 ? 0 : 1; }\n' > main.c &&
printf 'int add(int a, int b) { return a + b; }\n' > add.c &&
printf 'prog: main.o add.o\n\tcc -o prog main.o add.o\n%%.o: %%.c\n\tcc -c $< -o $@\n' > Makefile &&
make && ./prog && echo ran && make && ls"#;
    if let Some(o) = same("make", script) {
        assert!(o.contains("ran\nmake: 'prog' is up to date."), "{o}");
    }
}

#[test]
fn git_init_add_commit_log_status() {
    if !have("git") {
        return;
    }
    let script = r#"mkdir -p $D/g && cd $D/g && git init -q -b main &&
git config user.email t@example.com && git config user.name t &&
echo one > a && mkdir sub && echo two > sub/b && git add a sub &&
git commit -q -m first && echo three >> a && git commit -q -am second &&
git log --format=%s && echo new > c && git status --short && git ls-files"#;
    if let Some(o) = same("git", script) {
        assert!(o.starts_with("second\nfirst\n?? c\na\nsub/b\n"), "{o}");
    }
}

#[test]
fn a_pipeline_between_children() {
    let script = r#"mkdir -p $D && printf 'b\na\nc\na\n' > $D/in &&
cat $D/in | sort | uniq -c | tee $D/out | wc -l && cat $D/out && (echo sub > $D/sub) && cat $D/sub"#;
    if let Some(o) = same("pipe", script) {
        assert!(o.ends_with("sub\n"), "{o}");
    }
}

/// A C program: the parent opens a file, writes, dups the fd and forks
/// (its uvfs fds are reopened through the mount then: the dup must still
/// share the offset); the child writes through the inherited duplicate
/// and makes a new file;
/// the parent waits, writes again, and reads everything back.
#[test]
fn a_forked_child_writes_and_the_parent_reads_after_wait() {
    if !have("cc") || !can_mount() {
        return;
    }
    let bin_dir = Scratch::new("tree-fork-bin");
    let src = r#"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char p[4096], q[4096], buf[256];
    snprintf(p, sizeof p, "%s/f", argv[1]);
    snprintf(q, sizeof q, "%s/child", argv[1]);
    mkdir(argv[1], 0755);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 1; }
    write(fd, "p1", 2);
    int fd2 = dup(fd);
    pid_t pid = fork();
    if (pid == 0) {
        write(fd2, "c1", 2);
        int g = open(q, O_WRONLY | O_CREAT, 0600);
        write(g, "from child\n", 11);
        close(g);
        _exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    write(fd, "p2", 2);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = 0;
    printf("f: %s (offset shared: %s)\n", buf, strcmp(buf, "p1c1p2") == 0 ? "yes" : "no");
    int g = open(q, O_RDONLY);
    if (g < 0) { perror("open child's file"); return 1; }
    n = read(g, buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = 0;
    printf("child: %s", buf);
    return 0;
}
"#;
    let bin = std::path::PathBuf::from(compile_c(&bin_dir, src).expect("cc is there"));
    let script = format!("{} $D/x", bin.display());
    let o = same("fork", &script).unwrap();
    assert_eq!(o, "f: p1c1p2 (offset shared: yes)\nchild: from child\n");
}

/// A mapping the first process made on a file before its first child
/// (the library's memfd, in the process) and a child's reads, writes and
/// mapping of the same file through the tree's mount see the same bytes
/// at once, both ways: the mount serves the file through FUSE passthrough
/// on that memfd, so there is one page cache. The steps are ordered by
/// pipes, never by time.
#[test]
fn a_mapping_before_the_fork_and_a_childs_io_through_the_mount_agree() {
    if !have("cc") || !can_mount() {
        return;
    }
    let bin_dir = Scratch::new("tree-mmap-bin");
    let src = r#"
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
static void say(const char *who, const char *what, const char *p, size_t n) {
    char b[64];
    memcpy(b, p, n);
    b[n] = 0;
    for (size_t i = 0; i < n; i++) if (!b[i]) b[i] = '.';
    printf("%s %s: %s\n", who, what, b);
    fflush(stdout);
}
int main(int argc, char **argv) {
    char p[4096], c, b[64];
    snprintf(p, sizeof p, "%s/m", argv[1]);
    mkdir(argv[1], 0755);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 8192) != 0) { perror("open"); return 1; }
    char *m = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 1; }
    memcpy(m, "parent-before", 13);
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) { perror("pipe"); return 1; }
    pid_t pid = fork();
    if (pid == 0) {
        int g = open(p, O_RDWR);
        if (g < 0) { perror("child open"); _exit(1); }
        /* a read first: a page cache of the mount's own would keep it */
        pread(g, b, 13, 0);
        say("child", "read 0", b, 13);
        char *cm = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, g, 0);
        if (cm == MAP_FAILED) { perror("child mmap"); _exit(1); }
        say("child", "map 0", cm, 13);
        memcpy(cm + 100, "child-store", 11);
        write(to_parent[1], "1", 1);
        read(to_child[0], &c, 1);
        pread(g, b, 12, 0);
        say("child", "read 0", b, 12);
        say("child", "map 300", cm + 300, 12);
        pwrite(g, "child-write", 11, 4200);
        write(to_parent[1], "1", 1);
        _exit(0);
    }
    read(to_parent[0], &c, 1);
    say("parent", "map 100", m + 100, 11);
    memcpy(m, "parent-after", 12);
    memcpy(m + 300, "parent-store", 12);
    write(to_child[1], "1", 1);
    read(to_parent[0], &c, 1);
    say("parent", "map 4200", m + 4200, 11);
    int st;
    waitpid(pid, &st, 0);
    pread(fd, b, 11, 100);
    say("parent", "read 100", b, 11);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
"#;
    let bin = std::path::PathBuf::from(compile_c(&bin_dir, src).expect("cc is there"));
    let script = format!("{} $D/x", bin.display());
    let o = same("mmap-tree", &script).unwrap();
    assert_eq!(
        o,
        "child read 0: parent-before\nchild map 0: parent-before\n\
         parent map 100: child-store\nchild read 0: parent-after\nchild map 300: parent-store\n\
         parent map 4200: child-write\n\
         parent read 100: child-store\n"
    );
}

/// `kill -9` of the server: the tree's next call under the prefix fails
/// with `ENOTCONN`, said by the program; nothing is left behind.
#[test]
fn a_killed_server_gives_enotconn() {
    if !can_mount() {
        return;
    }
    let sc = Scratch::new("tree-kill");
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let t = tag("kill");
    // The first command forks (the server starts); then bash waits for a
    // line on stdin before reading the file.
    let mut child = Command::new("bash")
        .arg("-c")
        .arg("/bin/true && echo x > $D/f && echo wrote && read line && cat $D/f; echo rc=$?")
        .env("D", uv)
        .env("LC_ALL", "C")
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", uv)
        .env("UVFS_TREE_TEST_TAG", &t)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 6];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    assert_eq!(&first, b"wrote\n");
    let server = tree_server(&t);
    // SAFETY: a pid found above; SIGKILL.
    unsafe { libc::kill(server, libc::SIGKILL) };
    // SIGKILL is delivered asynchronously: wait until the server is dead
    // (a zombie or gone), so its /dev/fuse fd is closed.
    // (Its environment goes before its fds do: its state in /proc tells.)
    for _ in 0..600 {
        let stat = std::fs::read_to_string(format!("/proc/{server}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
        if matches!(state, None | Some('Z' | 'X')) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut out = String::from_utf8_lossy(&first).into_owned();
    std::io::Read::read_to_string(&mut stdout, &mut out).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Transport endpoint is not connected")
            && err.contains("server is gone (ENOTCONN)"),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(out.ends_with("rc=1\n"), "{out}");
    no_leftovers(&t, uv);
}

/// The tree's server grows its fd table, while it has one thread, to hold
/// the high numbers its memfds take (from three quarters of the soft
/// `RLIMIT_NOFILE`, at most 4096): grown later, under its worker threads,
/// it waited for an RCU grace period (5 to 10 ms at the tree's first new
/// file). Seen in `/proc/PID/status` (`FDSize`) before any file is made;
/// the server of a shim without the growing shows the table it was forked
/// with (256 here).
#[test]
fn the_servers_fd_table_holds_the_memfds_before_its_threads_start() {
    if !can_mount() {
        return;
    }
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a valid, writable `struct rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 || lim.rlim_cur < 16 {
        return;
    }
    let floor = (lim.rlim_cur / 4 * 3).min(4096);
    let sc = Scratch::new("tree-fdtable");
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let t = tag("fdtable");
    // The first command forks (the server starts); then bash waits for a
    // line on stdin, having made no file.
    let mut child = Command::new("bash")
        .arg("-c")
        .arg("/bin/true && echo started && read line")
        .env("D", uv)
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", uv)
        .env("UVFS_TREE_TEST_TAG", &t)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 8];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    assert_eq!(&first, b"started\n");
    let server = tree_server(&t);
    let status = std::fs::read_to_string(format!("/proc/{server}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name} in:\n{status}"))
    };
    let (size, threads) = (field("FDSize:"), field("Threads:"));
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    no_leftovers(&t, uv);
    assert!(threads > 1, "the server's workers run: {threads} thread(s)");
    assert!(
        size > floor,
        "the server's fd table holds {size} fds before its first file; its memfds go from {floor} on"
    );
}

/// A process with a second thread (made with `pthread_create`) starts the
/// tree at its first child all the same: it moved to a mount namespace of
/// its own at that thread's creation, while it had one thread.
#[test]
fn a_threaded_parent_shares_its_tree() {
    let src = r#"
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
static void *idle(void *a) { pause(); return a; }
int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, 0, idle, 0);
    mkdir(argv[1], 0755);
    pid_t pid = fork();
    if (pid == 0) { _exit(mkdir(argv[2], 0755) == 0 ? 0 : 1); }
    int st;
    waitpid(pid, &st, 0);
    struct stat sb;
    printf("child ok %d, parent sees it %d\n", WEXITSTATUS(st) == 0, stat(argv[2], &sb) == 0);
    return 0;
}
"#;
    let Some((out, err)) = run_c_in_tree("threads", src, &["$U/a", "$U/a/b"]) else {
        return;
    };
    assert_eq!(out, "child ok 1, parent sees it 1\n", "{err}");
    assert!(!err.contains("cannot share"), "{err}");
}

/// A second thread made without `pthread_create` (glibc's `clone` with
/// `CLONE_THREAD`) is not seen before it exists: the process, with two
/// threads, cannot change its mount namespace at its first child, says so
/// once, and its children get a copy (the behaviour before trees, loudly).
#[test]
fn a_thread_made_by_clone_leaves_children_a_copy() {
    let src = r#"
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
static int idle(void *a) { for (;;) pause(); return 0; }
int main(int argc, char **argv) {
    char *stack = malloc(1 << 16);
    clone(idle, stack + (1 << 16), CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, 0);
    mkdir(argv[1], 0755);
    pid_t pid = fork();
    if (pid == 0) { _exit(mkdir(argv[2], 0755) == 0 ? 0 : 1); }
    int st;
    waitpid(pid, &st, 0);
    struct stat sb;
    printf("child ok %d, parent sees it %d\n", WEXITSTATUS(st) == 0, stat(argv[2], &sb) == 0);
    fflush(stdout);
    _exit(0);
}
"#;
    let Some((out, err)) = run_c_in_tree("clone-thread", src, &["$U/a", "$U/a/b"]) else {
        return;
    };
    assert_children_got_copies(&out, &err);
}

/// The fallback of a threaded parent that could not start a tree: its
/// child made `a/b` in a copy the parent does not see, and the first child
/// said so once, naming the threads (or, where /dev/fuse is closed to
/// users other than root, as on some machines that make it mode 0600,
/// naming that: the unprivileged server cannot open it).
fn assert_children_got_copies(out: &str, err: &str) {
    assert_eq!(out, "child ok 1, parent sees it 0\n", "{err}");
    assert_eq!(
        err.matches("the process tree cannot share uvfs").count(),
        1,
        "{err}"
    );
    let closed =
        dev_fuse_closed_to_users() && err.contains("(/dev/fuse: Permission denied (os error 13))");
    assert!(err.contains("several threads") || closed, "{err}");
}

/// /dev/fuse lacks read and write for others (distributions make it 0666;
/// some machines leave it 0600, root's alone).
fn dev_fuse_closed_to_users() -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata("/dev/fuse").is_ok_and(|m| m.permissions().mode() & 0o006 != 0o006)
}

/// A threaded process that may not change its mount namespace (it dropped
/// root before its first thread, so `unshare` is refused there): nothing
/// is said at the thread, and its first child says once that the tree
/// cannot share uvfs, as before.
#[test]
fn a_threaded_parent_without_privilege_says_its_children_get_a_copy() {
    let src = r#"
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
static void *idle(void *a) { pause(); return a; }
int main(int argc, char **argv) {
    if (setgid(65534) != 0 || setuid(65534) != 0) { perror("setuid"); return 2; }
    pthread_t t;
    pthread_create(&t, 0, idle, 0);
    fprintf(stderr, "thread made\n");
    mkdir(argv[1], 0755);
    pid_t pid = fork();
    if (pid == 0) { _exit(mkdir(argv[2], 0755) == 0 ? 0 : 1); }
    int st;
    waitpid(pid, &st, 0);
    struct stat sb;
    printf("child ok %d, parent sees it %d\n", WEXITSTATUS(st) == 0, stat(argv[2], &sb) == 0);
    return 0;
}
"#;
    let Some((out, err)) = run_c_in_tree("threads-unprivileged", src, &["$U/a", "$U/a/b"]) else {
        return;
    };
    assert!(err.starts_with("thread made\n"), "{err}");
    assert_children_got_copies(&out, &err);
}

/// Two threads that hold uvfs files open and keep writing to them, and a
/// third asleep in a read of a uvfs FIFO, while the main thread runs a
/// child (`system`): the child sees the parent's files, the parent sees
/// the child's writes through the fd it held, the writing threads' fds go
/// on working across the switch and their data lands in the tree (a
/// second child counts it), and the sleeping reader does not hold the
/// switch up: its read is cancelled, the FIFO moves to the mount (nothing
/// said), and the read, made again there, is woken by the main thread's
/// write through its fd, which moved too.
#[test]
fn threads_writing_across_the_first_child() {
    let src = r#"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static const char *dir;
static atomic_int stop;
static atomic_long count[2];
static atomic_int failed[2];
static void *writer(void *a) {
    long i = (long)a;
    char path[4096];
    snprintf(path, sizeof path, "%s/t%ld", dir, i);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { failed[i] = errno; return 0; }
    while (!atomic_load(&stop)) {
        if (write(fd, "line\n", 5) != 5) { failed[i] = errno ? errno : -1; break; }
        atomic_fetch_add(&count[i], 1);
    }
    if (close(fd) != 0) failed[i] = errno;
    return 0;
}
static int fifo_fd;
static char got[64];
static void *reader(void *a) {
    ssize_t n = read(fifo_fd, got, sizeof got - 1);
    if (n < 0) snprintf(got, sizeof got, "error %d", errno);
    return a;
}
static long lines(const char *name) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long n = 0;
    if (fscanf(f, "%ld", &n) != 1) n = -2;
    fclose(f);
    return n;
}
int main(int argc, char **argv) {
    dir = argv[1];
    char path[4096], cmd[16384];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/p", dir);
    int p = open(path, O_RDWR | O_CREAT, 0644);
    write(p, "parent\n", 7);
    snprintf(path, sizeof path, "%s/fifo", dir);
    mkfifo(path, 0644);
    fifo_fd = open(path, O_RDWR);
    pthread_t w[2], r;
    for (long i = 0; i < 2; i++) pthread_create(&w[i], 0, writer, (void *)i);
    pthread_create(&r, 0, reader, 0);
    while (atomic_load(&count[0]) < 1 || atomic_load(&count[1]) < 1) usleep(100);
    snprintf(cmd, sizeof cmd,
             "cat %s/p; test -s %s/t0 && test -s %s/t1 && echo child sees the threads files; "
             "echo more >> %s/p; echo child > %s/c",
             dir, dir, dir, dir, dir);
    int st = system(cmd);
    printf("system %d\n", st);
    /* The writers go on after the switch. */
    long after[2] = {atomic_load(&count[0]), atomic_load(&count[1])};
    while (atomic_load(&count[0]) < after[0] + 1000 || atomic_load(&count[1]) < after[1] + 1000)
        if (failed[0] || failed[1]) break;
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(w[i], 0);
    printf("writers failed %d %d\n", failed[0], failed[1]);
    /* The parent reads the child's append through the fd it held. */
    char buf[64] = {0};
    pread(p, buf, sizeof buf - 1, 0);
    printf("parent's fd reads: %s", buf);
    snprintf(path, sizeof path, "%s/c", dir);
    FILE *c = fopen(path, "r");
    printf("parent sees c: %s", c && fgets(buf, sizeof buf, c) ? buf : "nothing\n");
    /* A second child counts the threads' lines in the tree. */
    snprintf(cmd, sizeof cmd, "wc -l < %s/t0 > %s/n0; wc -l < %s/t1 > %s/n1", dir, dir, dir, dir);
    system(cmd);
    printf("t0 lines match %d, t1 lines match %d\n", lines("n0") == atomic_load(&count[0]),
           lines("n1") == atomic_load(&count[1]));
    /* The reader, asleep in its FIFO across the switch, is woken. */
    write(fifo_fd, "wake\n", 5);
    pthread_join(r, 0);
    printf("reader got: %s", got);
    return 0;
}
"#;
    let Some((out, err)) = run_c_in_tree("threads-writing", src, &["$U/d"]) else {
        return;
    };
    assert_eq!(
        out,
        "parent\nchild sees the threads files\nsystem 0\nwriters failed 0 0\n\
         parent's fd reads: parent\nmore\nparent sees c: child\n\
         t0 lines match 1, t1 lines match 1\nreader got: wake\n",
        "{err}"
    );
    assert!(!err.contains("cannot share"), "{err}");
    assert!(!err.contains("stay private"), "{err}");
}

/// A real program: Python with a thread started before `subprocess.run`.
#[test]
fn python_with_a_thread_runs_a_subprocess_in_the_tree() {
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("SKIP: no /usr/bin/python3");
        return;
    }
    if !can_mount() {
        return;
    }
    let sc = Scratch::new("tree-python-thread");
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let t = tag("python-thread");
    let script = r#"
import os, subprocess, sys, threading
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
stop = threading.Event()
def work():
    with open(os.path.join(d, "t"), "w") as f:
        while not stop.is_set():
            f.write("x\n"); f.flush()
            stop.wait(0.001)
th = threading.Thread(target=work); th.start()
with open(os.path.join(d, "p"), "w") as f:
    f.write("from parent\n")
r = subprocess.run(["sh", "-c", 'cat "$0/p"; echo from child > "$0/c"', d],
                   capture_output=True, text=True)
stop.set(); th.join()
print(r.returncode, r.stdout, end="")
print(open(os.path.join(d, "c")).read(), end="")
print("thread wrote", os.path.getsize(os.path.join(d, "t")) > 0)
"#;
    let o = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(script)
        .arg(format!("{uv}/d"))
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", uv)
        .env("UVFS_TREE_TEST_TAG", &t)
        .output()
        .unwrap();
    no_leftovers(&t, uv);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}\n{err}", o.status);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "0 from parent\nfrom child\nthread wrote True\n",
        "{err}"
    );
    assert!(!err.contains("cannot share"), "{err}");
}

/// A Rust program that spawns a thread (`std::thread`) and then runs a
/// `Command`: the thread's open file, written before and after the child,
/// and the child's file all land in the tree.
#[test]
fn a_rust_program_with_a_thread_runs_a_command_in_the_tree() {
    if !have("rustc") || !can_mount() {
        return;
    }
    let sc = Scratch::new("tree-rust-thread");
    let src = sc.join("main.rs");
    std::fs::write(
        &src,
        r#"
use std::io::Write;
use std::sync::mpsc::channel;
fn main() {
    let d = std::env::args().nth(1).unwrap();
    std::fs::create_dir_all(&d).unwrap();
    let (opened, wait_opened) = channel();
    let (go_on, wait_go_on) = channel::<()>();
    let td = d.clone();
    let t = std::thread::spawn(move || {
        let mut f = std::fs::File::create(format!("{td}/t")).unwrap();
        f.write_all(b"from thread\n").unwrap();
        opened.send(()).unwrap();
        wait_go_on.recv().unwrap();
        f.write_all(b"after the child\n").unwrap();
    });
    wait_opened.recv().unwrap();
    let o = std::process::Command::new("sh")
        .args(["-c", "cat \"$0/t\"; echo from child > \"$0/c\"", &d])
        .output()
        .unwrap();
    print!("{}", String::from_utf8_lossy(&o.stdout));
    go_on.send(()).unwrap();
    t.join().unwrap();
    print!("{}", std::fs::read_to_string(format!("{d}/t")).unwrap());
    print!("{}", std::fs::read_to_string(format!("{d}/c")).unwrap());
}
"#,
    )
    .unwrap();
    let bin = sc.join("prog");
    let c = Command::new("rustc")
        .arg("--edition=2021")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .output()
        .unwrap();
    assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let t = tag("rust-thread");
    let o = Command::new(&bin)
        .arg(format!("{uv}/d"))
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", uv)
        .env("UVFS_TREE_TEST_TAG", &t)
        .output()
        .unwrap();
    no_leftovers(&t, uv);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{:?}\n{err}", o.status);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "from thread\nfrom thread\nafter the child\nfrom child\n",
        "{err}"
    );
    assert!(!err.contains("cannot share"), "{err}");
}

/// A process that makes no child keeps uvfs in its own memory: no mount
/// namespace of its own, no mount, no server (the fast path).
#[test]
fn a_process_without_children_stays_in_process() {
    if !have("cc") || !can_mount() {
        return;
    }
    let sc = Scratch::new("tree-alone");
    let src = r#"
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char f[4096], ns[64] = "", line[4096];
    snprintf(f, sizeof f, "%s/f", argv[1]);
    int fd = open(f, O_WRONLY | O_CREAT, 0644);
    printf("open %s\n", fd >= 0 ? "ok" : "failed");
    close(fd);
    ssize_t n = readlink("/proc/self/ns/mnt", ns, sizeof ns - 1);
    ns[n < 0 ? 0 : n] = 0;
    printf("same namespace %d\n", strcmp(ns, argv[2]) == 0);
    FILE *mi = fopen("/proc/self/mountinfo", "r");
    int mounted = 0;
    while (mi && fgets(line, sizeof line, mi)) {
        if (strstr(line, "uvfs-tree:")) mounted = 1;
    }
    printf("tree mount %d\n", mounted);
    return 0;
}
"#;
    let bin = std::path::PathBuf::from(compile_c(&sc, src).expect("cc is there"));
    let ns = std::fs::read_link("/proc/self/ns/mnt").unwrap();
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let t = tag("alone");
    let o = Command::new(&bin)
        .arg(uv)
        .arg(&ns)
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", uv)
        .env("UVFS_TREE_TEST_TAG", &t)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "open ok\nsame namespace 1\ntree mount 0\n",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // No mount point was made on the host either.
    assert!(!std::path::Path::new(uv).exists());
    no_leftovers(&t, uv);
}

/// What the process holds when its first child starts the tree's server
/// moves to the mount: a cwd inside uvfs, an open `DIR` stream, an open
/// file (offset kept); an unlinked file still open cannot be reopened by
/// name and stays private to the process (it still reads its data), said
/// once on stderr. Compared with the same run on a host directory.
#[test]
fn the_first_childs_parent_keeps_its_cwd_stream_and_files() {
    if !have("cc") || !can_mount() {
        return;
    }
    let sc = Scratch::new("tree-carry");
    let src = r#"
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
    char sub[4096], cwd[4096], buf[64];
    snprintf(sub, sizeof sub, "%s/sub", argv[1]);
    mkdir(argv[1], 0755);
    mkdir(sub, 0755);
    if (chdir(sub) != 0) { perror("chdir"); return 1; }
    int fd = open("rel", O_RDWR | O_CREAT, 0644);
    write(fd, "abcdef", 6);
    lseek(fd, 2, SEEK_SET);
    int gone = open("gone", O_RDWR | O_CREAT, 0644);
    write(gone, "zz", 2);
    unlink("gone");
    for (int i = 0; i < 3; i++) { char n[8]; snprintf(n, sizeof n, "e%d", i); close(open(n, O_CREAT | O_WRONLY, 0644)); }
    DIR *d = opendir(".");
    int seen = 0;
    readdir(d);
    fflush(stdout);
    int st = system("pwd; cat rel; echo; ls");
    printf("system %d\n", st);
    while (readdir(d)) seen++;
    printf("stream saw %d more\n", seen);
    closedir(d);
    printf("cwd %s\n", getcwd(cwd, sizeof cwd) ? cwd : "?");
    ssize_t n = read(fd, buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = 0;
    printf("offset kept: %s\n", buf);
    lseek(gone, 0, SEEK_SET);
    n = read(gone, buf, sizeof buf - 1);
    buf[n < 0 ? 0 : n] = 0;
    printf("unlinked: %s\n", buf);
    return 0;
}
"#;
    let bin = std::path::PathBuf::from(compile_c(&sc, src).expect("cc is there"));
    let host = sc.join("host");
    std::fs::create_dir(&host).unwrap();
    let (hd, ud) = (sc.join("host/x"), sc.join("uvfs"));
    let (hd, ud) = (hd.to_str().unwrap(), ud.to_str().unwrap());
    let t = tag("carry");
    let h = Command::new(&bin)
        .arg(hd)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    let u = Command::new(&bin)
        .arg(format!("{ud}/x"))
        .env("LC_ALL", "C")
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", ud)
        .env("UVFS_TREE_TEST_TAG", &t)
        .output()
        .unwrap();
    no_leftovers(&t, ud);
    let ho = String::from_utf8_lossy(&h.stdout).replace(hd, "$D");
    let uo = String::from_utf8_lossy(&u.stdout).replace(&format!("{ud}/x"), "$D");
    let ue = String::from_utf8_lossy(&u.stderr);
    assert_eq!(ho, uo, "shim's stderr:\n{ue}");
    assert_eq!(
        uo,
        "$D/sub\nabcdef\ne0\ne1\ne2\nrel\nsystem 0\nstream saw 5 more\ncwd $D/sub\noffset kept: cdef\nunlinked: zz\n"
    );
    assert_eq!(
        ue.matches("stay private to this process").count(),
        1,
        "{ue}"
    );
}

/// dash as the tree's first process, before any child: a builtin's
/// redirection closes fd 1 and opens the uvfs file on it (the lowest free
/// number), which the shim's placeholder must take without a `dup3` onto
/// itself (that failed with EINVAL and lost the fd: "echo: I/O error").
#[test]
fn dash_redirects_a_builtin_to_a_uvfs_file() {
    if !have("sh") {
        return;
    }
    let sc = Scratch::new("tree-dash");
    let uv = sc.join("uvfs");
    let uv = uv.to_str().unwrap();
    let o = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "echo hi > {uv}/x; echo rc=$?; read l < {uv}/x; echo got=$l"
        ))
        .env("LD_PRELOAD", shim())
        .env("UVFS_PREFIX", uv)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
    assert_eq!(String::from_utf8_lossy(&o.stdout), "rc=0\ngot=hi\n");
}

/// `execl`, `execle` and `execlp` made by the tree's first process (a C
/// program run directly, not from a shell that would have exec'd or
/// forked first): glibc's own versions call its internal `execve`, which
/// the shim would not see, and the new program would start on an empty
/// uvfs. The list goes past the argument registers (onto the stack), and
/// `execle`'s environment arrives. Compared with the same runs on a host
/// directory.
#[test]
fn the_list_forms_of_exec_carry_the_tree() {
    if !have("cc") || !can_mount() {
        return;
    }
    let bin_dir = Scratch::new("tree-execl-bin");
    let src = r#"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
    char f[4096];
    snprintf(f, sizeof f, "%s/f", argv[1]);
    mkdir(argv[1], 0755);
    int fd = open(f, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) { perror("open"); return 1; }
    write(fd, "made before exec\n", 17);
    close(fd);
    if (strcmp(argv[2], "l") == 0)
        execl("/bin/cat", "cat", f, f, f, f, f, f, f, (char *)0);
    else if (strcmp(argv[2], "lp") == 0)
        execlp("cat", "cat", f, (char *)0);
    else {
        int n = 0;
        while (environ[n]) n++;
        char **env = calloc(n + 2, sizeof *env);
        memcpy(env, environ, n * sizeof *env);
        env[n] = "X=from envp";
        execle("/bin/sh", "sh", "-c", "cat \"$1\"; echo \"$X\"", "sh", f, (char *)0, env);
    }
    perror("exec");
    return 1;
}
"#;
    let bin = compile_c(&bin_dir, src).expect("cc is there");
    for form in ["l", "lp", "le"] {
        let sc = Scratch::new(&format!("tree-execl-{form}"));
        let host = sc.join("host");
        let uv = sc.join("uvfs");
        let (host, uv) = (host.to_str().unwrap(), uv.to_str().unwrap());
        let t = tag(&format!("execl-{form}"));
        let h = Command::new(&bin).args([host, form]).output().unwrap();
        let u = Command::new(&bin)
            .args([uv, form])
            .env("LD_PRELOAD", shim())
            .env("UVFS_PREFIX", uv)
            .env("UVFS_TREE_TEST_TAG", &t)
            .output()
            .unwrap();
        no_leftovers(&t, uv);
        let (ho, uo) = (
            String::from_utf8_lossy(&h.stdout),
            String::from_utf8_lossy(&u.stdout),
        );
        let want = match form {
            "l" => "made before exec\n".repeat(7),
            "lp" => "made before exec\n".into(),
            _ => "made before exec\nfrom envp\n".into(),
        };
        assert_eq!(ho, want, "{form}: the host run");
        assert_eq!(
            uo,
            want,
            "{form}: under the shim; stderr:\n{}",
            String::from_utf8_lossy(&u.stderr)
        );
        assert!(u.status.success(), "{form}: {:?}", u.status);
        assert!(
            !String::from_utf8_lossy(&u.stderr).contains("uvfs-preload"),
            "{form}: the shim complained:\n{}",
            String::from_utf8_lossy(&u.stderr)
        );
    }
}

/// `UVFS_DUMP` from a shell that leaves with `_exit` (dash runs no atexit
/// handler): alone (the process's own uvfs is dumped) and after a child
/// (the tree's mount is). The dump must be there when the shell's exit
/// status is.
#[test]
fn a_shell_that_leaves_with_underscore_exit_still_dumps() {
    if !have("dash") {
        return;
    }
    let cases: &[(&str, &str, bool)] = &[
        ("alone", "echo alone > $D/f", false),
        (
            "tree",
            "mkdir $D/d && /bin/echo from-child > $D/d/c && echo parent > $D/f",
            true,
        ),
    ];
    for &(name, script, tree) in cases {
        if tree && !can_mount() {
            continue;
        }
        let sc = Scratch::new(&format!("tree-dash-{name}"));
        let uv = sc.join("uvfs");
        let dump = sc.join("dump");
        let t = tag(&format!("dash-{name}"));
        let o = Command::new("dash")
            .arg("-c")
            .arg(script)
            .env("D", &uv)
            .env("LD_PRELOAD", shim())
            .env("UVFS_PREFIX", &uv)
            .env("UVFS_DUMP", &dump)
            .env("UVFS_TREE_TEST_TAG", &t)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{name}: {:?}\n{stderr}", o.status);
        // Read before waiting for leftovers: the dump must be complete
        // when the shell's status is known.
        let f = std::fs::read_to_string(dump.join("f"));
        let c = std::fs::read_to_string(dump.join("d/c"));
        no_leftovers(&t, uv.to_str().unwrap());
        if tree {
            assert_eq!(f.as_deref().ok(), Some("parent\n"), "{name}\n{stderr}");
            assert_eq!(c.as_deref().ok(), Some("from-child\n"), "{name}\n{stderr}");
        } else {
            assert_eq!(f.as_deref().ok(), Some("alone\n"), "{name}\n{stderr}");
        }
    }
}
