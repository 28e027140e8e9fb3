//! File data through the inode: read, write, fallocate, `SEEK_DATA` and
//! `SEEK_HOLE` on a regular file's pages (`shmem_file_read_iter`,
//! `shmem_file_write_iter`, `shmem_fallocate`, `shmem_file_llseek`), under
//! the inode's lock. A file whose data moved to a memfd
//! ([`memfd`](super::memfd)) is served by the kernel after the same
//! argument checks.

use std::collections::btree_map::Entry;

use super::inode::{Inode, Kind, Locked, State, WrGuard, rd, try_wr, wr};
use super::pageindex::Found;
use super::pages::{FALLOC_KNOWN, FALLOC_MAX_NEW_PAGES, Page, RegFile};
use super::pool::{POOL_MIN_PAGES, PageBuf};
use super::published::pack;
use super::{MAX_FILE_SIZE, PAGE_SIZE, Tmpfs, racy};
use crate::errno::Errno;
use crate::fs::timekeeping::coarse_mg;
use crate::fs::{
    FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, Node, S_IFMT, S_IFREG, S_ISGID, S_ISUID, Seek,
};

/// The longest write [`Tmpfs::write_pages`] makes under the inode
/// table's shard lock (four pages: a copy of well under a microsecond).
const BORROW_WRITE_MAX: usize = 4 * PAGE_SIZE as usize;

impl Tmpfs {
    /// read(2) of a regular file: holes and unwritten pages read as zeros.
    /// Inline into its two callers (`read`, `read_node`: a call fewer on
    /// every cached read).
    #[inline]
    pub(super) fn read_pages(&self, n: Node<'_>, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        let ino = n.ino;
        // The short way, as for a write (see `write_pages`).
        if (n.data.is_none() || !self.borrow)
            && buf.len() <= BORROW_WRITE_MAX
            && let Some(r) = self.with_inode(ino, |i| {
                let st = i.st.try_read()?;
                if matches!(st.kind(), Kind::Reg(RegFile::Memfd(_))) {
                    return None;
                }
                Some(read_locked(&st, off, &mut *buf, self.light_overwrite))
            })
        {
            return r;
        }
        let i = self.node(n)?;
        if self.lockless_read {
            if let Some(r) = read_lockless(&i, off, buf) {
                return r;
            }
        } else if let Some(s) = i.snapshot()
            && s.mode & S_IFMT == S_IFREG
            && off >= s.size
        {
            // `FastPaths::lockless_attrs`: a read at or past the end needs
            // no page, so no lock (the size as the last writer published
            // it).
            return Ok(0);
        }
        let st = rd(&i);
        read_locked(&st, off, buf, self.light_overwrite)
    }

    /// write(2) to a regular file: allocates pages as it goes; a short count
    /// when the space limit is reached part way, `ENOSPC` when at once.
    pub(super) fn write_pages(&self, n: Node<'_>, off: u64, data: &[u8]) -> Result<usize, Errno> {
        let ino = n.ino;
        // The short way for a short write whose inode's lock is free (see
        // `with_inode`): no reference taken. A memfd-backed file goes the
        // long way (its write may take long), and so does every write with
        // a directory store (the first one makes the file there).
        if (n.data.is_none() || !self.borrow)
            && data.len() <= BORROW_WRITE_MAX
            && self.store.is_none()
            && let Some(r) = self.with_inode(ino, |i| {
                let mut st = try_wr(i)?;
                if matches!(st.kind(), Kind::Reg(RegFile::Memfd(_))) {
                    return None;
                }
                Some(self.write_locked(i, &mut st, off, data))
            })
        {
            return r;
        }
        let i = self.node(n)?;
        let mut st = wr(&i);
        self.write_locked(&i, &mut st, off, data)
    }

