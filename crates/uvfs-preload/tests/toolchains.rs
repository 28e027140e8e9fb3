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
