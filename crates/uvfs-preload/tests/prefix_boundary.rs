//! The prefix's boundary, crossed as the kernel crosses a directory
//! (issue 14, item 2): `..` at the prefix's root leads to its parent on the
//! host, a kernel directory fd plus a relative path that enters the prefix
//! reaches uvfs, a uvfs directory fd plus `..`s that leave it reaches the
//! host, and `chdir`/`fchdir`/`getcwd` go both ways.
//!
//! Each check runs twice: on the host, in a directory `H` holding a real
//! directory `H/uvfs` (the stand-in), and under the shim with
//! `UVFS_PREFIX=H/uvfs` in a directory `H` with no `uvfs` in it, so
//! anything that reached the kernel under the prefix would fail. The two
//! outputs must be equal, and the shim's run must leave nothing on the host
//! but what it made outside the prefix.

use std::path::Path;

mod support;
use support::cprog::{Scratch, compile_c, err, have, out, run};

/// Boundary crossings on `argv[1]` = H (`H/uvfs` is the prefix or its
/// stand-in), printed without any path so both runs print the same.
const C_BOUNDARY: &str = r#"
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char H[4096], P[4096];
static char *at(const char *base, const char *rel) {
    static char b[8][4096];
    static int i;
    char *r = b[i++ % 8];
    snprintf(r, 4096, "%s/%s", base, rel);
    return r;
}
static ino_t ino(const char *p) {
    struct stat st;
    return stat(p, &st) ? 0 : st.st_ino;
}
static ino_t fino(int fd) {
    struct stat st;
    return fstat(fd, &st) ? 0 : st.st_ino;
}
static void rd(const char *tag, int fd) {
    char b[64] = {0};
    int n = fd < 0 ? -1 : (int)read(fd, b, sizeof b - 1);
    printf("%s: fd %s read %d '%s' errno %d\n", tag, fd < 0 ? "no" : "yes", n, b, fd < 0 ? errno : 0);
    if (fd >= 0) close(fd);
}
static void cwd_is(const char *tag, const char *want) {
    char b[4096];
    char *c = getcwd(b, sizeof b);
    printf("%s: getcwd %s\n", tag, c && !strcmp(c, want) ? "as expected" : c ? c : "failed");
}
#define R(tag, expr) do { errno = 0; int r_ = (expr); printf("%s: %d errno %d\n", tag, r_, r_ < 0 ? errno : 0); } while (0)

