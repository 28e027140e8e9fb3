//! FIFOs (named pipes): Linux's `fs/pipe.c` as a FIFO uses it —
//! `fifo_open`'s rendezvous, `pipe_read`, `pipe_write`, `pipe_release` —
//! over a ring of page-sized buffers.
//!
//! **Where a pipe lives.** A FIFO inode in the inode cache has a slot
//! ([`InodePipe`], Linux's `i_pipe` with the `files` count it keeps under
//! `i_lock`). The first open makes the pipe and hangs it there; every open,
//! blocked or not, counts in `files`; the release of the last one takes it
//! down, data and all, as Linux frees the `pipe_inode_info`. An opener
//! holds the FIFO's dentry and so its inode, so the slot cannot change
//! inodes under it.
//!
//! **The open rendezvous.** A read-only open counts a reader and, unless
//! `O_NONBLOCK`, waits until some writer has opened since it arrived (the
//! writers' open counter moved: a writer that opened and closed again
//! still wakes it, as in Linux); a write-only open is `ENXIO` with
//! `O_NONBLOCK` and no reader, else counts a writer and waits likewise for
//! a reader; a read-write open counts both and never waits. Any other
//! access mode is `EINVAL`.
//!
//! **Data.** At most 16 buffers of a page each (64 KiB, `F_GETPIPE_SZ`).
//! A write first tops up the last buffer with the length modulo a page
//! when that fits whole, then fills fresh buffers a page at a time: a
//! write of at most `PIPE_BUF` (4,096) bytes is never split or
//! interleaved. A blocking write waits for room until everything is
//! written; a non-blocking one writes what fits (`EAGAIN` if nothing
//! does). A read takes what is there, up to its length, and waits only
//! when the pipe is empty and a writer remains; with no writer an empty
//! pipe reads 0 (end of file); non-blocking, `EAGAIN`. A write with no
//! reader is `EPIPE`.
//!
//! **Waiting and signals.** A blocked open, read or write registers its
//! call's waiter on the pipe's readers' or writers' queue (under the
//! pipe's lock, then checks, then sleeps: no wake-up is lost) and sleeps
//! through the caller's [`Sleep`] hook ([`crate::signal`]), until the other
//! side acts (opens, reads, writes, or its last file is released) or a
//! signal interrupts it: an open then gives back its count and fails with
//! `EINTR` unless its partner came meanwhile; a read fails with `EINTR`; a
//! write returns what it wrote, `EINTR` if nothing; with `SA_RESTART`
//! ([`Interrupted::Restart`]) each waits on. Where Linux sends `SIGPIPE`
//! with `EPIPE`, the library only returns `EPIPE`; the LD_PRELOAD shim
//! raises the signal in the calling thread, as the kernel would.

use crate::errno::Errno;
use crate::primitive::sync::atomic::{AtomicPtr, Ordering};
use crate::primitive::sync::{Mutex, MutexGuard, lock};
use crate::select::{PollQueue, Waiter};
use crate::signal::{Interrupted, Sleep, Sleeper};
use crate::uapi::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use std::collections::VecDeque;
use std::sync::Arc;

/// The size of one buffer of the ring (a page).
const PAGE: usize = 4096;
/// Buffers in a new pipe (`PIPE_DEF_BUFFERS`): 64 KiB.
const DEF_BUFFERS: usize = 16;
/// The largest size an unprivileged `F_SETPIPE_SZ` may ask for
/// (`fs.pipe-max-size`'s default).
const PIPE_MAX_SIZE: usize = 1 << 20;

/// One buffer of the ring (`struct pipe_buffer`): a page, of which
/// `off..off + len` holds unread data.
struct Buf {
    page: Box<[u8]>,
    off: usize,
    len: usize,
    /// Written in packet mode (`O_DIRECT`): never merged into, and a read
    /// takes the whole buffer (`PIPE_BUF_FLAG_PACKET`).
    packet: bool,
}

