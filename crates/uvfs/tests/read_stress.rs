//! Reads racing writes, truncations and hole punches
//! (`FastPaths::lockless_read`: pages found and copied without the inode's
//! lock, freed after a grace period; its stock side: under the lock), under
//! both presets.
//!
//! Two files, each written by its own thread: overwrites and extensions of
//! random ranges, truncations down and up (to sizes that need not be whole
//! pages) and hole punches. Every byte a writer writes names the file and
//! the page it belongs to (the high nibble: the page number, plus 8 for the
//! second file) and is never zero (the low nibble, a write's generation,
//! 1 to 15). Reader threads `pread` random ranges of both files all the
//! while. Each byte a read returns must be zero (a hole, bytes past an
//! extension, a truncated tail) or one some writer wrote at that offset of
//! that file: a byte from another page or the other file (freed memory
//! reused, a page found at the wrong index) or garbage fails. A read never
//! returns more bytes than the file ever held.
//!
//! Seeded by thread number; `UVFS_STRESS_SECS` lengthens the run.

use std::time::{Duration, Instant};
use uvfs::fs::{FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE};
use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

const PAGE: usize = 4096;
/// Pages a file may reach (the page number fits three bits).
const MAX_PAGES: usize = 8;
const FILES: [&str; 2] = ["/a", "/b"];

fn secs() -> f64 {
    std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

/// A small xorshift generator (the test's randomness, seeded per thread).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The byte file `file` holds at `off` after a write of generation `g`.
fn byte(file: usize, off: usize, g: u64) -> u8 {
    let page = (off / PAGE) as u8 + 8 * file as u8;
    (page << 4) | (g % 15 + 1) as u8
}

/// Checks what a read of `file` at `off` returned.
fn check(file: usize, off: usize, got: &[u8]) {
    for (k, &b) in got.iter().enumerate() {
        let o = off + k;
        let page = (o / PAGE) as u8 + 8 * file as u8;
        assert!(
            b == 0 || (b >> 4 == page && b & 15 != 0),
            "file {file}: byte {b:#04x} at {o} was never written there"
        );
    }
}

fn writer(p: &mut Process, file: usize, until: Instant, seed: u64) -> u64 {
    let fd = p.open(FILES[file], O_RDWR, 0).unwrap();
    let mut rng = Rng(seed);
    let mut buf = vec![0u8; MAX_PAGES * PAGE];
    let mut n = 0u64;
    for g in 1u64.. {
        if Instant::now() >= until {
            break;
        }
        let max = MAX_PAGES * PAGE;
        match rng.below(10) {
            0..=5 => {
                // An overwrite or extension: a random range, often whole
                // pages.
                let (off, len) = if rng.below(2) == 0 {
                    let first = rng.below(MAX_PAGES);
                    let pages = 1 + rng.below(MAX_PAGES - first);
                    (first * PAGE, pages * PAGE)
                } else {
                    let off = rng.below(max);
                    (off, 1 + rng.below(max - off))
                };
                for (k, b) in buf[..len].iter_mut().enumerate() {
                    *b = byte(file, off + k, g);
                }
                assert_eq!(p.pwrite(fd, &buf[..len], off as i64).unwrap(), len);
            }
            6..=7 => {
                let size = if rng.below(2) == 0 {
                    rng.below(MAX_PAGES + 1) * PAGE
                } else {
                    rng.below(max + 1)
                };
                p.ftruncate(fd, size as i64).unwrap();
            }
            _ => {
                let off = rng.below(max);
                let len = 1 + rng.below(max - off);
                let mode = (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE) as i32;
                p.fallocate(fd, mode, off as i64, len as i64).unwrap();
            }
        }
        n += 1;
    }
    n
}

fn reader(p: &mut Process, until: Instant, seed: u64) -> u64 {
    let fds = FILES.map(|f| p.open(f, O_RDONLY, 0).unwrap());
    let mut rng = Rng(seed);
    let mut buf = vec![0u8; (MAX_PAGES + 1) * PAGE];
    let mut n = 0u64;
    while Instant::now() < until {
        for _ in 0..64 {
            let file = rng.below(2);
            let off = rng.below(MAX_PAGES * PAGE);
            let len = match rng.below(3) {
                0 => PAGE,
                1 => 1 + rng.below(2 * PAGE),
                _ => buf.len(),
            };
            // Poison the buffer: bytes the read claims must be its own.
            buf[..len].fill(0xff);
            let got = p.pread(fds[file], &mut buf[..len], off as i64).unwrap();
            assert!(off + got <= MAX_PAGES * PAGE, "read past any size");
            check(file, off, &buf[..got]);
            n += 1;
        }
    }
    n
}

fn run(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    for f in FILES {
        setup.write_file(f, b"").unwrap();
    }
    let until = Instant::now() + Duration::from_secs_f64(secs());
    let (mut reads, mut changes) = (0u64, 0u64);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..FILES.len())
            .map(|file| {
                let mut p = setup.fork().unwrap();
                s.spawn(move || writer(&mut p, file, until, 0x9e37_79b9 + file as u64))
            })
            .collect();
        let readers: Vec<_> = (0..3u64)
            .map(|r| {
                let mut p = setup.fork().unwrap();
                s.spawn(move || reader(&mut p, until, 0x51ed_270b + r))
            })
            .collect();
        for r in readers {
            reads += r.join().expect("reader panicked");
        }
        for w in writers {
            changes += w.join().expect("writer panicked");
        }
    });
    assert!(
        reads > 100 && changes > 100,
        "{reads} reads, {changes} changes"
    );
    eprintln!("{fast}: {reads} reads, {changes} changes");
}

#[test]
fn stress_reads_seeds() {
    run(FastPaths::seeds());
}

#[test]
fn stress_reads_stock() {
    run(FastPaths::stock());
}

/// The lockless side alone on the stock preset (with the published
/// attributes it needs).
#[test]
fn stress_reads_lockless_alone() {
    run(FastPaths::stock()
        .with("lockless_attrs", true)
        .with("lockless_read", true));
}