int main(int argc, char **argv) {
    snprintf(H, sizeof H, "%s", argv[1]);
    snprintf(P, sizeof P, "%s/uvfs", H);
    R("mkdir P/a", mkdir(at(P, "a"), 0755));
    R("mkdir P/a/b", mkdir(at(P, "a/b"), 0755));
    int fd = open(at(P, "a/f"), O_CREAT | O_WRONLY, 0644);
    R("write P/a/f", (int)write(fd, "in P", 4));
    close(fd);

    /* 1. `..` at the prefix's root: the parent on the host. */
    ino_t h = ino(H);
    printf("P/.. is H %d\n", ino(at(P, "..")) == h);
    printf("P/../ is H %d\n", ino(at(P, "../")) == h);
    printf("P/a/../.. is H %d\n", ino(at(P, "a/../..")) == h);
    printf("P/a/b/../../.. is H %d\n", ino(at(P, "a/b/../../..")) == h);
    printf("P/../uvfs is P %d\n", ino(at(P, "../uvfs")) == ino(P));
    rd("open P/../sib", open(at(P, "../sib"), O_RDONLY));
    rd("open P/a/../../sib", open(at(P, "a/../../sib"), O_RDONLY));
    struct stat st;
    R("lstat P/..", lstat(at(P, ".."), &st));
    R("access P/../sib", access(at(P, "../sib"), R_OK));
    FILE *f = fopen(at(P, "../sib"), "r");
    char line[64] = {0};
    if (f) { fgets(line, sizeof line, f); fclose(f); }
    printf("fopen P/../sib: '%s'\n", line);
    R("mkdir P/../made-outside", mkdir(at(P, "../made-outside"), 0755));
    R("rmdir P/../made-outside", rmdir(at(P, "../made-outside")));
    R("creat P/../outside-file", close(creat(at(P, "../outside-file"), 0644)));
    DIR *d = opendir(at(P, ".."));
    int seen_sib = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) seen_sib |= !strcmp(e->d_name, "sib");
    if (d) closedir(d);
    printf("opendir P/.. lists sib %d\n", seen_sib);
    char rp[4096];
    printf("realpath P/.. is H %d\n", realpath(at(P, ".."), rp) && !strcmp(rp, H));
    printf("realpath P/a/.. is P %d\n", realpath(at(P, "a/.."), rp) && !strcmp(rp, P));

    /* 2. A kernel directory fd and a relative path entering the prefix. */
    int hd = open(H, O_RDONLY | O_DIRECTORY);
    rd("openat(H, uvfs/a/f)", openat(hd, "uvfs/a/f", O_RDONLY));
    fd = openat(hd, "uvfs/new", O_CREAT | O_WRONLY | O_EXCL, 0600);
    R("openat(H, uvfs/new) write", (int)write(fd, "new", 3));
    close(fd);
    rd("P/new after openat(H)", open(at(P, "new"), O_RDONLY));
    R("fstatat(H, uvfs/new)", fstatat(hd, "uvfs/new", &st, 0));
    printf("  size %ld\n", (long)st.st_size);
    R("fstatat(H, uvfs)", fstatat(hd, "uvfs", &st, 0));
    printf("  is P %d\n", st.st_ino == ino(P));
    R("mkdirat(H, uvfs/nd)", mkdirat(hd, "uvfs/nd", 0755));
    R("renameat(H, uvfs/new -> uvfs/nd/moved)", renameat(hd, "uvfs/new", hd, "uvfs/nd/moved"));
    R("faccessat(H, uvfs/nd/moved)", faccessat(hd, "uvfs/nd/moved", R_OK, 0));
    R("symlinkat(f, H, uvfs/nd/ln)", symlinkat("moved", hd, "uvfs/nd/ln"));
    char lb[64] = {0};
    R("readlinkat(H, uvfs/nd/ln)", (int)readlinkat(hd, "uvfs/nd/ln", lb, sizeof lb - 1));
    printf("  target '%s'\n", lb);
    R("linkat(H, uvfs/nd/moved -> uvfs/nd/hard)", linkat(hd, "uvfs/nd/moved", hd, "uvfs/nd/hard", 0));
    R("fchmodat(H, uvfs/nd/hard)", fchmodat(hd, "uvfs/nd/hard", 0640, 0));
    R("unlinkat(H, uvfs/nd/ln)", unlinkat(hd, "uvfs/nd/ln", 0));
    R("unlinkat(H, uvfs/nd/hard)", unlinkat(hd, "uvfs/nd/hard", 0));
    R("unlinkat(H, uvfs/nd/moved)", unlinkat(hd, "uvfs/nd/moved", 0));
    R("unlinkat(H, uvfs/nd, REMOVEDIR)", unlinkat(hd, "uvfs/nd", AT_REMOVEDIR));
    rd("openat(H, uvfs/a/../../sib)", openat(hd, "uvfs/a/../../sib", O_RDONLY));
    rd("openat(H, ./uvfs/./a/f)", openat(hd, "./uvfs/./a/f", O_RDONLY));
    int sub = open(at(H, "sub"), O_RDONLY | O_DIRECTORY);
    rd("openat(H/sub, ../uvfs/a/f)", openat(sub, "../uvfs/a/f", O_RDONLY));
    close(sub);

    /* 3. A uvfs directory fd and `..`s that leave the prefix. */
    int ud = open(P, O_RDONLY | O_DIRECTORY);
    rd("openat(P, ../sib)", openat(ud, "../sib", O_RDONLY));
    R("fstatat(P, ..)", fstatat(ud, "..", &st, 0));
    printf("  is H %d\n", st.st_ino == h);
    int ad = open(at(P, "a"), O_RDONLY | O_DIRECTORY);
    rd("openat(P/a, ../../sib)", openat(ad, "../../sib", O_RDONLY));
    rd("openat(P/a, ../a/f)", openat(ad, "../a/f", O_RDONLY));
    R("fstatat(P/a, ../..)", fstatat(ad, "../..", &st, 0));
    printf("  is H %d\n", st.st_ino == h);
    R("mkdirat(P/a, ../../made)", mkdirat(ad, "../../made", 0755));
    R("unlinkat(P/a, ../../made, REMOVEDIR)", unlinkat(ad, "../../made", AT_REMOVEDIR));

    /* 4. chdir, fchdir and getcwd across the boundary, both ways. */
    R("chdir P", chdir(P));
    cwd_is("in P", P);
    rd("open a/f from P", open("a/f", O_RDONLY));
    rd("open ../sib from P", open("../sib", O_RDONLY));
    R("chdir ..", chdir(".."));
    cwd_is("back in H", H);
    rd("open sib from H", open("sib", O_RDONLY));
    R("chdir uvfs/a", chdir("uvfs/a"));
    cwd_is("in P/a", at(P, "a"));
    R("stat ../../sib from P/a", stat("../../sib", &st));
    R("chdir ../..", chdir("../.."));
    cwd_is("H again", H);
    R("fchdir uvfs fd", fchdir(ud));
    cwd_is("fchdir into P", P);
    R("fchdir kernel fd", fchdir(hd));
    cwd_is("fchdir back to H", H);
    R("fchdir P/a fd", fchdir(ad));
    R("chdir ../.. from P/a", chdir("../.."));
    cwd_is("H from P/a", H);
    close(ud); close(ad); close(hd);
    return 0;
}
"#;

