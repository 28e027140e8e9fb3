//! Writes racing writes and `chmod` (`FastPaths::write_one_lock`: a write
//! decided and done under tmpfs's inode lock alone; its stock side: the
//! VFS inode mutex first), under both presets and with the switch alone.
//!
//! - Appenders: three threads append records to one `O_APPEND` file, each
//!   record a run of one byte naming its thread and its sequence number.
//!   Linux's `inode_lock` makes each append atomic: at the end the file's
//!   size is the sum of the records, and it reads back as whole records,
//!   none overlapping another, each thread's in its own order.
//! - Set-ID bits: a thread sets `S_ISUID` and `S_ISGID` (with group
//!   execute) on a file, then waits until a `pwrite` by another user that
//!   began after its `fchmod` returned has returned, and checks that both
//!   bits are gone (Linux's `file_remove_privs`). A write that decided from
//!   a mode read before the `chmod`, outside the lock it writes under,
//!   would leave them. The writer of the file is not its owner and has no
//!   `CAP_FSETID`.
//!
//! Fixed counts of operations (no clock decides the outcome);
//! `UVFS_STRESS_SECS` (default 1) scales them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use uvfs::cred::Cred;
use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

mod support;

use support::stress::scaled;

/// Bytes in one appended record.
const REC: usize = 100;
const APPENDERS: u8 = 3;

/// The byte of record `seq` by appender `t`: never zero, and tells the
/// appenders apart (`t` in the high bits, the sequence's low bits below).
fn rec_byte(t: u8, seq: u64) -> u8 {
    ((t + 1) << 5) | (seq % 31 + 1) as u8
}

fn appender(p: &mut Process, t: u8, count: u64) -> u64 {
    let fd = p.open("/log", O_WRONLY | O_APPEND, 0).unwrap();
    let mut seq = 0u64;
    while seq < count {
        let rec = [rec_byte(t, seq); REC];
        // Half by write (moving the position), half by pwrite at offset 0
        // (which O_APPEND still appends).
        let n = if seq.is_multiple_of(2) {
            p.write(fd, &rec).unwrap()
        } else {
            p.pwrite(fd, &rec, 0).unwrap()
        };
        assert_eq!(n, REC);
        seq += 1;
    }
    p.close(fd).unwrap();
    seq
}

fn appends(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    setup.write_file("/log", b"").unwrap();
    let count = scaled(20_000);
    let counts: Vec<u64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..APPENDERS)
            .map(|t| {
                let mut p = setup.fork().unwrap();
                s.spawn(move || appender(&mut p, t, count))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: u64 = counts.iter().sum();
    let data = setup.read_file("/log").unwrap();
    assert_eq!(data.len() as u64, total * REC as u64, "{fast}: size");
    let mut next = [0u64; APPENDERS as usize];
    for r in data.chunks(REC) {
        let t = (r[0] >> 5).wrapping_sub(1);
        assert!(t < APPENDERS, "{fast}: bad record byte {:#x}", r[0]);
        let seq = next[t as usize];
        assert!(
            r.iter().all(|&b| b == rec_byte(t, seq)),
            "{fast}: record {seq} of appender {t} torn or out of order"
        );
        next[t as usize] += 1;
    }
    assert_eq!(next.to_vec(), counts, "{fast}: records per appender");
}

fn privs(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut owner = Process::new(&vfs).unwrap();
    owner.chmod("/", 0o755).unwrap();
    owner.write_file("/prog", &[1u8; 8192]).unwrap();
    owner.chown("/prog", 1000, 1000).unwrap();
    owner.chmod("/prog", 0o666).unwrap();
    owner.set_cred(Cred::user(1000, 1000, vec![]));
    let mut writer = owner.fork().unwrap();
    writer.set_cred(Cred::user(2000, 2000, vec![]));
    let rounds = scaled(300);
    // Writes begun and writes returned, counted by the writer around each
    // pwrite.
    let begun = AtomicU64::new(0);
    let returned = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let w = s.spawn(|| {
            let fd = writer.open("/prog", O_WRONLY, 0).unwrap();
            let mut i = 0u64;
            while !done.load(Ordering::Acquire) {
                begun.fetch_add(1, Ordering::SeqCst);
                let off = (i % 3) as i64 * 2000;
                assert_eq!(writer.pwrite(fd, &[7u8; 3000], off).unwrap(), 3000);
                returned.fetch_add(1, Ordering::SeqCst);
                i += 1;
            }
            writer.close(fd).unwrap();
        });
        // Stops the writer however this thread leaves (a failed check
        // included), so the scope's join does not wait for ever.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let _stop = Stop(&done);
        let fd = owner.open("/prog", O_RDONLY, 0).unwrap();
        for _ in 0..rounds {
            owner.fchmod(fd, 0o6777).unwrap();
            // Every write that begins from here on comes after the chmod.
            let after = begun.load(Ordering::SeqCst);
            while returned.load(Ordering::SeqCst) <= after {
                // A writer that failed ends the test with its panic.
                assert!(!w.is_finished(), "{fast}: the writer stopped");
                std::thread::yield_now();
            }
            let mode = owner.fstat(fd).unwrap().st_mode;
            assert_eq!(
                mode & 0o6000,
                0,
                "{fast}: a write after chmod left set-ID bits ({mode:o})"
            );
        }
        owner.close(fd).unwrap();
    });
}

fn presets() -> [FastPaths; 3] {
    [
        FastPaths::seeds(),
        FastPaths::stock(),
        FastPaths::stock().with("write_one_lock", true),
    ]
}

#[test]
fn stress_appends() {
    for fast in presets() {
        appends(fast);
    }
}

#[test]
fn stress_writes_drop_set_id_bits() {
    for fast in presets() {
        privs(fast);
    }
}
