//! The FUSE server fed raw protocol requests over a socket pair, no mount
//! needed (the driver and what it checks: `support/wire.rs`; the same
//! driver is the coverage-guided target `fuse_requests` in `fuzz/`).

#[path = "support/wire.rs"]
mod wire;

use uvfs::FastPaths;

/// Inputs from a fixed xorshift sequence: the same on every machine.
fn input(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8
        })
        .collect()
}

#[test]
fn random_request_sequences_keep_the_server_whole() {
    let (mut ok, mut failed) = (0, 0);
    for seed in 1..=24u64 {
        for fast in [FastPaths::seeds(), FastPaths::stock()] {
            let (o, f) = wire::run(&input(seed, 3000), fast);
            ok += o;
            failed += f;
        }
    }
    // The driver must reach real objects, not only errors: a driver whose
    // requests all fail would check nothing.
    eprintln!("{ok} requests succeeded, {failed} failed");
    assert!(
        ok * 3 > ok + failed,
        "{ok} of {} requests succeeded",
        ok + failed
    );
}

#[test]
fn an_empty_input_starts_and_ends_cleanly() {
    wire::run(&[], FastPaths::seeds());
}

#[test]
#[should_panic(expected = "still holds nodes")]
fn a_lookup_never_forgotten_is_caught() {
    let mut w = wire::Wire::start(FastPaths::seeds());
    // As root (1), CREATE (8) in the root (0) of "a" (5, 0) for O_RDWR (0),
    // no forget after it (1); then lose its lookup.
    let mut c = wire::Choices::new(&[1, 8, 0, 5, 0, 0, 1]);
    w.step(&mut c);
    assert!(w.lose_a_lookup(), "the create gave a node");
    w.finish();
}