/// Makes `H`: a file `sib`, a directory `sub`, and (for the host run) the
/// stand-in directory `uvfs`.
fn make_h(h: &Path, stand_in: bool) {
    std::fs::create_dir(h).unwrap();
    std::fs::write(h.join("sib"), "sibling").unwrap();
    std::fs::create_dir(h.join("sub")).unwrap();
    if stand_in {
        std::fs::create_dir(h.join("uvfs")).unwrap();
    }
}

/// The entries of `h`, sorted.
fn entries(h: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(h)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn crossings_match_a_host_directory() {
    let dir = Scratch::new("boundary");
    let Some(bin) = compile_c(&dir, C_BOUNDARY) else {
        return;
    };
    let host_h = dir.join("host");
    make_h(&host_h, true);
    let host = run(&[&bin, host_h.to_str().unwrap()], false, &[]);
    assert!(host.status.success(), "host run: {}", err(&host));
    let shim_h = dir.join("shim");
    make_h(&shim_h, false);
    let prefix = shim_h.join("uvfs");
    let dump = dir.join("dump");
    let shim = run(
        &[&bin, shim_h.to_str().unwrap()],
        true,
        &[
            ("UVFS_PREFIX", prefix.to_str().unwrap()),
            ("UVFS_DUMP", dump.to_str().unwrap()),
        ],
    );
    assert!(shim.status.success(), "shim run: {}", err(&shim));
    let (h, s) = (out(&host), out(&shim));
    // Sanity on the host run: what the shim's must reproduce.
    for want in [
        "P/.. is H 1",
        "P/a/../.. is H 1",
        "open P/../sib: fd yes read 7 'sibling'",
        "openat(H, uvfs/a/f): fd yes read 4 'in P'",
        "P/new after openat(H): fd yes read 3 'new'",
        "openat(P/a, ../../sib): fd yes read 7 'sibling'",
        "in P: getcwd as expected",
        "back in H: getcwd as expected",
        "fchdir into P: getcwd as expected",
    ] {
        assert!(h.contains(want), "host output lacks {want:?}:\n{h}");
    }
    assert_eq!(s, h, "shim stderr:\n{}", err(&shim));
    // Nothing under the prefix reached the host: H holds what the program
    // made outside it (the file created through `P/..`), no `uvfs`.
    assert_eq!(entries(&shim_h), ["outside-file", "sib", "sub"]);
    assert_eq!(
        entries(&host_h),
        ["outside-file", "sib", "sub", "uvfs"],
        "host run"
    );
}

/// A rename across the boundary, the one crossing that differs from the
/// stand-in on purpose: on the host a rename from `H/uvfs` to `H` is within
/// one file system and works; under the shim the prefix is another file
/// system, and the answer is `EXDEV`, as Linux gives across a mount point
/// (whichever way the names reach it: a kernel dirfd, or `..`).
#[test]
fn rename_across_the_boundary_is_exdev() {
    let dir = Scratch::new("boundary-exdev");
    let prefix = dir.join("uvfs");
    let py = "import os, sys, errno\n\
              p = sys.argv[1]\n\
              os.mkdir(p + '/d')\n\
              open(p + '/d/f', 'w').write('x')\n\
              hd = os.open(os.path.dirname(p), os.O_RDONLY)\n\
              for src, dst in [('uvfs/d/f', 'out'), ('uvfs/d/f', 'uvfs/../out')]:\n\
              \x20   try:\n\
              \x20       os.rename(src, dst, src_dir_fd=hd, dst_dir_fd=hd)\n\
              \x20       print('renamed')\n\
              \x20   except OSError as e:\n\
              \x20       print(errno.errorcode[e.errno])\n";
    if !have("python3") {
        return;
    }
    let exe = out(&run(
        &["python3", "-c", "import sys; print(sys.executable)"],
        false,
        &[],
    ));
    let o = run(
        &[exe.trim(), "-c", py, prefix.to_str().unwrap()],
        true,
        &[("UVFS_PREFIX", prefix.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out(&o), "EXDEV\nEXDEV\n");
    assert!(!dir.join("out").exists());
}

/// Findings of the routing fuzz target (`fuzz/fuzz_targets/preload_route.rs`),
/// pinned: a final `..` that climbs out of the prefix is not the parent
/// itself (`rmdir` and `rename` of `H/uvfs/..` used to act on `H`); a path
/// that climbs out, back in and out again reaches the host without the
/// kernel walking the prefix (it used to get `H/uvfs/a/../../sib`, absent
/// on the host); `../uvfs/x` from a uvfs directory at the prefix's root
/// reaches uvfs's `/x` (uvfs alone stopped the `..` at its root and looked
/// for `/uvfs/x`).
#[test]
fn routing_findings_of_the_fuzz_target() {
    if !have("python3") {
        return;
    }
    let dir = Scratch::new("boundary-fuzzed");
    let h = dir.join("h");
    std::fs::create_dir(&h).unwrap();
    let prefix = h.join("uvfs");
    let py = "import os, sys, errno\n\
              h, d = sys.argv[1], sys.argv[2]\n\
              p = h + '/uvfs'\n\
              def tryit(tag, f):\n\
              \x20   try:\n\
              \x20       r = f()\n\
              \x20       print(tag, 'ok', r if isinstance(r, str) else '')\n\
              \x20   except OSError as e:\n\
              \x20       print(tag, errno.errorcode[e.errno])\n\
              tryit('rmdir P/..', lambda: os.rmdir(p + '/..'))\n\
              tryit('rmdir P/../', lambda: os.rmdir(p + '/../'))\n\
              tryit('rename P/..', lambda: os.rename(p + '/..', d + '/moved'))\n\
              open(p + '/../sib', 'w').write('sibling')\n\
              tryit('read P/../P/a/../../sib', lambda: open(p + '/../uvfs/a/../../sib').read())\n\
              open(p + '/x', 'w').write('in P')\n\
              fd = os.open(p, os.O_RDONLY)\n\
              tryit('read ../uvfs/x from P', lambda: os.read(os.open('../uvfs/x', os.O_RDONLY, dir_fd=fd), 9).decode())\n";
    let exe = out(&run(
        &["python3", "-c", "import sys; print(sys.executable)"],
        false,
        &[],
    ));
    let o = run(
        &[exe.trim(), "-c", py, h.to_str().unwrap(), dir.as_str()],
        true,
        &[("UVFS_PREFIX", prefix.to_str().unwrap())],
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(
        out(&o),
        "rmdir P/.. EINVAL\n\
         rmdir P/../ EINVAL\n\
         rename P/.. EBUSY\n\
         read P/../P/a/../../sib ok sibling\n\
         read ../uvfs/x from P ok in P\n"
    );
    assert!(h.is_dir() && !dir.join("moved").exists());
    assert_eq!(entries(&h), ["sib"]);
}

/// `ls -la` of the prefix lists `..` (the prefix's parent on the host,
/// stat'ed through `P/..`) and exits 0, as `ls -la` of a host directory.
#[test]
fn ls_la_of_the_prefix_shows_its_parent() {
    if !have("ls") {
        return;
    }
    let dir = Scratch::new("boundary-ls");
    let prefix = dir.join("uvfs");
    let o = run(
        &["ls", "-la", prefix.to_str().unwrap()],
        true,
        &[("UVFS_PREFIX", prefix.to_str().unwrap())],
    );
    assert!(o.status.success(), "ls -la: {}", err(&o));
    assert_eq!(err(&o), "");
    let dotdot = out(&o)
        .lines()
        .find(|l| l.ends_with(" .."))
        .map(str::to_string)
        .unwrap_or_default();
    assert!(
        dotdot.starts_with("drwx") && !dotdot.contains('?'),
        "the `..` line: {dotdot:?}\n{}",
        out(&o)
    );
}

/// The prefix (uvfs's root) is a directory of the program's effective
/// user and group, mode 0777 less the umask the program has at its first
/// uvfs call, with no sticky bit (tmpfs's default root is 01777): for
/// umasks 022 and 027, and with the first call a `mkdir` under it.
#[test]
fn the_prefix_is_the_programs_with_its_umask() {
    if !have("/usr/bin/python3") {
        return;
    }
    let dir = Scratch::new("boundary-root");
    let prefix = dir.join("uvfs");
    let script = "import os, sys\n\
                  os.umask(int(sys.argv[2], 8))\n\
                  if sys.argv[3] == 'mkdir': os.mkdir(sys.argv[1] + '/d')\n\
                  st = os.stat(sys.argv[1])\n\
                  print(oct(st.st_mode), st.st_uid == os.geteuid(), st.st_gid == os.getegid())\n";
    for (mask, first, want) in [
        ("022", "stat", "0o40755 True True"),
        ("027", "stat", "0o40750 True True"),
        ("077", "mkdir", "0o40700 True True"),
    ] {
        let o = run(
            &[
                "/usr/bin/python3",
                "-c",
                script,
                prefix.to_str().unwrap(),
                mask,
                first,
            ],
            true,
            &[
                ("UVFS_PREFIX", prefix.to_str().unwrap()),
                ("UVFS_TREE", "0"),
            ],
        );
        assert!(o.status.success(), "umask {mask}: {}", err(&o));
        assert_eq!(out(&o).trim(), want, "umask {mask}, first call {first}");
    }
}

/// Symlinks in uvfs with an absolute target, resolved as on a mount: a
/// target under the prefix stays in uvfs, any other reaches the host with
/// the rest of the path (stat, open, create, listing and `os.walk` through
/// them; `readlink` as written). The same script on a host directory
/// `H/uvfs` and under the shim with the prefix there, in one process
/// (`UVFS_TREE=0`: the process-private uvfs, whose walk hands the escape
/// back to the shim), compared line by line.
#[test]
fn absolute_symlinks_resolve_as_on_a_mount() {
    if !have("python3") {
        return;
    }
    let dir = Scratch::new("boundary-symlinks");
    let exe = out(&run(
        &["python3", "-c", "import sys; print(sys.executable)"],
        false,
        &[],
    ));
    let py = "import os, sys\n\
              h = sys.argv[1]\n\
              p = h + '/uvfs'\n\
              os.mkdir(p + '/d')\n\
              open(p + '/d/f', 'w').write('in uvfs')\n\
              os.symlink(p + '/d', p + '/in')\n\
              os.symlink(h + '/outside', p + '/out')\n\
              os.symlink(h + '/outside/hf', p + '/hf')\n\
              os.symlink(h + '/outside/made', p + '/dangling')\n\
              os.symlink('out/sub', p + '/rel')\n\
              print('in/f', open(p + '/in/f').read())\n\
              print('out/hf', open(p + '/out/hf').read())\n\
              print('hf', open(p + '/hf').read(), os.stat(p + '/hf').st_ino == os.stat(h + '/outside/hf').st_ino)\n\
              print('rel/x', open(p + '/rel/x').read())\n\
              print('list out/', sorted(os.listdir(p + '/out/')))\n\
              print('isdir', os.path.isdir(p + '/out'), os.path.isdir(p + '/in'), os.path.islink(p + '/out'))\n\
              print('readlink', os.readlink(p + '/out') == h + '/outside')\n\
              open(p + '/out/new', 'w').write('made through uvfs')\n\
              open(p + '/dangling', 'w').write('through a dangling link')\n\
              os.mkdir(p + '/out/newdir')\n\
              for top, dirs, files in os.walk(os.fsencode(p), followlinks=False):\n\
              \x20   print('walk', os.fsdecode(top[len(h):]), sorted(map(os.fsdecode, dirs)), sorted(map(os.fsdecode, files)))\n\
              try:\n\
              \x20   open(p + '/out/missing')\n\
              except OSError as e:\n\
              \x20   print('missing', e.errno)\n";
    let mut outs = Vec::new();
    for shim in [false, true] {
        let h = dir.join(if shim { "shim" } else { "host" });
        std::fs::create_dir_all(h.join("outside/sub")).unwrap();
        std::fs::write(h.join("outside/hf"), "on the host").unwrap();
        std::fs::write(h.join("outside/sub/x"), "x on the host").unwrap();
        if !shim {
            std::fs::create_dir(h.join("uvfs")).unwrap();
        }
        let prefix = h.join("uvfs");
        let o = run(
            &[exe.trim(), "-c", py, h.to_str().unwrap()],
            shim,
            &[
                ("UVFS_PREFIX", prefix.to_str().unwrap()),
                ("UVFS_TREE", "0"),
            ],
        );
        assert!(o.status.success(), "shim {shim}: {}{}", out(&o), err(&o));
        assert_eq!(err(&o), "", "shim {shim}");
        // What went through the links outside is on the host.
        assert_eq!(
            std::fs::read_to_string(h.join("outside/new")).unwrap(),
            "made through uvfs"
        );
        assert_eq!(
            std::fs::read_to_string(h.join("outside/made")).unwrap(),
            "through a dangling link"
        );
        assert!(h.join("outside/newdir").is_dir());
        // Nothing of uvfs's reached the host.
        assert_eq!(h.join("uvfs").exists(), !shim);
        outs.push(out(&o));
    }
    assert!(
        outs[0].contains("out/hf on the host") && outs[0].contains("missing 2"),
        "{}",
        outs[0]
    );
    assert_eq!(outs[1], outs[0]);
}