    /// `FastPaths::write_one_lock` ([`FileSystem::write_one_lock`]): a
    /// write with no VFS inode lock held, everything it depends on read
    /// under the inode's write lock: the offset (the size, for `None`),
    /// the mode (no set-ID bit: no privilege to drop, whoever writes),
    /// the pages. A `chmod`, truncation, `fallocate` or other write that
    /// holds the VFS lock changes these only under the same inode lock,
    /// so this write comes wholly before or wholly after each of them, as
    /// under Linux's `inode_lock`. `None` sends the caller the locked way
    /// (see the trait's method). The third value is false for a light
    /// overwrite (`write_light`), which stamps nothing: mtime and ctime
    /// already equal the coarse clock.
    ///
    /// [`FileSystem::write_one_lock`]: crate::fs::FileSystem::write_one_lock
    pub(super) fn write_alone(
        &self,
        n: Node<'_>,
        off: Option<u64>,
        data: &[u8],
    ) -> Option<Result<(u64, usize, bool), Errno>> {
        // With a directory store the first write moves the data there: the
        // locked way.
        if data.is_empty() || self.store.is_some() {
            return None;
        }
        let i = self.node(n).ok()?;
        if self.light_overwrite
            && let Some(at) = off
            && let Some(done) = write_light(&i, at, data)
        {
            return Some(Ok((at, done, false)));
        }
        let mut st = wr(&i);
        let size = match st.kind() {
            Kind::Reg(RegFile::Pages(f)) => f.size,
            _ => return None,
        };
        if st.mode() & (S_ISUID | S_ISGID) != 0 {
            return None;
        }
        let at = off.unwrap_or(size);
        if at >= MAX_FILE_SIZE {
            return None;
        }
        Some(
            self.write_locked(&i, &mut st, at, data)
                .map(|n| (at, n, true)),
        )
    }

    /// The body of [`write_pages`](Self::write_pages), with the inode's
    /// state write-locked (`i`: the inode).
    fn write_locked(
        &self,
        i: &Inode,
        st: &mut WrGuard<'_>,
        off: u64,
        data: &[u8],
    ) -> Result<usize, Errno> {
        match *st.kind() {
            Kind::Reg(_) => {}
            Kind::Dir(_) => return Err(Errno::EISDIR),
            Kind::Symlink { .. } | Kind::Special { .. } => return Err(Errno::EINVAL),
        }
        let ix = i.file_index();
        // generic_write_checks: an empty write succeeds before any limit
        // and stamps nothing; then EFBIG at the limit, clipped below it.
        if data.is_empty() {
            return Ok(0);
        }
        if off >= MAX_FILE_SIZE {
            return Err(Errno::EFBIG);
        }
        let len = (data.len() as u64).min(MAX_FILE_SIZE - off) as usize;
        // file_update_time runs before the copy: even ENOSPC stamps
        // (checked on the host with a full size=8k mount).
        st.file_update_time();
        // With a directory store the data lives there from the first write.
        if self.store.is_some()
            && let Kind::Reg(f @ RegFile::Pages(_)) = st.kind_mut()
        {
            f.memfd(self, ix)?;
        }
        let f = match st.kind_mut() {
            Kind::Reg(RegFile::Pages(f)) => f,
            Kind::Reg(RegFile::Memfd(m)) => return m.write(self, off, &data[..len]),
            _ => return Err(Errno::EINVAL),
        };
        // At the first page the write lacks, the pages it lacks from there
        // on are counted against the limit at once, as many as fit; the
        // copy stops at the first missing page past those (Linux allocates
        // page by page and stops at the first that fails: the same bytes
        // get written). An overwrite of held pages counts nothing.
        let mut granted: Option<u64> = None;
        let mut done = 0usize;
        while done < len {
            let pos = off + done as u64;
            let (idx, po) = (pos / PAGE_SIZE, (pos % PAGE_SIZE) as usize);
            let chunk = (PAGE_SIZE as usize - po).min(len - done);
            let src = &data[done..done + chunk];
            if let Some(Page::Data(p)) = f.pages.get_mut(&idx) {
                if self.lockless_read {
                    // SAFETY: `po + chunk` is at most a page; lockless
                    // readers copy the page only through `racy` too.
                    unsafe { racy::copy(p.as_ptr().add(po), src.as_ptr(), chunk) };
                } else {
                    p[po..po + chunk].copy_from_slice(src);
                }
                done += chunk;
                continue;
            }
            let left = match granted {
                Some(g) => g,
                None => {
                    let last = (off + len as u64).div_ceil(PAGE_SIZE);
                    let missing = (last - idx) - f.pages.range(idx..last).count() as u64;
                    *granted.insert(self.reserve_pages_up_to(missing))
                }
            };
            // Pages held plus pages about to be: the file's size in pages
            // once this write is done.
            let pooled = f.pages.len() as u64 + left >= POOL_MIN_PAGES;
            // Written before it is published in the index (a release
            // store): a reader that finds it sees its bytes.
            let page = match f.pages.entry(idx) {
                Entry::Vacant(v) => {
                    if left == 0 {
                        break;
                    }
                    granted = Some(left - 1);
                    let b = PageBuf::with(pooled, po, src);
                    let p = b.as_ptr();
                    v.insert(Page::Data(b));
                    p
                }
                // Allocated by fallocate, never written.
                Entry::Occupied(mut o) => {
                    let b = PageBuf::with(pooled, po, src);
                    let p = b.as_ptr();
                    *o.get_mut() = Page::Data(b);
                    p
                }
            };
            if self.lockless_read {
                ix.set(idx, page);
            }
            done += chunk;
        }
        // All granted pages were used: the inode's lock kept the page map
        // as counted.
        debug_assert!(granted.is_none_or(|g| g == 0));
        if done == 0 {
            return Err(Errno::ENOSPC);
        }
        let end = off + done as u64;
        // (Held pages overwritten in the same tick as the last change: the
        // guard's drop finds nothing published changed and stores nothing.)
        f.size = f.size.max(end);
        Ok(done)
    }