/// A pipe's state, behind its mutex (`pipe->mutex`).
struct State {
    bufs: VecDeque<Buf>,
    /// How many buffers the ring may hold (`max_usage`).
    max_usage: usize,
    readers: u32,
    writers: u32,
    /// Opens for reading (writing) so far: what a blocked opener watches.
    r_counter: u64,
    w_counter: u64,
    /// Pollers watching the pipe (on Linux they sit on both wait queues).
    pollers: PollQueue,
    /// Readers waiting for data or for the last writer to go, and
    /// read-only openers waiting for a writer (`rd_wait`).
    rd_wait: PollQueue,
    /// Writers waiting for room or for the last reader to go, and
    /// write-only openers waiting for a reader (`wr_wait`).
    wr_wait: PollQueue,
}

/// A pipe: its data and who has it open.
pub(crate) struct Pipe {
    st: Mutex<State>,
}

impl Pipe {
    /// Wakes the blocked readers and read-only openers (`rd`), the
    /// blocked writers and write-only openers (`wr`), each of which
    /// rechecks its condition, and every poller (on Linux they sit on both
    /// wait queues). The caller holds the pipe's lock (`st`).
    fn wake(&self, st: &mut State, rd: bool, wr: bool) {
        if rd {
            st.rd_wait.wake_all();
        }
        if wr {
            st.wr_wait.wake_all();
        }
        st.pollers.wake_all();
    }

    /// One interruptible sleep on the readers' (`rd`) or writers' queue:
    /// registers the call's waiter there under the lock the caller holds,
    /// drops it, sleeps and takes it again. The caller rechecks.
    fn sleep<'a>(
        &'a self,
        mut st: MutexGuard<'a, State>,
        rd: bool,
        s: &mut Sleeper<'_>,
    ) -> (MutexGuard<'a, State>, Result<(), Interrupted>) {
        let w = s.waiter();
        if rd {
            st.rd_wait.add(w);
        } else {
            st.wr_wait.add(w);
        }
        drop(st);
        let r = s.sleep();
        (lock(&self.st), r)
    }
}

/// What an inode holds for its pipe (`i_pipe`, and the pipe's `files`
/// count, which Linux keeps under the inode's lock): one pointer to a slot
/// made at the inode's first FIFO open and published once, so an inode
/// that is never opened as a FIFO (nearly all) pays a word, not the slot's
/// lock, pipe and count. The slot stays with the inode object (empty once
/// no file of the inode is open, so the next inode in a reused cache node
/// inherits an empty one) and is freed with it, as the lock context is.
pub(crate) struct InodePipe(AtomicPtr<Mutex<Slot>>);

#[derive(Default)]
struct Slot {
    pipe: Option<Arc<Pipe>>,
    files: u64,
}

impl Default for InodePipe {
    fn default() -> Self {
        InodePipe(AtomicPtr::new(std::ptr::null_mut()))
    }
}

impl Drop for InodePipe {
    fn drop(&mut self) {
        let p = self.0.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: a non-null pointer came from `Box::into_raw` in
            // `slot`, was published once and is freed only here.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

impl std::fmt::Debug for InodePipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InodePipe")
    }
}

