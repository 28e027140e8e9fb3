//! The short soak CI runs: a mixed workload on one VFS for ~10 s whose
//! resident memory, after a 4 s warm-up, must grow by less than 5 %; the
//! run must end with the namespace removed and no dentry reference
//! unaccounted for (the soak checks it and exits 1 otherwise).

use std::process::Command;

#[test]
fn soak_memory_flattens_and_nothing_leaks() {
    let out = Command::new(env!("CARGO_BIN_EXE_uvfs-bench"))
        .args([
            "soak",
            "--seconds",
            "6",
            "--warmup",
            "4",
            "--interval",
            "2",
            "--max-growth",
            "5",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("VFS consistent"), "{stdout}");
}

#[test]
fn soak_rejects_bad_settings() {
    for args in [
        &["soak", "--tasks", "0"][..],
        &["soak", "--seconds", "0"],
        &["soak", "--mask", "0"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_uvfs-bench"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("uvfs-bench soak:"),
            "{args:?}"
        );
    }
}
