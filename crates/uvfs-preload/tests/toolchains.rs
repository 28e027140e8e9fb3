//! The Rust toolchain under the shim: `rustc` links jemalloc, whose first
//! allocation (from a library constructor, before the shim's own) reads
//! `/etc/malloc.conf` through `readlink` while holding its initialization
//! lock; a shim that allocated there waited on that lock for ever (found
//! trying `cargo build` under the shim: it hung in `rustc -vV`). And cargo
//! itself, building a crate in a process tree on uvfs.
//!
//! A hang fails the test through `timeout` (a generous limit: it tells a
//! hang from a slow machine, and measures nothing).

mod support;
use support::cprog::{Scratch, err, have, out, run};

/// The toolchain's own `rustc` (not rustup's proxy, which starts threads
/// and execs this one).
fn real_rustc() -> Option<String> {
    if !have("rustc") || !have("timeout") {
        return None;
    }
    let o = run(&["rustc", "--print", "sysroot"], false, &[]);
    assert!(o.status.success(), "rustc --print sysroot: {}", err(&o));
    let bin = format!("{}/bin/rustc", out(&o).trim());
    std::path::Path::new(&bin).exists().then_some(bin)
}

#[test]
fn rustc_starts_under_the_shim() {
    let Some(rustc) = real_rustc() else {
        return;
    };
    let host = run(&[&rustc, "-vV"], false, &[]);
    assert!(host.status.success(), "host: {}", err(&host));
    let shim = run(
        &["timeout", "300", &rustc, "-vV"],
        true,
        &[("UVFS_PREFIX", "/uvfs")],
    );
    assert_ne!(
        shim.status.code(),
        Some(124),
        "rustc -vV hung under the shim (killed after 300 s)"
    );
    assert!(
        shim.status.success(),
        "shim: {:?} {}",
        shim.status,
        err(&shim)
    );
    assert_eq!(out(&shim), out(&host));
    assert_eq!(err(&shim), "", "the shim said something");
}

#[test]
fn cargo_builds_a_crate_in_a_process_tree() {
    if real_rustc().is_none() || !have("cargo") {
        return;
    }
    let dir = Scratch::new("cargo");
    let dump = dir.join("dump");
    let script = "cd /uvfs && cargo new -q --vcs none hello && cd hello \
                  && cargo build -q --offline && ./target/debug/hello";
    let o = run(
        &["timeout", "900", "sh", "-c", script],
        true,
        &[
            ("UVFS_PREFIX", "/uvfs"),
            ("UVFS_DUMP", dump.to_str().unwrap()),
            ("CARGO_TARGET_DIR", "/uvfs/hello/target"),
            ("CARGO_TERM_COLOR", "never"),
        ],
    );
    assert_ne!(o.status.code(), Some(124), "cargo hung under the shim");
    assert!(o.status.success(), "{:?}\n{}{}", o.status, out(&o), err(&o));
    assert_eq!(out(&o), "Hello, world!\n");
    // What cargo and rustc (other processes of the tree) wrote is in the
    // tree's uvfs, dumped when the first process exits.
    assert!(dump.join("hello/src/main.rs").is_file());
    assert!(dump.join("hello/target/debug/hello").is_file());
    assert!(
        !std::path::Path::new("/uvfs/hello").exists(),
        "reached the host"
    );
}

/// A library's constructor that runs before the shim's (the loader runs
/// the program's own libraries' constructors first) and creates a file
/// under the prefix: served by the process's own uvfs, where `main` then
/// finds it, and said once on stderr (the process has not yet learnt
/// whether it belongs to a tree). A path outside the prefix from the same
/// constructor goes to the kernel.
#[test]
fn a_library_constructor_before_the_shims() {
    if !have("cc") {
        return;
    }
    let dir = Scratch::new("early-ctor");
    let lib_c = "#include <fcntl.h>\n#include <stdlib.h>\n#include <unistd.h>\n\
                 static void put(const char *p) {\n\
                 \x20 int fd = open(p, O_CREAT | O_WRONLY | O_TRUNC, 0644);\n\
                 \x20 if (fd >= 0) { write(fd, \"early\", 5); close(fd); }\n\
                 }\n\
                 __attribute__((constructor)) static void early(void) {\n\
                 \x20 put(getenv(\"EARLY_IN\"));\n\
                 \x20 put(getenv(\"EARLY_OUT\"));\n\
                 }\n\
                 int early_linked(void) { return 1; }\n";
    let main_c = "#include <fcntl.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n\
                  int early_linked(void);\n\
                  int main(void) {\n\
                  \x20 char b[16] = {0};\n\
                  \x20 int fd = open(getenv(\"EARLY_IN\"), O_RDONLY);\n\
                  \x20 if (fd < 0 || read(fd, b, 15) < 0) { perror(\"read\"); return 1; }\n\
                  \x20 printf(\"%d %s\\n\", early_linked(), b);\n\
                  \x20 return 0;\n\
                  }\n";
    std::fs::write(dir.join("early.c"), lib_c).unwrap();
    std::fs::write(dir.join("main.c"), main_c).unwrap();
    let d = dir.as_str();
    let cc = |args: &[&str]| {
        let o = run(&[&["cc"], args].concat(), false, &[]);
        assert!(o.status.success(), "cc {args:?}: {}", err(&o));
    };
    cc(&[
        "-shared",
        "-fPIC",
        "-o",
        &format!("{d}/libearly.so"),
        &format!("{d}/early.c"),
    ]);
    cc(&[
        "-o",
        &format!("{d}/main"),
        &format!("{d}/main.c"),
        &format!("-L{d}"),
        "-learly",
        &format!("-Wl,-rpath,{d}"),
    ]);
    let prefix = format!("{d}/uvfs");
    let inside = format!("{prefix}/made-early");
    let outside = format!("{d}/outside");
    let o = run(
        &[&format!("{d}/main")],
        true,
        &[
            ("UVFS_PREFIX", prefix.as_str()),
            ("UVFS_TREE", "0"),
            ("EARLY_IN", inside.as_str()),
            ("EARLY_OUT", outside.as_str()),
        ],
    );
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    assert_eq!(out(&o), "1 early\n");
    assert_eq!(
        err(&o)
            .matches("used before the shim's constructor ran")
            .count(),
        1,
        "stderr: {}",
        err(&o)
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "early");
    assert!(!std::path::Path::new(&prefix).exists(), "reached the host");
}