impl InodePipe {
    /// The published slot, if any open ever made one.
    fn slot_if_any(&self) -> Option<&Mutex<Slot>> {
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: a published slot lives as long as `self`.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// The slot, made and published now if there is none.
    fn slot(&self) -> &Mutex<Slot> {
        if let Some(s) = self.slot_if_any() {
            return s;
        }
        let fresh = Box::into_raw(Box::new(Mutex::new(Slot::default())));
        match self.0.compare_exchange(
            std::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            // SAFETY: just published; it lives as long as `self`.
            Ok(_) => unsafe { &*fresh },
            Err(won) => {
                // SAFETY: ours, never published.
                drop(unsafe { Box::from_raw(fresh) });
                // SAFETY: the winner's slot lives as long as `self`.
                unsafe { &*won }
            }
        }
    }

    /// The pipe, made now if no open holds one; counts one more file.
    fn get(&self) -> Arc<Pipe> {
        let mut s = lock(self.slot());
        s.files += 1;
        s.pipe
            .get_or_insert_with(|| {
                Arc::new(Pipe {
                    st: Mutex::new(State {
                        bufs: VecDeque::new(),
                        max_usage: DEF_BUFFERS,
                        readers: 0,
                        writers: 0,
                        r_counter: 0,
                        w_counter: 0,
                        pollers: PollQueue::default(),
                        rd_wait: PollQueue::default(),
                        wr_wait: PollQueue::default(),
                    }),
                })
            })
            .clone()
    }

    /// One file less (`put_pipe_info`): the last takes the pipe down.
    fn put(&self) {
        // A put follows its `get`, which published the slot.
        let mut s = lock(self.slot());
        s.files -= 1;
        if s.files == 0 {
            s.pipe = None;
        }
    }

    /// Whether a pipe hangs here (none once every file is gone).
    #[cfg(all(test, not(shuttle)))]
    pub(crate) fn is_empty(&self) -> bool {
        self.slot_if_any().is_none_or(|s| lock(s).pipe.is_none())
    }
}

/// One open of a FIFO: its pipe, and which ends it counts as.
pub(crate) struct FifoFile {
    pipe: Arc<Pipe>,
    reader: bool,
    writer: bool,
    /// A non-blocking read-only open with no writer remembers the writers'
    /// open counter (Linux's `f_pipe`): `POLLHUP` stays off until a writer
    /// has opened since.
    hup_after: Option<u64>,
}

/// `fifo_open`: opens `slot`'s pipe for reading, writing or both (as the
/// file's `FMODE_READ`/`FMODE_WRITE` say), waiting for the other side as
/// the module docs say, through `hook`. A failed open (an interrupted one
/// included) leaves the counts as they were, but for the open counter it
/// moved (a partner that opened and left counts, as on Linux).
#[cfg(test)]
#[cfg_attr(shuttle, allow(dead_code))]
pub(crate) fn fifo_open(
    slot: &InodePipe,
    reader: bool,
    writer: bool,
    nonblock: bool,
    hook: Option<&dyn Sleep>,
) -> Result<FifoFile, Errno> {
    fifo_open_or_decline(slot, reader, writer, nonblock, true, hook)
}

/// [`fifo_open`], which with `wait` false declines a blocking open that
/// would wait for the other side: `EWOULDBLOCK`, with nothing counted or
/// woken (for a task that must not sleep in the call and makes it again
/// on one that may: [`crate::Process::set_lease_break_wait`]).
pub(crate) fn fifo_open_or_decline(
    slot: &InodePipe,
    reader: bool,
    writer: bool,
    nonblock: bool,
    wait: bool,
    hook: Option<&dyn Sleep>,
) -> Result<FifoFile, Errno> {
    let mut sl = Sleeper::new(hook);
    let pipe = slot.get();
    let mut st = lock(&pipe.st);
    let mut hup_after = None;
    let declines = match (reader, writer) {
        (true, false) => !nonblock && st.writers == 0,
        (false, true) => !nonblock && st.readers == 0,
        _ => false,
    };
    if declines && !wait {
        drop(st);
        drop(pipe);
        slot.put();
        return Err(Errno::EWOULDBLOCK);
    }
    match (reader, writer) {
        (true, false) => {
            st.r_counter += 1;
            st.readers += 1;
            pipe.wake(&mut st, false, true);
            if st.writers == 0 && nonblock {
                hup_after = Some(st.w_counter);
            }
            if st.writers == 0 && !nonblock {
                match wait_for_partner(&pipe, st, true, &mut sl) {
                    Ok(g) => st = g,
                    Err(e) => {
                        // `pipe` (borrowed by the match) goes at the return.
                        slot.put();
                        return Err(e);
                    }
                }
            }
        }
        (false, true) => {
            if nonblock && st.readers == 0 {
                drop(st);
                drop(pipe);
                slot.put();
                return Err(Errno::ENXIO);
            }
            st.w_counter += 1;
            st.writers += 1;
            pipe.wake(&mut st, true, false);
            if st.readers == 0 {
                match wait_for_partner(&pipe, st, false, &mut sl) {
                    Ok(g) => st = g,
                    Err(e) => {
                        // `pipe` (borrowed by the match) goes at the return.
                        slot.put();
                        return Err(e);
                    }
                }
            }
        }
        (true, true) => {
            st.r_counter += 1;
            st.w_counter += 1;
            st.readers += 1;
            st.writers += 1;
            pipe.wake(&mut st, true, true);
        }
        (false, false) => {
            drop(st);
            drop(pipe);
            slot.put();
            return Err(Errno::EINVAL);
        }
    }
    drop(st);
    Ok(FifoFile {
        pipe,
        reader,
        writer,
        hup_after,
    })
}

/// A blocking open of one end (`reader`, or the writing end) waiting for
/// the other: sleeps until that end's open counter moves (a partner opened,
/// even if it has left again). Interrupted with no partner yet, it takes
/// this open's end back off the counts, waking the other side's openers if
/// it was the last, and answers `EINTR` with the pipe's lock dropped.
fn wait_for_partner<'a>(
    pipe: &'a Pipe,
    mut st: MutexGuard<'a, State>,
    reader: bool,
    sl: &mut Sleeper<'_>,
) -> Result<MutexGuard<'a, State>, Errno> {
    let partner_opens = |st: &State| if reader { st.w_counter } else { st.r_counter };
    let seen = partner_opens(&st);
    while partner_opens(&st) == seen {
        let r;
        (st, r) = pipe.sleep(st, reader, sl);
        if r == Err(Interrupted::Eintr) && partner_opens(&st) == seen {
            let ends = if reader {
                &mut st.readers
            } else {
                &mut st.writers
            };
            *ends -= 1;
            if *ends == 0 {
                pipe.wake(&mut st, !reader, reader);
            }
            return Err(Errno::EINTR);
        }
    }
    Ok(st)
}

