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

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod support;
use support::shim;

fn have(prog: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("SKIP: {prog} is not installed");
    }
    found
}

fn scratch(tag: &str) -> PathBuf {
    let d = PathBuf::from(format!(
        "/dev/shm/uvfs-preload-test.{}.{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Copies `from` into `to` in sorted, depth-first order, as `UVFS_SEED`
/// does (so directory listing orders match), keeping modes and times.
fn copy_tree(from: &Path, to: &Path) {
    let mut es: Vec<_> = std::fs::read_dir(from).unwrap().flatten().collect();
    es.sort_by_key(|e| e.file_name());
    for e in es {
        let dst = to.join(e.file_name());
        let md = std::fs::symlink_metadata(e.path()).unwrap();
        if md.is_dir() {
            std::fs::create_dir(&dst).unwrap();
            copy_tree(&e.path(), &dst);
        } else if md.file_type().is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &dst).unwrap();
            continue;
        } else {
            std::fs::write(&dst, std::fs::read(e.path()).unwrap()).unwrap();
        }
        std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(md.mode() & 0o7777))
            .unwrap();
        let t = |s: i64, ns: i64| libc::timespec {
            tv_sec: s,
            tv_nsec: ns,
        };
        let ts = [
            t(md.atime(), md.atime_nsec()),
            t(md.mtime(), md.mtime_nsec()),
        ];
        let c = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(dst.as_os_str()))
            .unwrap();
        // SAFETY: a valid path and two timespecs.
        unsafe {
            libc::utimensat(
                libc::AT_FDCWD,
                c.as_ptr(),
                ts.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
    }
}

/// A tree as (relative path → description): type, permissions, and the
/// contents of regular files (unless listed in `opaque`).
fn tree(root: &Path, opaque: &[&str]) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, opaque: &[&str], out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            let perm = md.mode() & 0o7777;
            let d = if md.is_dir() {
                walk(root, &e.path(), opaque, out);
                format!("dir {perm:o}")
            } else if md.file_type().is_symlink() {
                format!(
                    "link -> {}",
                    std::fs::read_link(e.path()).unwrap().display()
                )
            } else if opaque.iter().any(|o| rel.ends_with(o)) {
                format!(
                    "file {perm:o} ({} bytes, not compared)",
                    if md.len() > 0 { "some" } else { "no" }
                )
            } else {
                format!(
                    "file {perm:o} {:?}",
                    String::from_utf8_lossy(&std::fs::read(e.path()).unwrap())
                )
            };
            out.insert(rel, d);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, opaque, &mut out);
    out
}

struct Case<'a> {
    name: &'a str,
    /// The command; `{D}` stands for the directory under test.
    cmd: &'a [&'a str],
    /// Masks volatile parts of stdout (times, inode numbers).
    mask: fn(&str) -> String,
    /// Files whose contents are not compared (the check is elsewhere).
    opaque: &'a [&'a str],
    /// Extra environment for the run under the shim.
    env: &'a [(&'a str, &'a str)],
}

struct Outcome {
    stdout: String,
    stderr: String,
    status: Option<i32>,
    tree: BTreeMap<String, String>,
}

fn run_one(case: &Case<'_>, seed: &Path, uvfs: bool) -> Outcome {
    let base = scratch(&format!(
        "{}.{}",
        case.name,
        if uvfs { "uvfs" } else { "host" }
    ));
    let (dir, dump) = if uvfs {
        ("/uvfs".to_string(), base.join("dump"))
    } else {
        let root = base.join("root");
        std::fs::create_dir(&root).unwrap();
        copy_tree(seed, &root);
        (root.to_string_lossy().into_owned(), root)
    };
    let args: Vec<String> = case.cmd.iter().map(|a| a.replace("{D}", &dir)).collect();
    let mut c = Command::new(&args[0]);
    c.args(&args[1..]).env("LC_ALL", "C").env("TZ", "UTC");
    if uvfs {
        c.env("LD_PRELOAD", shim())
            .env("UVFS_PREFIX", "/uvfs")
            .env("UVFS_SEED", seed)
            .env("UVFS_DUMP", &dump)
            .envs(case.env.iter().copied());
    }
    let out = c.output().unwrap();
    let norm = |s: &[u8]| String::from_utf8_lossy(s).replace(&dir, "{D}");
    let stdout = (case.mask)(&norm(&out.stdout));
    let stderr = norm(&out.stderr);
    let tree = if dump.exists() {
        tree(&dump, case.opaque)
    } else {
        BTreeMap::new()
    };
    let _ = std::fs::remove_dir_all(&base);
    Outcome {
        stdout,
        stderr,
        status: out.status.code(),
        tree,
    }
}