    /// fallocate(2): allocates pages (extending the size unless
    /// `FALLOC_FL_KEEP_SIZE`), or punches a hole.
    pub(super) fn fallocate_pages(
        &self,
        n: Node<'_>,
        mode: u32,
        off: u64,
        len: u64,
    ) -> Result<(), Errno> {
        // vfs_fallocate's order: EINVAL, EOPNOTSUPP, file type, EFBIG; then
        // shmem_fallocate's own EOPNOTSUPP for the modes it lacks.
        if len == 0 {
            return Err(Errno::EINVAL);
        }
        let punch = mode & FALLOC_FL_PUNCH_HOLE != 0;
        let keep = mode & FALLOC_FL_KEEP_SIZE != 0;
        if mode & !FALLOC_KNOWN != 0 || (punch && !keep) {
            return Err(Errno::EOPNOTSUPP);
        }
        let i = self.node(n)?;
        let mut st = wr(&i);
        match *st.kind() {
            Kind::Reg(_) => {}
            Kind::Dir(_) => return Err(Errno::EISDIR),
            Kind::Symlink { .. } | Kind::Special { .. } => return Err(Errno::ENODEV),
        }
        let ix = i.file_index();
        let end = off
            .checked_add(len)
            .filter(|&e| e <= MAX_FILE_SIZE)
            .ok_or(Errno::EFBIG)?;
        if mode & !(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE) != 0 {
            return Err(Errno::EOPNOTSUPP);
        }
        // With a directory store an allocation moves the data there first
        // (its file system decides whether the range fits).
        if self.store.is_some()
            && !punch
            && let Kind::Reg(f @ RegFile::Pages(_)) = st.kind_mut()
        {
            f.memfd(self, ix)?;
        }
        if let Kind::Reg(RegFile::Memfd(m)) = st.kind() {
            if punch {
                m.punch(self, off, end)?;
            } else {
                let span = end.div_ceil(PAGE_SIZE) - off / PAGE_SIZE;
                if self.max_pages.is_some_and(|m| span > m) {
                    return Err(Errno::ENOSPC);
                }
                // The page map counts the missing pages first; the memfd
                // cannot tell them apart from allocated ones without
                // allocating, so the whole span is the bound here.
                if span > FALLOC_MAX_NEW_PAGES && self.store.is_none() {
                    return Err(Errno::ENOMEM);
                }
                m.allocate(self, keep, off, end)?;
            }
            st.file_update_time();
            return Ok(());
        }
        let Kind::Reg(RegFile::Pages(f)) = st.kind_mut() else {
            return Err(Errno::EINVAL);
        };
        if punch {
            self.punch(ix, f, off, end);
        } else {
            let (first, last) = (off / PAGE_SIZE, end.div_ceil(PAGE_SIZE));
            let span = last - first;
            if self.max_pages.is_some_and(|m| span > m) {
                return Err(Errno::ENOSPC);
            }
            let missing = span - f.pages.range(first..last).count() as u64;
            if !self.reserve_pages(missing) {
                return Err(Errno::ENOSPC);
            }
            if missing > FALLOC_MAX_NEW_PAGES {
                self.release_pages(missing);
                return Err(Errno::ENOMEM);
            }
            for idx in first..last {
                // Host: a page an earlier fallocate allocated becomes data
                // for SEEK_DATA (zeroed, uptodate); pages new to this call
                // stay unwritten.
                match f.pages.entry(idx) {
                    Entry::Vacant(v) => {
                        v.insert(Page::Falloc);
                    }
                    Entry::Occupied(mut o) => {
                        if let Page::Falloc = o.get() {
                            *o.get_mut() = Page::Zero;
                        }
                    }
                }
            }
            if !keep && end > f.size {
                f.size = end;
            }
        }
        st.file_update_time();
        Ok(())
    }