impl FifoFile {
    /// `pipe_release`: this open's ends go, waking whoever waits on them;
    /// then the file's count on `slot`.
    pub(crate) fn release(&self, slot: &InodePipe) {
        let mut st = lock(&self.pipe.st);
        if self.reader {
            st.readers -= 1;
        }
        if self.writer {
            st.writers -= 1;
        }
        if st.readers == 0 || st.writers == 0 {
            self.pipe.wake(&mut st, true, true);
        }
        drop(st);
        slot.put();
    }

    /// `pipe_poll`: the `POLL*` events of this open's ends. A read end is
    /// readable (`POLLIN | POLLRDNORM`) while the pipe holds data and hung
    /// up (`POLLHUP`) once no writer is left (not before a writer came, for
    /// a non-blocking open that found none); a write end is writable
    /// (`POLLOUT | POLLWRNORM`) while a buffer of the ring is free, and in
    /// error (`POLLERR`) with no reader. With `waiter`, registers it first,
    /// under the same lock, so any later change wakes it.
    pub(crate) fn poll(&self, waiter: Option<&Arc<Waiter>>) -> i16 {
        let mut st = lock(&self.pipe.st);
        if let Some(w) = waiter {
            st.pollers.add(w);
        }
        let mut mask = 0;
        if self.reader {
            if !st.bufs.is_empty() {
                mask |= POLLIN | POLLRDNORM;
            }
            if st.writers == 0 && self.hup_after != Some(st.w_counter) {
                mask |= POLLHUP;
            }
        }
        if self.writer {
            if st.bufs.len() < st.max_usage {
                mask |= POLLOUT | POLLWRNORM;
            }
            if st.readers == 0 {
                mask |= POLLERR;
            }
        }
        mask
    }

    /// The bytes the pipe holds (`FIONREAD`).
    pub(crate) fn nread(&self) -> usize {
        lock(&self.pipe.st).bufs.iter().map(|b| b.len).sum()
    }

    /// The pipe's size in bytes (`F_GETPIPE_SZ`).
    pub(crate) fn size(&self) -> usize {
        lock(&self.pipe.st).max_usage * PAGE
    }

    /// `F_SETPIPE_SZ` (`pipe_set_size`): `size` rounded up to a power of
    /// two pages (a page at least; `EINVAL` past 2^31); growing past
    /// `fs.pipe-max-size` (1 MiB) needs `CAP_SYS_RESOURCE` (`cap`, the
    /// process's: see `Process::set_cap_sys_resource`) (`EPERM`);
    /// `EBUSY` if the data held needs more buffers. Returns the new size.
    /// (Linux also charges pipe pages to the user's
    /// `fs.pipe-user-pages-*` limits; the library does not count them.)
    pub(crate) fn set_size(&self, size: u32, cap: bool) -> Result<usize, Errno> {
        if size > 1 << 31 {
            return Err(Errno::EINVAL);
        }
        let size = (size as usize).max(PAGE).next_power_of_two();
        let bufs = size / PAGE;
        let mut st = lock(&self.pipe.st);
        if bufs > st.max_usage && size > PIPE_MAX_SIZE && !cap {
            return Err(Errno::EPERM);
        }
        if st.bufs.len() > bufs {
            return Err(Errno::EBUSY);
        }
        st.max_usage = bufs;
        self.pipe.wake(&mut st, false, true);
        Ok(bufs * PAGE)
    }

