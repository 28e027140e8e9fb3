//! Overwrites racing overwrites, truncations and `stat`
//! (`FastPaths::light_overwrite`: an overwrite inside the size that stamps
//! nothing takes no lock, only the inode's attribute cell's claim; its
//! stock side: tmpfs's inode lock), under `seeds`, `seeds` with the switch
//! off, and `stock`.
//!
//! - Whole pages: two writers overwrite the four pages of a file with
//!   page-sized, page-aligned `pwrite`s, each a run of one byte naming the
//!   writer and its sequence number; a third thread truncates the file to
//!   two pages and back to four (so some writes meet a page that is gone
//!   and take the lock); a fourth reads and `fstat`s (which sends the next
//!   write to the lock, as it must stamp a fine time). Linux's
//!   `inode_lock` makes each write atomic against the others and against
//!   the truncation: when a round's threads are done, every page is all
//!   one writer's byte or all zeros. A light write that overlapped
//!   another write, or wrote a page a truncation had taken, leaves a mix.
//!   A read racing a write may see a mix (Linux's too), but only of bytes
//!   that belong to that page.
//! - `stat`, overwrite, `stat`: the second `stat` shows a new mtime and
//!   ctime, every time (multigrain timestamps: an overwrite after the
//!   ctime was queried stamps a fine time, so it does not take the light
//!   way).
//!
//! Fixed counts of operations (no clock decides the outcome);
//! `UVFS_STRESS_SECS` (default 1) scales them.

use uvfs::uapi::*;
use uvfs::{FastPaths, Process, Vfs};

mod support;

use support::stress::scaled;

const PAGE: usize = 4096;
const PAGES: usize = 4;

/// The byte writer `t`'s write `seq` fills page `pg` with: never zero,
/// and names the writer and the page (so a byte in the wrong page shows).
fn byte(t: u8, pg: usize, seq: u64) -> u8 {
    ((t + 1) << 6) | ((pg as u8) << 4) | (seq % 15 + 1) as u8
}

/// Whether `b` may sit in page `pg` (zero, or a writer's byte for it).
fn belongs(b: u8, pg: usize) -> bool {
    b == 0 || (b >> 6 != 0 && usize::from((b >> 4) & 3) == pg && b & 15 != 0)
}

fn writer(p: &mut Process, t: u8, writes: u64) {
    let fd = p.open("/f", O_WRONLY, 0).unwrap();
    for seq in 0..writes {
        let pg = (seq as usize * 3 + t as usize) % PAGES;
        let buf = [byte(t, pg, seq); PAGE];
        assert_eq!(
            p.pwrite(fd, &buf, (pg * PAGE) as i64).unwrap(),
            PAGE,
            "pwrite"
        );
    }
    p.close(fd).unwrap();
}

fn truncator(p: &mut Process, n: u64) {
    let fd = p.open("/f", O_WRONLY, 0).unwrap();
    for i in 0..n {
        let len = if i % 2 == 0 { 2 } else { PAGES };
        p.ftruncate(fd, (len * PAGE) as i64).unwrap();
    }
    // Four pages at the end of every round.
    p.ftruncate(fd, (PAGES * PAGE) as i64).unwrap();
    p.close(fd).unwrap();
}

fn reader(p: &mut Process, n: u64, fast: FastPaths) {
    let fd = p.open("/f", O_RDONLY, 0).unwrap();
    let mut buf = vec![0u8; PAGES * PAGE];
    for i in 0..n {
        let got = p.pread(fd, &mut buf, 0).unwrap();
        for (k, &b) in buf[..got].iter().enumerate() {
            assert!(belongs(b, k / PAGE), "{fast}: byte {b:#x} at {k}");
        }
        if i % 4 == 0 {
            // Two pages after a truncation, four after the next; three
            // when a write of page 2 came between (a write past the end
            // extends the file, as on Linux).
            let st = p.fstat(fd).unwrap();
            assert!(
                [2, 3, PAGES]
                    .map(|n| (n * PAGE) as i64)
                    .contains(&st.st_size),
                "{fast}: size {}",
                st.st_size
            );
        }
    }
    p.close(fd).unwrap();
}

