//! The Process API over a tiny VFS, invariants checked after every call.
//!
//! The decoder and the checks are the stable test's
//! (`crates/uvfs/tests/support/fuzz.rs`): bytes become calls across up to
//! three processes of a VFS with caches of six entries, a tmpfs of 8 pages
//! and 12 inodes and a second tmpfs mounted; after each call every open fd
//! must map to a live file and no call may answer with an errno no path of
//! the VFS produces (EIO, ESTALE, an unknown number); at the end the dentry
//! cache must agree with tmpfs and both tmpfs `fsck`s must pass. Each input
//! runs under both FastPaths presets. Here libFuzzer steers the bytes by
//! the coverage they reach.
#![no_main]

#[allow(unused_imports)]
#[path = "../../crates/uvfs/tests/support/mod.rs"]
mod support;

use libfuzzer_sys::fuzz_target;
use uvfs::FastPaths;

fuzz_target!(|data: &[u8]| {
    for preset in [FastPaths::seeds(), FastPaths::stock()] {
        if let Err(e) = support::fuzz::Fuzz::new(preset).run(data) {
            panic!("{preset}: invariant broken: {e}");
        }
    }
});
