//! The FUSE front end's request handling, with no mount: the input chooses
//! a sequence of protocol requests (lookups, creates, opens, reads, writes,
//! renames, links, listings, forgets, …, mostly ones a kernel could send,
//! some with unknown node ids, handles or odd names) that a driver playing
//! the kernel's side sends to the server over a socket pair. Every reply
//! must have the request's `unique`, a consistent length, a valid errno and
//! its opcode's payload size; the server must never die; at the end, with
//! every handle released and every lookup forgotten, it must hold only the
//! root's node, answer DESTROY, and leave the VFS consistent. The driver is
//! the stable test's (`crates/uvfs-fuse/tests/support/wire.rs`).
#![no_main]

#[path = "../../crates/uvfs-fuse/tests/support/wire.rs"]
mod wire;

use libfuzzer_sys::fuzz_target;
use uvfs::FastPaths;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the preset; the rest are the requests.
    let (fast, rest) = match data.split_first() {
        Some((b, rest)) if b & 1 == 1 => (FastPaths::stock(), rest),
        Some((_, rest)) => (FastPaths::seeds(), rest),
        None => (FastPaths::seeds(), data),
    };
    wire::run(rest, fast);
});