    /// `pipe_read` into `bufs` (a vector, as readv): what is there, up to
    /// their length; waits on an empty pipe with a writer unless
    /// `nonblock`, through `hook` (`EINTR` when interrupted).
    pub(crate) fn read(
        &self,
        bufs: &mut [&mut [u8]],
        nonblock: bool,
        hook: Option<&dyn Sleep>,
    ) -> Result<usize, Errno> {
        let mut sl = Sleeper::new(hook);
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Ok(0);
        }
        let mut out = Cursor::new(bufs);
        let mut st = lock(&self.pipe.st);
        loop {
            let mut ret = 0;
            let mut freed = false;
            while let Some(b) = st.bufs.front_mut() {
                let n = out.put(&b.page[b.off..b.off + b.len]);
                ret += n;
                b.off += n;
                b.len -= n;
                let packet = b.packet;
                if packet {
                    // The rest of a packet is dropped.
                    b.len = 0;
                }
                if b.len == 0 {
                    st.bufs.pop_front();
                    freed = true;
                }
                if out.full() || packet {
                    break;
                }
            }
            if freed {
                self.pipe.wake(&mut st, false, true);
            }
            if ret > 0 || st.writers == 0 {
                return Ok(ret);
            }
            if nonblock {
                return Err(Errno::EAGAIN);
            }
            let r;
            (st, r) = self.pipe.sleep(st, true, &mut sl);
            if r == Err(Interrupted::Eintr) {
                return Err(Errno::EINTR);
            }
        }
    }

    /// `pipe_write` of `bufs`: `EPIPE` with no reader; blocking until all
    /// is written unless `nonblock`; `packet` (`O_DIRECT`) keeps each
    /// write in buffers of its own. Interrupted (through `hook`), it
    /// returns what it wrote, `EINTR` if nothing.
    pub(crate) fn write(
        &self,
        bufs: &[&[u8]],
        nonblock: bool,
        packet: bool,
        hook: Option<&dyn Sleep>,
    ) -> Result<usize, Errno> {
        let mut sl = Sleeper::new(hook);
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total == 0 {
            return Ok(0);
        }
        let mut src = Source::new(bufs);
        let mut st = lock(&self.pipe.st);
        if st.readers == 0 {
            return Err(Errno::EPIPE);
        }
        let mut ret = 0;
        // Top up the last buffer with the part that is not a whole page,
        // when it fits whole.
        let chars = total % PAGE;
        if chars != 0
            && let Some(b) = st.bufs.back_mut()
            && !b.packet
            && b.off + b.len + chars <= PAGE
        {
            let at = b.off + b.len;
            src.take(&mut b.page[at..at + chars]);
            b.len += chars;
            ret = chars;
            self.pipe.wake(&mut st, true, false);
            if ret == total {
                return Ok(ret);
            }
        }
        loop {
            if st.readers == 0 {
                return if ret == 0 { Err(Errno::EPIPE) } else { Ok(ret) };
            }
            if st.bufs.len() < st.max_usage {
                let mut page = vec![0u8; PAGE].into_boxed_slice();
                let n = src.take(&mut page);
                st.bufs.push_back(Buf {
                    page,
                    off: 0,
                    len: n,
                    packet,
                });
                ret += n;
                self.pipe.wake(&mut st, true, false);
                if ret == total {
                    return Ok(ret);
                }
                continue;
            }
            if nonblock {
                return if ret == 0 {
                    Err(Errno::EAGAIN)
                } else {
                    Ok(ret)
                };
            }
            let r;
            (st, r) = self.pipe.sleep(st, false, &mut sl);
            if let Err(how) = r
                && (ret > 0 || how == Interrupted::Eintr)
            {
                return if ret == 0 { Err(Errno::EINTR) } else { Ok(ret) };
            }
        }
    }
}

// A FIFO open as a file's operations (its release, and finding it behind
// a file) lives with the files, in `file_table/fifo.rs`: this module knows
// nothing of files, so the inode cache can hold a pipe slot without a
// circle of imports.