    /// `lseek` with `SEEK_DATA` / `SEEK_HOLE`, walked as Linux's
    /// `mapping_seek_hole_data` walks the page cache: page by page over
    /// the pages present, a written (or re-allocated) page being data and
    /// a freshly `fallocate`d one a hole.
    ///
    /// Linux computes the end of each page as a signed 64-bit offset; for
    /// the last page below 2^63 that end wraps to `i64::MIN`, which breaks
    /// its comparisons: `SEEK_DATA` that reaches data in that page finds
    /// none (`ENXIO`), and `SEEK_HOLE` that runs into it returns `i64::MIN`
    /// itself, which lseek(2) hands back as the result. Reproduced here:
    /// the result is then `i64::MIN as u64`.
    pub(super) fn seek_pages(&self, n: Node<'_>, off: u64, whence: Seek) -> Result<u64, Errno> {
        let i = self.node(n)?;
        let st = rd(&i);
        let f = match st.kind() {
            Kind::Reg(RegFile::Pages(f)) => f,
            Kind::Reg(RegFile::Memfd(m)) => return m.seek(off, whence),
            _ => return Err(Errno::EINVAL),
        };
        let seek_data = whence == Seek::Data;
        // A negative `loff_t` (`shmem_file_llseek`).
        if off > i64::MAX as u64 {
            return Err(Errno::ENXIO);
        }
        let end = f.size as i64;
        let mut start = off as i64;
        if end <= start {
            return Err(Errno::ENXIO);
        }
        let max = (end as u64 - 1) / PAGE_SIZE;
        let mut found = false;
        for (&idx, page) in f.pages.range(off / PAGE_SIZE..=max) {
            let pos = (idx * PAGE_SIZE) as i64;
            if start < pos {
                if !seek_data {
                    found = true;
                    break;
                }
                start = pos;
            }
            // The page's end, rounded as a u64 and stored back into a
            // signed offset: `i64::MIN` for the last page.
            let next = (idx * PAGE_SIZE + PAGE_SIZE) as i64;
            let uptodate = matches!(page, Page::Data(_) | Page::Zero);
            start = match (uptodate, seek_data) {
                (true, true) | (false, false) => start,
                _ => next,
            };
            if start < next {
                found = true;
                break;
            }
            if start >= end {
                break;
            }
        }
        if !found && seek_data {
            return Err(Errno::ENXIO);
        }
        Ok(if start > end { end } else { start } as u64)
    }
}

/// `FastPaths::lockless_read`: [`Tmpfs::read_pages`] without the inode's
/// lock, or `None` where the lock must answer (nothing published: a
/// memfd-backed file, a writer that kept changing the attributes; not a
/// regular file; the data moved to a memfd meanwhile). No locked
/// instruction: the size from the published attributes (a sequence
/// count), the pages from the index under the epoch pin, the bytes copied
/// by `racy::copy`.
///
/// What a read racing a write may see is what Linux's tmpfs gives: the
/// size and the pages each as of some moment, no atomicity across them; a
/// page overwritten during the copy may give some old and some new bytes
/// (Linux copies a page with a plain `memcpy` while a writer may be
/// writing it). Bytes written by a call that returned before this one
/// began are seen: the writer stores them before it publishes the
/// attributes (release) and this read's first load of those is an
/// acquire; a page added is stored in the index after its bytes. A page a
/// truncation or hole punch takes away is freed a grace period after it
/// left the index, and this read is pinned from before its first index
/// load to after its last copy. Like Linux's `shmem_file_read_iter`,
/// which reads the size again after it found a page, a read that found a
/// hole reads the size again and returns no bytes past a new, smaller end
/// (a truncation it raced).
#[inline]
fn read_lockless(i: &Inode, off: u64, buf: &mut [u8]) -> Option<Result<usize, Errno>> {
    let (mode, size) = i.size_snapshot()?;
    if mode & S_IFMT != S_IFREG {
        return None;
    }
    let ix = i.index()?;
    if off >= size {
        return Some(Ok(0));
    }
    let n = (buf.len() as u64).min(size - off) as usize;
    let _pin = crate::reclaim::pin_with(true);
    let mut hole = false;
    let mut done = 0usize;
    while done < n {
        let pos = off + done as u64;
        let (idx, po) = (pos / PAGE_SIZE, (pos % PAGE_SIZE) as usize);
        let chunk = (PAGE_SIZE as usize - po).min(n - done);
        match ix.get(idx) {
            // SAFETY: the page is live while pinned (see above) and
            // `po + chunk` is at most a page; `buf` is this call's alone
            // for `done + chunk <= n <= buf.len()`; the writers of the page
            // write it only through `racy`.
            Found::Page(p) => unsafe {
                racy::copy(buf.as_mut_ptr().add(done), p.add(po), chunk);
            },
            Found::Hole => {
                buf[done..done + chunk].fill(0);
                hole = true;
            }
            Found::Gone => return None,
        }
        done += chunk;
    }
    if hole {
        let (_, now) = i.size_snapshot()?;
        return Some(Ok(n.min(now.saturating_sub(off) as usize)));
    }
    Some(Ok(n))
}

