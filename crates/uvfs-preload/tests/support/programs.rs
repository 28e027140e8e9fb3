//! The program cases' harness: each case runs a real program once on a
//! host tmpfs directory and once under the shim, from the same input
//! tree, and compares stdout, exit status and the resulting tree.
#![allow(dead_code)] // used by programs.rs and programs_c.rs only

pub use super::cprog::have;
use super::shim;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn scratch(tag: &str) -> PathBuf {
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
pub fn copy_tree(from: &Path, to: &Path) {
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
pub fn tree(root: &Path, opaque: &[&str]) -> BTreeMap<String, String> {
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

pub struct Case<'a> {
    pub name: &'a str,
    /// The command; `{D}` stands for the directory under test.
    pub cmd: &'a [&'a str],
    /// Masks volatile parts of stdout (times, inode numbers).
    pub mask: fn(&str) -> String,
    /// Files whose contents are not compared (the check is elsewhere).
    pub opaque: &'a [&'a str],
    /// Extra environment for the run under the shim.
    pub env: &'a [(&'a str, &'a str)],
}

pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub status: Option<i32>,
    pub tree: BTreeMap<String, String>,
}

pub fn run_one(case: &Case<'_>, seed: &Path, uvfs: bool) -> Outcome {
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

pub fn check(case: Case<'_>, seed: &Path) {
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

pub fn same(s: &str) -> String {
    s.to_string()
}

/// `ls -l` lines: the date columns masked.
pub fn mask_ls(s: &str) -> String {
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
pub fn mask_stat(s: &str) -> String {
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
pub fn seed() -> &'static Path {
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

/// Compiles a C test program at test time into a scratch directory: the
/// directory and the binary's path, or `None` (skipped) without `cc`.
pub fn compile_c(tag: &str, src: &str, pthread: bool) -> Option<(PathBuf, String)> {
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
pub fn run_c(tag: &str, src: &str, pthread: bool, args: &[&str], runs: &[(&str, &[(&str, &str)])]) {
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