/// A read's destination: a vector of buffers filled in order.
struct Cursor<'a, 'b> {
    bufs: &'a mut [&'b mut [u8]],
    i: usize,
    at: usize,
}

impl<'a, 'b> Cursor<'a, 'b> {
    fn new(bufs: &'a mut [&'b mut [u8]]) -> Self {
        Cursor { bufs, i: 0, at: 0 }
    }

    /// Copies as much of `data` as fits; returns how much.
    fn put(&mut self, mut data: &[u8]) -> usize {
        let mut n = 0;
        while !data.is_empty() && self.i < self.bufs.len() {
            let dst = &mut self.bufs[self.i][self.at..];
            let k = dst.len().min(data.len());
            dst[..k].copy_from_slice(&data[..k]);
            n += k;
            data = &data[k..];
            self.at += k;
            if self.at == self.bufs[self.i].len() {
                self.i += 1;
                self.at = 0;
            }
        }
        n
    }

    fn full(&mut self) -> bool {
        while self.i < self.bufs.len() && self.at == self.bufs[self.i].len() {
            self.i += 1;
            self.at = 0;
        }
        self.i == self.bufs.len()
    }
}

/// A write's source: a vector of buffers taken in order.
struct Source<'a, 'b> {
    bufs: &'a [&'b [u8]],
    i: usize,
    at: usize,
}

impl<'a, 'b> Source<'a, 'b> {
    fn new(bufs: &'a [&'b [u8]]) -> Self {
        Source { bufs, i: 0, at: 0 }
    }

    /// Fills `dst` from the source, as far as it goes; returns how much.
    fn take(&mut self, dst: &mut [u8]) -> usize {
        let mut n = 0;
        while n < dst.len() && self.i < self.bufs.len() {
            let src = &self.bufs[self.i][self.at..];
            let k = src.len().min(dst.len() - n);
            dst[n..n + k].copy_from_slice(&src[..k]);
            n += k;
            self.at += k;
            if self.at == self.bufs[self.i].len() {
                self.i += 1;
                self.at = 0;
            }
        }
        n
    }
}

/// Loom models of the open rendezvous and the reader/writer wake-ups.
#[cfg(all(test, loom))]
mod loom_tests;

