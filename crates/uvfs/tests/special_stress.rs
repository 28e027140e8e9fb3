//! Stress of FIFOs across threads of one VFS: several writers and readers
//! open, write, read and close one FIFO at once, blocking and not. Each
//! write is one record of at most `PIPE_BUF` bytes (a writer id, a
//! sequence number, a length and a filler), so `PIPE_BUF` atomicity can
//! be checked on the reading side: records arrive whole, never
//! interleaved, each writer's in order, none lost or duplicated. Then
//! opens that race closes: whatever the interleaving, every open gets its
//! partner or its `ENXIO`, and the pipe goes with the last file (a new
//! open finds it empty). Then pollers sleeping in `poll` on a shared
//! read end while writers fill the pipe: every byte read once, the hang
//! up seen by each. Pass or fail is decided by counts, never by time.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use support::vfs::fasts;
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

const WRITERS: usize = 4;
const RECORDS: usize = 400;

/// Record `seq` of writer `w`: 12 bytes of header and a filler that
/// makes it between 12 and `PIPE_BUF` bytes long.
fn record(w: usize, seq: usize) -> Vec<u8> {
    let len = 12 + (w * 977 + seq * 131) % (PIPE_BUF - 12);
    let mut r = Vec::with_capacity(len);
    r.extend_from_slice(&(w as u32).to_le_bytes());
    r.extend_from_slice(&(seq as u32).to_le_bytes());
    r.extend_from_slice(&(len as u32).to_le_bytes());
    r.resize(len, (w * 31 + seq) as u8);
    r
}

#[test]
fn records_arrive_whole_and_in_order() {
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkfifo("/f", 0o644).unwrap();
        // The reader holds the pipe open for reading throughout; it
        // opens read-write so its open does not wait, and so no writer's
        // open waits either.
        let rfd = p.open("/f", O_RDWR, 0).unwrap();
        let writers: Vec<_> = (0..WRITERS)
            .map(|w| {
                let mut t = p.new_thread();
                std::thread::spawn(move || {
                    let fd = t.open("/f", O_WRONLY, 0).unwrap();
                    for seq in 0..RECORDS {
                        let r = record(w, seq);
                        assert_eq!(t.write(fd, &r), Ok(r.len()));
                    }
                    t.close(fd).unwrap();
                })
            })
            .collect();
        let mut next = [0usize; WRITERS];
        let mut stream = Vec::new();
        let mut buf = vec![0u8; 3000];
        let mut records = 0;
        while records < WRITERS * RECORDS {
            let n = p.read(rfd, &mut buf).unwrap();
            assert!(n > 0);
            stream.extend_from_slice(&buf[..n]);
            // Take every whole record off the front.
            loop {
                if stream.len() < 12 {
                    break;
                }
                let word =
                    |i: usize| u32::from_le_bytes(stream[i..i + 4].try_into().unwrap()) as usize;
                let (w, seq, len) = (word(0), word(4), word(8));
                assert!(w < WRITERS, "{fast}: a torn record (writer {w})");
                assert_eq!(seq, next[w], "{fast}: writer {w}'s records out of order");
                if stream.len() < len {
                    break;
                }
                assert_eq!(
                    stream[..len],
                    record(w, seq)[..],
                    "{fast}: record {w}/{seq} torn"
                );
                stream.drain(..len);
                next[w] += 1;
                records += 1;
            }
        }
        for t in writers {
            t.join().unwrap();
        }
        assert!(stream.is_empty());
        // Every writer is gone; the read-write fd is the last writer.
        let mut nb = [0u8; 1];
        p.fcntl(rfd, F_SETFL, O_NONBLOCK as u64).unwrap();
        assert_eq!(p.read(rfd, &mut nb), Err(Errno::EAGAIN));
        p.close(rfd).unwrap();
    }
}