/// `FastPaths::light_overwrite`: a write of `data` at `off` without the
/// inode's lock, or `None` where the lock must decide (and nothing was
/// written). Under the attribute cell's claim (`AttrCell::try_claim`; a
/// writer under the lock holds the same claim from its lock to its
/// unlock, so none runs meanwhile) it checks what a locked write would
/// change and goes on only if that is nothing: no set-ID bit to drop, no
/// size to extend, no page to allocate (every page in the index), and no
/// time to stamp (`file_update_time` would find mtime and ctime equal to
/// the coarse clock, the ctime not queried). So the write is the copy
/// alone, as a locked overwrite in the same clock tick. The bytes go
/// through `racy::copy`, as a locked writer's do: lockless readers and
/// readers under the read lock (which a claim does not exclude) copy the
/// same pages. The claim is let go with a plain store, so no locked
/// instruction follows the copy.
#[inline]
fn write_light(i: &Inode, off: u64, data: &[u8]) -> Option<usize> {
    let end = off.checked_add(data.len() as u64)?;
    let ix = i.index()?;
    let s = i.attrs.try_claim()?;
    let ok = pack(coarse_mg()).is_some_and(|now| i.attrs.quiet_overwrite(end, now))
        && (off / PAGE_SIZE..end.div_ceil(PAGE_SIZE))
            .all(|idx| matches!(ix.get(idx), Found::Page(_)));
    if ok {
        let mut done = 0usize;
        while done < data.len() {
            let pos = off + done as u64;
            let (idx, po) = (pos / PAGE_SIZE, (pos % PAGE_SIZE) as usize);
            let chunk = (PAGE_SIZE as usize - po).min(data.len() - done);
            if let Found::Page(p) = ix.get(idx) {
                // SAFETY: the page is in the index and stays there (and
                // allocated) while the claim is held: only a writer under
                // the lock takes pages out, and it holds the claim then.
                // `po + chunk` is at most a page; `data` has `done + chunk`
                // bytes; every other access to the page's bytes while this
                // copy runs goes through `racy`. The index keeps the `*mut`
                // the page was made with (`PageBuf::as_ptr`), handed out as
                // `*const`.
                unsafe { racy::copy(p.cast_mut().add(po), data.as_ptr().add(done), chunk) };
            }
            done += chunk;
        }
    }
    i.attrs.release(s);
    ok.then_some(data.len())
}

/// The body of [`Tmpfs::read_pages`], with the inode's state read-locked
/// (`shared`: the pages' bytes are copied through [`racy::copy`], since a
/// light writer may write them meanwhile: `FastPaths::light_overwrite`).
fn read_locked(st: &State, off: u64, buf: &mut [u8], shared: bool) -> Result<usize, Errno> {
    let f = match st.kind() {
        Kind::Reg(RegFile::Pages(f)) => f,
        Kind::Reg(RegFile::Memfd(m)) => return m.read(off, buf),
        Kind::Dir(_) => return Err(Errno::EISDIR),
        Kind::Symlink { .. } | Kind::Special { .. } => return Err(Errno::EINVAL),
    };
    if off >= f.size {
        return Ok(0);
    }
    let n = (buf.len() as u64).min(f.size - off) as usize;
    let mut done = 0usize;
    while done < n {
        let pos = off + done as u64;
        let (idx, po) = (pos / PAGE_SIZE, (pos % PAGE_SIZE) as usize);
        let chunk = (PAGE_SIZE as usize - po).min(n - done);
        let dst = &mut buf[done..done + chunk];
        match f.pages.get(&idx) {
            // SAFETY: `po + chunk` is at most a page and `dst` is `chunk`
            // bytes of this call's buffer; the page's writers write it only
            // through `racy` while readers may copy it.
            Some(Page::Data(p)) if shared => unsafe {
                racy::copy(dst.as_mut_ptr(), p.as_ptr().add(po), chunk);
            },
            Some(Page::Data(p)) => dst.copy_from_slice(&p[po..po + chunk]),
            _ => dst.fill(0),
        }
        done += chunk;
    }
    Ok(n)
}