/// The ring's arithmetic and the slot's lifetime, single-threaded.
#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn ring_merges_and_frees() {
        let slot = InodePipe::default();
        let f = fifo_open(&slot, true, true, true, None).unwrap();
        // 70,000 bytes into an empty pipe: 16 whole pages, no merge.
        assert_eq!(
            f.write(&[&[1u8; 70_000][..]], true, false, None),
            Ok(65_536)
        );
        assert_eq!(f.write(&[b"x"], true, false, None), Err(Errno::EAGAIN));
        let mut b = [0u8; 100];
        assert_eq!(f.read(&mut [&mut b[..]], true, None), Ok(100));
        // The first page has room only at its front: still full.
        assert_eq!(f.write(&[b"x"], true, false, None), Err(Errno::EAGAIN));
        let mut b = [0u8; 4000];
        assert_eq!(f.read(&mut [&mut b[..]], true, None), Ok(4000));
        // A slot is free; a 1-byte write takes it, then merges follow.
        assert_eq!(f.write(&[b"a"], true, false, None), Ok(1));
        assert_eq!(f.write(&[b"bc"], true, false, None), Ok(2));
        // Readv across buffers of the ring.
        let (mut x, mut y) = (vec![0u8; 61_000], vec![0u8; 1000]);
        let n = f.read(&mut [&mut x[..], &mut y[..]], true, None).unwrap();
        assert_eq!(n, 65_536 - 4100 + 3);
        assert_eq!(&y[n - 61_000 - 3..n - 61_000], b"abc");
        assert_eq!(f.read(&mut [&mut x[..]], true, None), Err(Errno::EAGAIN));
        f.release(&slot);
        assert!(slot.is_empty());
    }

    #[test]
    fn a_declined_open_counts_and_wakes_nothing() {
        let slot = InodePipe::default();
        // No writer: a blocking reader that may not wait is declined, and
        // a non-blocking one is not.
        assert_eq!(
            fifo_open_or_decline(&slot, true, false, false, false, None).err(),
            Some(Errno::EWOULDBLOCK)
        );
        // No reader: a blocking writer likewise (ENXIO stays O_NONBLOCK's).
        assert_eq!(
            fifo_open_or_decline(&slot, false, true, false, false, None).err(),
            Some(Errno::EWOULDBLOCK)
        );
        assert_eq!(
            fifo_open_or_decline(&slot, false, true, true, false, None).err(),
            Some(Errno::ENXIO)
        );
        {
            let pipe = slot.get();
            let st = lock(&pipe.st);
            assert_eq!((st.readers, st.writers), (0, 0));
            assert_eq!((st.r_counter, st.w_counter), (0, 0));
            drop(st);
            drop(pipe);
            slot.put();
        }
        // With a reader there, a writer that may not wait opens at once,
        // and so does a reader once a writer is there.
        let r = fifo_open_or_decline(&slot, true, false, true, false, None).unwrap();
        let w = fifo_open_or_decline(&slot, false, true, false, false, None).unwrap();
        let r2 = fifo_open_or_decline(&slot, true, false, false, false, None).unwrap();
        // Read-write never waits.
        let rw = fifo_open_or_decline(&slot, true, true, false, false, None).unwrap();
        for f in [r, w, r2, rw] {
            f.release(&slot);
        }
    }

    #[test]
    fn failed_opens_leave_nothing() {
        let slot = InodePipe::default();
        assert_eq!(
            fifo_open(&slot, false, true, true, None).err(),
            Some(Errno::ENXIO)
        );
        assert_eq!(
            fifo_open(&slot, false, false, true, None).err(),
            Some(Errno::EINVAL)
        );
        assert!(slot.is_empty());
        // A packet write is read whole or not at all past the buffer.
        let f = fifo_open(&slot, true, true, true, None).unwrap();
        assert_eq!(f.write(&[b"abcdef"], true, true, None), Ok(6));
        assert_eq!(f.write(&[b"gh"], true, true, None), Ok(2));
        let mut b = [0u8; 4];
        assert_eq!(f.read(&mut [&mut b[..]], true, None), Ok(4));
        assert_eq!(f.read(&mut [&mut b[..]], true, None), Ok(2));
        assert_eq!(&b[..2], b"gh");
        f.release(&slot);
        assert!(slot.is_empty());
    }

    /// Interrupted opens give back their count and their reference; an
    /// interrupted read is `EINTR`; an interrupted write keeps what it
    /// wrote, `EINTR` with nothing written. The interrupt is pending
    /// before the sleep: decided by order, not time.
    #[test]
    fn pipe_interrupted_waits() {
        use crate::signal::{Interrupted, Signals};
        let sig = Signals::new();
        let slot = InodePipe::default();
        sig.interrupt(Interrupted::Eintr);
        assert_eq!(
            fifo_open(&slot, true, false, false, Some(&*sig)).err(),
            Some(Errno::EINTR)
        );
        assert!(slot.is_empty());
        // No reader is left: a non-blocking writer finds none.
        assert_eq!(
            fifo_open(&slot, false, true, true, None).err(),
            Some(Errno::ENXIO)
        );
        sig.interrupt(Interrupted::Eintr);
        assert_eq!(
            fifo_open(&slot, false, true, false, Some(&*sig)).err(),
            Some(Errno::EINTR)
        );
        assert!(slot.is_empty());
        // A reader's read of an empty pipe with a writer.
        let r = fifo_open(&slot, true, false, true, None).unwrap();
        let w = fifo_open(&slot, false, true, true, None).unwrap();
        let mut b = [0u8; 8];
        sig.interrupt(Interrupted::Eintr);
        assert_eq!(
            r.read(&mut [&mut b[..]], false, Some(&*sig)),
            Err(Errno::EINTR)
        );
        // A write larger than the pipe: 64 KiB go in, then the interrupt.
        sig.interrupt(Interrupted::Eintr);
        assert_eq!(
            w.write(&[&[1u8; 70_000][..]], false, false, Some(&*sig)),
            Ok(65_536)
        );
        sig.interrupt(Interrupted::Eintr);
        assert_eq!(
            w.write(&[b"x"], false, false, Some(&*sig)),
            Err(Errno::EINTR)
        );
        assert_eq!(r.nread(), 65_536);
        w.release(&slot);
        r.release(&slot);
        assert!(slot.is_empty());
    }
}
