//! What the integration tests share: the shim itself, and ([`cprog`])
//! scratch directories, C programs compiled at test time and runs under
//! the shim; ([`tree`]) runs in a process tree.

pub mod cprog;
pub mod programs;
pub mod tree;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The shim, built with the profile this test was built with.
pub fn shim() -> &'static Path {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let so = profile_dir.join("libuvfs_preload.so");
        // The profile's directory is named after it, but for `dev`'s.
        let dir = profile_dir.file_name().unwrap().to_str().unwrap();
        let profile = if dir == "debug" { "dev" } else { dir };
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "-p", "uvfs-preload", "--profile", profile]);
        if let Some(target) = profile_dir.parent() {
            c.env("CARGO_TARGET_DIR", target);
        }
        let st = c.status().expect("cargo build");
        assert!(st.success(), "building the shim failed");
        assert!(so.exists(), "{} missing", so.display());
        so
    })
}
