//! Real, unmodified programs under the shim against the same run on a host
//! tmpfs directory (`/dev/shm`): same stdout (paths, and where noted times
//! and inode numbers, masked), same exit status, same resulting tree.
//!
//! uvfs under the preload is private to a process, so every case starts
//! the program on a uvfs seeded from the case's input tree (`UVFS_SEED`) and
//! reads back the tree it leaves (`UVFS_DUMP`); the host run gets a copy of
//! the same input tree, made in the same order.
//!
//! A program that is not installed is skipped with a message.

use std::path::Path;
use std::process::Command;

mod support;
use support::programs::*;
use support::shim;

#[test]
fn coreutils() {
    let s = seed();
    let cases = [
        Case {
            name: "cat",
            cmd: &["cat", "{D}/a/f", "{D}/a/l", "{D}/a/b/g"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "cat-missing",
            cmd: &["cat", "{D}/a/nope"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "ls-la",
            cmd: &["ls", "-la", "{D}/a", "{D}/a/b"],
            mask: mask_ls,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "ls-R",
            cmd: &["ls", "-R", "{D}"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "cp-r",
            cmd: &["cp", "-r", "{D}/a", "{D}/copy"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "mv",
            cmd: &["mv", "{D}/a/f", "{D}/a/b/moved"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "mv-dir",
            cmd: &["mv", "{D}/a/b", "{D}/empty/"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "rm-r",
            cmd: &["rm", "-r", "{D}/a"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "rm-missing",
            cmd: &["rm", "{D}/nope"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "mkdir-p",
            cmd: &["mkdir", "-p", "{D}/x/y/z", "{D}/a/b/new"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "stat",
            cmd: &["stat", "{D}/a/f", "{D}/a/b", "{D}/a/l"],
            mask: mask_stat,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "wc",
            cmd: &["wc", "{D}/a/f", "{D}/a/big", "{D}/a/unsorted"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "sort-o",
            cmd: &["sort", "-o", "{D}/sorted", "{D}/a/unsorted"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "sort-o-inplace",
            cmd: &["sort", "-u", "-o", "{D}/a/unsorted", "{D}/a/unsorted"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "find",
            cmd: &["find", "{D}"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "find-type",
            cmd: &["find", "{D}/a", "-type", "f", "-name", "*g*"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "tar-create",
            cmd: &["tar", "-cf", "{D}/new.tar", "-C", "{D}", "a"],
            mask: same,
            opaque: &["new.tar"],
            env: &[],
        },
        Case {
            name: "tar-extract",
            cmd: &["tar", "-xf", "{D}/arch.tar", "-C", "{D}/empty"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        Case {
            name: "tar-list",
            cmd: &["tar", "-tvf", "{D}/arch.tar"],
            mask: same,
            opaque: &[],
            env: &[],
        },
    ];
    for c in cases {
        check(c, s);
    }
}

/// `tar -c` under the shim writes the same archive members as on the host:
/// listed with `tar -tv` on the host after the dump.
#[test]
fn tar_archive_lists_the_same() {
    if !have("tar") {
        return;
    }
    let s = seed();
    let base = scratch("tar-archive");
    let dump = base.join("dump");
    let st = Command::new("tar")
        .args(["-cf", "/uvfs/new.tar", "-C", "/uvfs", "a"])
        .env("LD_PRELOAD", shim())
        .env("UVFS_SEED", s)
        .env("UVFS_DUMP", &dump)
        .env("TZ", "UTC")
        .status()
        .unwrap();
    assert!(st.success());
    let list = |p: &Path| {
        let o = Command::new("tar")
            .arg("-tvf")
            .arg(p)
            .env("TZ", "UTC")
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8(o.stdout).unwrap()
    };
    let host_dir = base.join("host");
    std::fs::create_dir(&host_dir).unwrap();
    copy_tree(s, &host_dir);
    let st = Command::new("tar")
        .arg("-cf")
        .arg(base.join("host.tar"))
        .arg("-C")
        .arg(&host_dir)
        .arg("a")
        .env("TZ", "UTC")
        .status()
        .unwrap();
    assert!(st.success());
    assert_eq!(list(&dump.join("new.tar")), list(&base.join("host.tar")));
    let _ = std::fs::remove_dir_all(&base);
}

fn python() -> Option<String> {
    if !have("python3") {
        return None;
    }
    // The interpreter itself, not a wrapper script (pyenv's shim is a shell
    // script, which would only waste the preload).
    let o = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    Some(String::from_utf8(o.stdout).ok()?.trim().to_string())
}

const PY_FILES: &str = r#"
import os, shutil, sys, tempfile
D = sys.argv[1]
with open(os.path.join(D, "new.txt"), "w") as f:
    f.write("written by python\n" * 3)
with open(os.path.join(D, "new.txt")) as f:
    print(f.read().count("python"), "lines")
with open(os.path.join(D, "new.txt"), "a") as f:
    f.write("appended\n")
with open(os.path.join(D, "new.txt"), "rb") as f:
    f.seek(-9, os.SEEK_END)
    print(f.read())
for root, dirs, files in os.walk(D):
    dirs.sort()
    print(os.path.relpath(root, D), sorted(files))
shutil.copytree(os.path.join(D, "a"), os.path.join(D, "tree-copy"), symlinks=True)
shutil.copytree(os.path.join(D, "a", "b"), os.path.join(D, "tree-copy2"))
print(sorted(os.listdir(os.path.join(D, "tree-copy"))))
print(os.stat(os.path.join(D, "tree-copy", "big")).st_size)
print(os.path.islink(os.path.join(D, "tree-copy", "l")), os.readlink(os.path.join(D, "tree-copy", "l")))
fd, name = tempfile.mkstemp(dir=D, prefix="tmp-", suffix=".dat")
os.write(fd, b"temp data")
os.close(fd)
print(os.path.dirname(name) == D, os.path.getsize(name))
os.unlink(name)
with tempfile.TemporaryDirectory(dir=D) as td:
    with open(os.path.join(td, "x"), "w") as f:
        f.write("x")
    print(os.listdir(td))
print(os.path.exists(td))
with tempfile.NamedTemporaryFile(dir=D, mode="w+") as nt:
    nt.write("named")
    nt.flush()
    nt.seek(0)
    print(nt.read())
os.chdir(os.path.join(D, "a"))
print(os.getcwd() == os.path.join(D, "a"), sorted(os.listdir(".")))
with open("b/g") as f:
    print(f.read().strip())
os.rename("f", "renamed")
os.mkdir("made")
os.rmdir("made")
print(os.path.realpath("l") == os.path.join(D, "a", "f"), os.path.realpath("b/../renamed") == os.path.join(D, "a", "renamed"))
os.chdir("/")
print(os.access(os.path.join(D, "a", "renamed"), os.R_OK), os.access(os.path.join(D, "nope"), os.F_OK))
try:
    open(os.path.join(D, "nope", "x"))
except FileNotFoundError as e:
    print("FileNotFoundError", e.errno)
"#;

const PY_SQLITE: &str = r#"
import os, sqlite3, sys
D = sys.argv[1]
db = os.path.join(D, "test.db")
con = sqlite3.connect(db)
con.execute("create table t (id integer primary key, name text, n integer)")
with con:
    con.executemany("insert into t (name, n) values (?, ?)", [("row%d" % i, i * i) for i in range(2000)])
con.execute("create index t_n on t (n)")
con.commit()
print(con.execute("select count(*), sum(n), max(name) from t").fetchone())
print(con.execute("select name from t where n between 100 and 200 order by n").fetchall())
with con:
    con.execute("delete from t where id % 2 = 0")
print(con.execute("select count(*) from t").fetchone())
con.execute("pragma integrity_check")
con.close()
con = sqlite3.connect(db)
print(con.execute("select count(*), min(id) from t").fetchone())
con.close()
print(sorted(os.listdir(D)))
"#;

const PY_XATTR: &str = r#"
import errno, os, sys
D = sys.argv[1]
f = os.path.join(D, "xa")
open(f, "w").close()
def t(what, fn, *a, **k):
    try:
        r = fn(*a, **k)
        print(what, sorted(r) if isinstance(r, list) else r)
    except OSError as e:
        print(what, errno.errorcode[e.errno])
t("set", os.setxattr, f, "user.a", b"one")
t("get", os.getxattr, f, "user.a")
t("create-again", os.setxattr, f, "user.a", b"x", os.XATTR_CREATE)
t("replace-missing", os.setxattr, f, "user.b", b"x", os.XATTR_REPLACE)
t("set-b", os.setxattr, f, "user.b", b"")
t("trusted", os.setxattr, f, "trusted.t", b"t")
t("list", os.listxattr, f)
t("missing", os.getxattr, f, "user.zz")
t("bare", os.setxattr, f, "user.", b"x")
t("other-ns", os.setxattr, f, "foo.bar", b"x")
t("too-big", os.setxattr, f, "user.big", b"x" * 65537)
t("long-name", os.setxattr, f, "user." + "n" * 251, b"x")
fd = os.open(f, os.O_RDONLY)
t("fget", os.getxattr, fd, "user.a")
t("fset", os.setxattr, fd, "user.c", b"via fd")
t("flist", os.listxattr, fd)
t("fremove", os.removexattr, fd, "user.c")
os.close(fd)
os.symlink("xa", os.path.join(D, "xl"))
t("lset-user", os.setxattr, os.path.join(D, "xl"), "user.l", b"x", follow_symlinks=False)
t("get-through-link", os.getxattr, os.path.join(D, "xl"), "user.a")
t("remove", os.removexattr, f, "user.a")
t("remove-again", os.removexattr, f, "user.a")
t("list-after", os.listxattr, f)
t("nonexistent", os.listxattr, os.path.join(D, "nope"))
"#;

#[test]
fn python_xattrs() {
    let Some(py) = python() else { return };
    let s = seed();
    check(
        Case {
            name: "python-xattrs",
            cmd: &[&py, "-c", PY_XATTR, "{D}"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        s,
    );
}

/// POSIX ACLs (`system.posix_acl_*`) through the shim: the binary values
/// are built with `struct`, no setfacl.
const PY_ACL: &str = r#"
import errno, os, struct, sys
D = sys.argv[1]
A, DF = "system.posix_acl_access", "system.posix_acl_default"
X = 0xffffffff
def blob(entries, ver=2):
    return struct.pack("<I", ver) + b"".join(struct.pack("<HHI", *e) for e in entries)
def t(what, fn, *a, **k):
    try:
        r = fn(*a, **k)
        if isinstance(r, bytes):
            r = r.hex()
        print(what, sorted(r) if isinstance(r, list) else r)
    except OSError as e:
        print(what, errno.errorcode[e.errno])
mode = lambda p: oct(os.stat(p).st_mode)
f = os.path.join(D, "af")
open(f, "w").close()
os.chmod(f, 0o644)
t("get-none", os.getxattr, f, A)
t("set-equiv", os.setxattr, f, A, blob([(1, 7, X), (4, 5, X), (0x20, 1, X)]))
t("mode", mode, f)
t("get-equiv", os.getxattr, f, A)
t("set-named", os.setxattr, f, A, blob([(1, 6, X), (2, 6, 1001), (4, 4, X), (0x10, 6, X), (0x20, 0, X)]))
t("mode", mode, f)
t("get", os.getxattr, f, A)
t("list", os.listxattr, f)
t("chmod", os.chmod, f, 0o640)
t("get-after-chmod", os.getxattr, f, A)
t("bad-version", os.setxattr, f, A, blob([(1, 6, X), (4, 4, X), (0x20, 4, X)], 1))
t("no-mask", os.setxattr, f, A, blob([(1, 6, X), (2, 6, 1001), (4, 4, X), (0x20, 0, X)]))
t("default-on-file", os.setxattr, f, DF, blob([(1, 6, X), (4, 4, X), (0x20, 4, X)]))
fd = os.open(f, os.O_RDONLY)
t("fget", os.getxattr, fd, A)
os.close(fd)
t("remove", os.removexattr, f, A)
t("remove-again", os.removexattr, f, A)
t("mode", mode, f)
d = os.path.join(D, "ad")
os.mkdir(d, 0o777)
t("set-default", os.setxattr, d, DF, blob([(1, 7, X), (2, 5, 1001), (4, 5, X), (0x10, 7, X), (0x20, 0, X)]))
t("list-d", os.listxattr, d)
os.umask(0o077)
open(os.path.join(d, "new"), "w").close()
t("inherited-mode", mode, os.path.join(d, "new"))
t("inherited", os.getxattr, os.path.join(d, "new"), A)
os.mkdir(os.path.join(d, "sub"), 0o777)
t("sub-mode", mode, os.path.join(d, "sub"))
t("sub-list", os.listxattr, os.path.join(d, "sub"))
os.symlink("af", os.path.join(D, "al"))
t("symlink", os.setxattr, os.path.join(D, "al"), A, blob([(1, 6, X), (4, 4, X), (0x20, 4, X)]), follow_symlinks=False)
"#;

#[test]
fn python_posix_acls() {
    let Some(py) = python() else { return };
    let s = seed();
    check(
        Case {
            name: "python-posix-acls",
            cmd: &[&py, "-c", PY_ACL, "{D}"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        s,
    );
}

const PY_COPY: &str = r#"
import errno, os, sys
D = sys.argv[1]
def t(what, fn, *a):
    try:
        print(what, fn(*a))
    except OSError as e:
        print(what, errno.errorcode[e.errno])
src = os.open(os.path.join(D, "src"), os.O_CREAT | os.O_RDWR, 0o644)
os.write(src, b"0123456789abcdef" * 1000)
dst = os.open(os.path.join(D, "dst"), os.O_CREAT | os.O_RDWR, 0o644)
t("sendfile", os.sendfile, dst, src, 0, 5000)
t("sendfile-pos", os.sendfile, dst, src, None, 100)
t("src-pos", os.lseek, src, 0, os.SEEK_CUR)
t("dst-pos", os.lseek, dst, 0, os.SEEK_CUR)
t("copy_file_range", os.copy_file_range, src, dst, 3000, 10, 20000)
t("copy-overlap", os.copy_file_range, src, src, 10, 0, 5)
b = bytearray(8)
t("preadv2", os.preadv, src, [b], 4, 0)
print(bytes(b))
t("preadv2-nowait", os.preadv, src, [b], 0, os.RWF_NOWAIT)
t("preadv2-hipri", os.preadv, src, [b], 0, os.RWF_HIPRI)
t("pwritev2-append", os.pwritev, dst, [b"tail"], 0, os.RWF_APPEND)
t("pwritev2-both", os.pwritev, dst, [b"x"], 0, os.RWF_APPEND | 0x20)

print(os.fstat(dst).st_size)
os.lseek(dst, 0, os.SEEK_SET)
data = os.read(dst, 100000)
print(len(data), data[:20], data[-8:])
import fcntl
t("getown", fcntl.fcntl, dst, fcntl.F_GETOWN)
t("setown", fcntl.fcntl, dst, fcntl.F_SETOWN, os.getpid())
print("owner is us", fcntl.fcntl(dst, fcntl.F_GETOWN) == os.getpid())
t("setown-nobody", fcntl.fcntl, dst, fcntl.F_SETOWN, 999999999)
t("setsig", fcntl.fcntl, dst, 10, 64)
t("getsig", fcntl.fcntl, dst, 11)
t("setsig-bad", fcntl.fcntl, dst, 10, 65)
t("seals", fcntl.fcntl, dst, fcntl.F_GET_SEALS)
t("add-seals", fcntl.fcntl, dst, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
t("getlease", fcntl.fcntl, dst, fcntl.F_GETLEASE)
t("pipe-size", fcntl.fcntl, dst, 1032)
t("created", fcntl.fcntl, dst, 1028)
"#;

#[test]
fn python_copies() {
    let Some(py) = python() else { return };
    let s = seed();
    check(
        Case {
            name: "python-copies",
            cmd: &[&py, "-c", PY_COPY, "{D}"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        s,
    );
}

#[test]
fn python_files() {
    let Some(py) = python() else { return };
    let s = seed();
    check(
        Case {
            name: "python-files",
            cmd: &[&py, "-c", PY_FILES, "{D}"],
            mask: same,
            opaque: &[],
            env: &[],
        },
        s,
    );
}

#[test]
fn python_sqlite() {
    let Some(py) = python() else { return };
    if !Command::new(&py)
        .args(["-c", "import sqlite3"])
        .status()
        .is_ok_and(|s| s.success())
    {
        eprintln!("SKIP: python3 has no sqlite3 module");
        return;
    }
    let s = seed();
    check(
        Case {
            name: "python-sqlite",
            cmd: &[&py, "-c", PY_SQLITE, "{D}"],
            mask: same,
            opaque: &["test.db"],
            env: &[],
        },
        s,
    );
    // The database the shim's run left is a valid one: the host's sqlite
    // reads it back.
    let base = scratch("sqlite-check");
    let dump = base.join("dump");
    let st = Command::new(&py)
        .args(["-c", PY_SQLITE, "/uvfs"])
        .env("LD_PRELOAD", shim())
        .env("UVFS_DUMP", &dump)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let o = Command::new(&py)
        .args(["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print(c.execute('pragma integrity_check').fetchone(), c.execute('select count(*), sum(n) from t').fetchone())"])
        .arg(dump.join("test.db"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "('ok',) (1000, 1331334000)"
    );
    let _ = std::fs::remove_dir_all(&base);
}
