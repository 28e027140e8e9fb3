//! The lab's C programs: compiled at run time with the host's `cc` beside
//! their shared header (`c/lab.h`), and run without the shim's variables
//! the lab itself may have inherited. [`crate::preload`]'s open/close loop
//! and [`crate::preload_calls`]' per-call loops use it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A command running `bin` without the shim's variables the lab itself
/// may have inherited (each run sets the ones it wants).
pub fn shimless_command(bin: &Path) -> Command {
    let mut cmd = Command::new(bin);
    for k in [
        "LD_PRELOAD",
        "UVFS_FD_CACHE",
        "UVFS_PREFIX",
        "UVFS_SEED",
        "UVFS_DUMP",
        "UVFS_TREE",
    ] {
        cmd.env_remove(k);
    }
    cmd
}

/// The header the lab's C programs include (`c/lab.h`).
pub const LAB_H: &str = include_str!("../c/lab.h");

/// Writes `source` as `NAME.c` into `dir`, with [`LAB_H`] beside it, and
/// compiles it with `cc -O2` and `flags` into `dir/NAME`.
pub fn compile_c(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Result<PathBuf, String> {
    let write = |file: PathBuf, text: &str| {
        std::fs::write(&file, text).map_err(|e| format!("{}: {e}", file.display()))
    };
    write(dir.join("lab.h"), LAB_H)?;
    let src = dir.join(format!("{name}.c"));
    write(src.clone(), source)?;
    let bin = dir.join(name);
    let out = Command::new("cc")
        .arg("-O2")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                "cc not found: the lab's loops are C programs compiled at run time with \
                 `cc -O2` (install gcc or clang)"
                    .to_string()
            } else {
                format!("running cc: {e}")
            }
        })?;
    if !out.status.success() {
        return Err(format!(
            "cc -O2 {}{name}.c failed ({}): {}",
            flags.iter().map(|f| format!("{f} ")).collect::<String>(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(bin)
}
