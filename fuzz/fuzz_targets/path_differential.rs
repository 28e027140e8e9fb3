//! Differential: the ops that the input's bytes generate run on the host
//! kernel and on uvfs, and every result, errno, stat field, listing and
//! file content must agree.
//!
//! The generator is the stable differential test's
//! (`crates/uvfs/tests/support/pathdiff/generator.rs`: every path call of
//! the library, steered by the host's results so that most calls reach
//! real objects), with its choices read from the input instead of a seeded
//! generator, so libFuzzer's coverage feedback steers which sequences are
//! tried. The host side runs in a thread with its own mount namespace and
//! a private tmpfs when the process may make one (root), else in a fresh
//! directory under /dev/shm; uvfs runs the same ops under both FastPaths
//! presets. Calls whose results cannot be deterministic (times, inode
//! numbers) are compared by shape, as in the stable test. Known,
//! documented differences are not generated (`UVFS_DIFF_KNOWN=1` turns
//! them on).
#![no_main]

#[allow(unused_imports)]
#[path = "../../crates/uvfs/tests/support/mod.rs"]
mod support;

use libfuzzer_sys::fuzz_target;

/// At most this many ops per input: long enough for a file's life, short
/// enough that a run stays at hundreds of inputs a second.
const MAX_OPS: usize = 96;

fuzz_target!(|data: &[u8]| {
    if let Some(report) = support::pathdiff::check_bytes(data, MAX_OPS) {
        panic!("uvfs differs from the host kernel:\n{report}");
    }
});