#[test]
fn opens_racing_closes_always_pair_up() {
    const ROUNDS: usize = 300;
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkfifo("/f", 0o644).unwrap();
        let enxio = Arc::new(AtomicUsize::new(0));
        let mut r = p.new_thread();
        let reader = std::thread::spawn(move || {
            let mut got = 0usize;
            for _ in 0..ROUNDS {
                // Blocks until a writer opens (even one that leaves at
                // once), then reads to end of file.
                let fd = r.open("/f", O_RDONLY, 0).unwrap();
                let mut b = [0u8; 64];
                loop {
                    match r.read(fd, &mut b).unwrap() {
                        0 => break,
                        n => got += n,
                    }
                }
                r.close(fd).unwrap();
            }
            got
        });
        let mut w = p.new_thread();
        let e2 = enxio.clone();
        let writer = std::thread::spawn(move || {
            let mut sent = 0usize;
            let mut rounds = 0;
            while rounds < ROUNDS {
                // A non-blocking writer races the reader's close and
                // reopen: ENXIO when no reader is there, else a pairing.
                match w.open("/f", O_WRONLY | O_NONBLOCK, 0) {
                    Ok(fd) => {
                        match w.write(fd, b"0123456789") {
                            Ok(n) => sent += n,
                            // The reader closed between our open and write.
                            Err(Errno::EPIPE) => {}
                            Err(e) => panic!("write: {e}"),
                        }
                        w.close(fd).unwrap();
                        rounds += 1;
                    }
                    Err(Errno::ENXIO) => {
                        e2.fetch_add(1, Ordering::Relaxed);
                        std::thread::yield_now();
                    }
                    Err(e) => panic!("open: {e}"),
                }
            }
            sent
        });
        let sent = writer.join().unwrap();
        // The writer's last round may have met a reader that already read
        // end of file from an earlier writer and left: keep it company
        // until it finishes its rounds.
        let mut extra = p.new_thread();
        let stop = Arc::new(AtomicUsize::new(0));
        let s2 = stop.clone();
        let helper = std::thread::spawn(move || {
            while s2.load(Ordering::Relaxed) == 0 {
                if let Ok(fd) = extra.open("/f", O_WRONLY | O_NONBLOCK, 0) {
                    extra.close(fd).unwrap();
                }
                std::thread::yield_now();
            }
        });
        let got = reader.join().unwrap();
        stop.store(1, Ordering::Relaxed);
        helper.join().unwrap();
        assert!(got <= sent, "{fast}: read {got} of {sent}");
        assert!(got > 0, "{fast}: nothing ever got through");
        // Everyone is gone: the pipe went with its last file.
        let fd = p.open("/f", O_RDWR | O_NONBLOCK, 0).unwrap();
        let mut b = [0u8; 1];
        assert_eq!(p.read(fd, &mut b), Err(Errno::EAGAIN));
        p.close(fd).unwrap();
        assert_eq!(p.open("/f", O_WRONLY | O_NONBLOCK, 0), Err(Errno::ENXIO));
    }
}

/// Pollers that sleep in `poll` instead of a blocking read: two threads
/// share a non-blocking read end and each loops poll (no time limit),
/// then a non-blocking read (`EAGAIN` when the other took the data), while
/// writers fill the pipe; a poller whose wake-up were lost would sleep
/// forever. Every byte is read exactly once, and once the writers are
/// gone both pollers see `POLLHUP` and stop. Counts only.
#[test]
fn pollers_see_every_byte_and_the_hang_up() {
    use uvfs::PollFd;
    const BYTES: usize = 200_000;
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkfifo("/f", 0o644).unwrap();
        let rfd = p.open("/f", O_RDONLY | O_NONBLOCK, 0).unwrap();
        let wfd = p.open("/f", O_WRONLY, 0).unwrap();
        let total = Arc::new(AtomicUsize::new(0));
        let pollers: Vec<_> = (0..2)
            .map(|_| {
                let mut t = p.new_thread();
                let total = total.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 3000];
                    loop {
                        let mut e = [PollFd {
                            fd: rfd,
                            events: POLLIN,
                            revents: 0,
                        }];
                        assert_eq!(t.poll(&mut e, -1), Ok(1));
                        match t.read(rfd, &mut buf) {
                            Ok(0) => break,
                            Ok(n) => {
                                total.fetch_add(n, Ordering::Relaxed);
                            }
                            Err(Errno::EAGAIN) => {}
                            Err(e) => panic!("{fast}: read: {e}"),
                        }
                    }
                    // End of file: the writers are gone, for good.
                    let mut e = [PollFd {
                        fd: rfd,
                        events: POLLIN,
                        revents: 0,
                    }];
                    assert_eq!(t.poll(&mut e, 0), Ok(1));
                    usize::from(e[0].revents == POLLHUP)
                })
            })
            .collect();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let mut t = p.new_thread();
                std::thread::spawn(move || {
                    let mut left = BYTES / 2;
                    while left > 0 {
                        let n = left.min(1 + (left * 7 + w) % 5000);
                        assert_eq!(t.write(wfd, &vec![b'x'; n]), Ok(n));
                        left -= n;
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        p.close(wfd).unwrap();
        let hups: usize = pollers.into_iter().map(|t| t.join().unwrap()).sum();
        assert_eq!(hups, 2, "{fast}");
        assert_eq!(total.load(Ordering::Relaxed), BYTES, "{fast}");
        p.close(rfd).unwrap();
        drop(p);
        vfs.check_consistency().unwrap();
    }
}