fn whole_pages(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    setup.write_file("/f", &[0u8; PAGES * PAGE]).unwrap();
    let rounds = scaled(60);
    for _ in 0..rounds {
        std::thread::scope(|s| {
            for t in 0..2u8 {
                let mut p = setup.fork().unwrap();
                s.spawn(move || writer(&mut p, t, 400));
            }
            let mut p = setup.fork().unwrap();
            s.spawn(move || truncator(&mut p, 40));
            let mut p = setup.fork().unwrap();
            s.spawn(move || reader(&mut p, 100, fast));
        });
        let data = setup.read_file("/f").unwrap();
        assert_eq!(data.len(), PAGES * PAGE, "{fast}: size");
        for (pg, page) in data.chunks(PAGE).enumerate() {
            assert!(
                page.iter().all(|&b| b == page[0]) && belongs(page[0], pg),
                "{fast}: page {pg} mixed: {:#x} … {:#x}",
                page[0],
                page[PAGE - 1]
            );
        }
    }
}

/// Two writers, started together, overwrite one page the same number of
/// times, so their last writes often overlap; then the page must be one
/// writer's, whole. No truncation or `stat` here: every write may go the
/// light way.
fn one_page(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut setup = Process::new(&vfs).unwrap();
    setup.write_file("/h", &[0u8; PAGE]).unwrap();
    for round in 0..scaled(400) {
        let go = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for t in 0..2u8 {
                let mut p = setup.fork().unwrap();
                let go = &go;
                s.spawn(move || {
                    let fd = p.open("/h", O_WRONLY, 0).unwrap();
                    let buf = [byte(t, 0, round); PAGE];
                    go.wait();
                    for _ in 0..64 {
                        assert_eq!(p.pwrite(fd, &buf, 0).unwrap(), PAGE);
                    }
                    p.close(fd).unwrap();
                });
            }
        });
        let page = setup.read_file("/h").unwrap();
        assert!(
            page.iter().all(|&b| b == page[0]),
            "{fast}: round {round}: the page is mixed"
        );
    }
}

fn stat_write_stat(fast: FastPaths) {
    let vfs = Vfs::new(fast);
    let mut p = Process::new(&vfs).unwrap();
    p.write_file("/g", &[1u8; 2 * PAGE]).unwrap();
    let fd = p.open("/g", O_RDWR, 0).unwrap();
    // Writes in the same tick first, so the light way is warm.
    for _ in 0..10 {
        p.pwrite(fd, &[2u8; PAGE], 0).unwrap();
    }
    for i in 0..scaled(2000) {
        let a = p.fstat(fd).unwrap();
        p.pwrite(fd, &[i as u8; PAGE], (i % 2) as i64 * PAGE as i64)
            .unwrap();
        let b = p.fstat(fd).unwrap();
        let (am, bm) = ((a.st_mtime, a.st_mtime_nsec), (b.st_mtime, b.st_mtime_nsec));
        let (ac, bc) = ((a.st_ctime, a.st_ctime_nsec), (b.st_ctime, b.st_ctime_nsec));
        assert!(bm > am, "{fast}: mtime did not move: {am:?} then {bm:?}");
        assert!(bc > ac, "{fast}: ctime did not move: {ac:?} then {bc:?}");
    }
    p.close(fd).unwrap();
}

fn presets() -> [FastPaths; 3] {
    [
        FastPaths::seeds(),
        FastPaths::seeds().with("light_overwrite", false),
        FastPaths::stock(),
    ]
}

#[test]
fn stress_light_overwrites_stay_whole() {
    for fast in presets() {
        whole_pages(fast);
    }
}

#[test]
fn stress_light_overwrites_of_one_page_stay_whole() {
    for fast in presets() {
        one_page(fast);
    }
}

#[test]
fn stat_then_overwrite_always_shows() {
    for fast in presets() {
        stat_write_stat(fast);
    }
}