fn check(case: Case<'_>, seed: &Path) {
    if !have(case.cmd[0]) {
        return;
    }
    let host = run_one(&case, seed, false);
    let uv = run_one(&case, seed, true);
    let ctx = format!(
        "case {}: host stderr:\n{}\nuvfs stderr:\n{}",
        case.name, host.stderr, uv.stderr
    );
    assert_eq!(uv.status, host.status, "exit status; {ctx}");
    assert_eq!(uv.stdout, host.stdout, "stdout; {ctx}");
    assert_eq!(uv.tree, host.tree, "resulting tree; {ctx}");
    // Every case but the `*-missing` ones is expected to succeed (a case
    // failing the same way on both sides would prove little).
    assert_eq!(
        uv.status == Some(0),
        !case.name.contains("missing"),
        "unexpected exit status; {ctx}"
    );
    eprintln!(
        "ok: {} (status {:?}, {} stdout bytes)",
        case.name,
        uv.status,
        uv.stdout.len()
    );
}

fn same(s: &str) -> String {
    s.to_string()
}

/// `ls -l` lines: the date columns masked.
fn mask_ls(s: &str) -> String {
    s.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() >= 9 {
                format!(
                    "{} {} {} {} {} <date> {}",
                    f[0],
                    f[1],
                    f[2],
                    f[3],
                    f[4],
                    f[8..].join(" ")
                )
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `stat` output: device, inode and the four times masked.
fn mask_stat(s: &str) -> String {
    s.lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("Device:") {
                let links = l.split("Links:").nth(1).unwrap_or("");
                format!("Device/Inode masked Links:{links}")
            } else if ["Access: 2", "Modify:", "Change:", "Birth:"]
                .iter()
                .any(|p| t.starts_with(p))
            {
                "<time>".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The input tree every case starts from.
fn seed() -> &'static Path {
    static SEED: OnceLock<PathBuf> = OnceLock::new();
    SEED.get_or_init(|| {
        let s = scratch("seed");
        let w = |p: &str, c: &str| {
            let p = s.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        };
        w("a/f", "hello\n");
        w("a/b/g", "in b\n");
        w("a/b/c/h", "deep\n");
        w("a/unsorted", "pear\napple\nfig\nbanana\napple\n");
        let big: String = (0..5000)
            .map(|i| format!("line {i} of the big file\n"))
            .collect();
        w("a/big", &big);
        std::os::unix::fs::symlink("f", s.join("a/l")).unwrap();
        std::fs::create_dir(s.join("empty")).unwrap();
        // A tar archive to extract (made on the host, from the same tree).
        if Command::new("tar").arg("--version").output().is_ok() {
            let st = Command::new("tar")
                .args(["-cf", "/dev/shm/uvfs-preload-test.arch.tar", "-C"])
                .arg(&s)
                .arg("a")
                .env("TZ", "UTC")
                .status()
                .unwrap();
            assert!(st.success());
            std::fs::rename("/dev/shm/uvfs-preload-test.arch.tar", s.join("arch.tar")).unwrap();
        }
        s
    })
}

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

/// Compiles a C test program at test time into a scratch directory: the
/// directory and the binary's path, or `None` (skipped) without `cc`.
fn compile_c(tag: &str, src: &str, pthread: bool) -> Option<(PathBuf, String)> {
    if !have("cc") {
        return None;
    }
    let base = scratch(tag);
    std::fs::write(base.join("prog.c"), src).unwrap();
    let bin = base.join("prog");
    let mut cc = Command::new("cc");
    cc.arg("-O2");
    if pthread {
        cc.arg("-pthread");
    }
    let st = cc
        .arg("-o")
        .arg(&bin)
        .arg(base.join("prog.c"))
        .status()
        .unwrap();
    assert!(st.success(), "cc failed");
    Some((base, bin.to_string_lossy().into_owned()))
}

/// Compiles `src` and checks it, run as `prog {D} args…`, once per
/// `(case name, shim environment)`.
fn run_c(tag: &str, src: &str, pthread: bool, args: &[&str], runs: &[(&str, &[(&str, &str)])]) {
    let Some((base, bin)) = compile_c(tag, src, pthread) else {
        return;
    };
    let mut cmd = vec![bin.as_str(), "{D}"];
    cmd.extend_from_slice(args);
    for &(name, env) in runs {
        check(
            Case {
                name,
                cmd: &cmd,
                mask: same,
                opaque: &[],
                env,
            },
            seed(),
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}

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
