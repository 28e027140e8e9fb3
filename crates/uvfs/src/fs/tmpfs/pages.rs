//! Regular files' pages (Linux's `mm/shmem.c` page cache side): the page
//! map, truncation and hole punching on it. Every page held counts against
//! the space limit and as 8 blocks. Reading and writing them through the
//! inode is [`io`](super::io)'s. A file once mapped keeps its data in a
//! kernel memfd instead ([`memfd`](super::memfd)): [`RegFile`] is either.

use std::collections::BTreeMap;

use super::memfd::MemFile;
use super::pageindex::{PageIndex, retire_nodes};
use super::pool::PageBuf;
use super::racy;
use super::{PAGE_SIZE, Tmpfs};
use crate::errno::Errno;

/// `fallocate` modes Linux's `vfs_fallocate` knows (`FALLOC_FL_SUPPORTED_MASK`
/// in 6.18: keep size, punch hole, no-hide-stale, collapse, zero, insert,
/// unshare, write zeroes); other bits are `EOPNOTSUPP` before anything else.
pub(super) const FALLOC_KNOWN: u32 = 0xff;
/// Pages one `fallocate` may add: beyond this the call fails with `ENOMEM`
/// (what Linux reports when memory runs out) instead of exhausting memory
/// on bookkeeping (64 GiB per call).
pub(super) const FALLOC_MAX_NEW_PAGES: u64 = 1 << 24;

/// One page of a regular file.
pub(super) enum Page {
    /// Allocated by `fallocate`, never written: reads as zeros, is a hole
    /// for `SEEK_DATA`/`SEEK_HOLE`.
    Falloc,
    /// Written data (on the heap, or for a large file in the page pool:
    /// [`pool`](super::pool)).
    Data(PageBuf),
    /// Zeros that count as data: a page `fallocate`d again after an earlier
    /// `fallocate` allocated it (Linux's `SGP_FALLOC` zeroes such a folio and
    /// marks it uptodate). Holds no memory until written.
    Zero,
}

/// A regular file's contents held by uvfs: its size and page map.
#[derive(Default)]
pub(super) struct PageFile {
    pub(super) size: u64,
    pub(super) pages: BTreeMap<u64, Page>,
}

/// A regular file's contents: uvfs's page map, or (once the file was
/// mapped) a kernel memfd ([`memfd`](super::memfd)).
pub(super) enum RegFile {
    Pages(PageFile),
    Memfd(Box<MemFile>),
}

impl Default for RegFile {
    fn default() -> Self {
        RegFile::Pages(PageFile::default())
    }
}

impl RegFile {
    /// Pages held against the space limit.
    pub(super) fn pages_held(&self) -> u64 {
        match self {
            RegFile::Pages(f) => f.pages.len() as u64,
            RegFile::Memfd(m) => m.pages_held(),
        }
    }

    /// Size and 512-byte blocks (8 per page held).
    pub(super) fn size_blocks(&self, fs: &Tmpfs) -> (u64, u64) {
        match self {
            RegFile::Pages(f) => (f.size, f.pages.len() as u64 * (PAGE_SIZE / 512)),
            RegFile::Memfd(m) => m.size_blocks(fs),
        }
    }

    /// The memfd holding the data, made from the page map on first use
    /// (the page map's memory is freed then; lockless readers, finding
    /// the index `ix` gone, ask the lock from then on).
    pub(super) fn memfd(&mut self, fs: &Tmpfs, ix: &PageIndex) -> Result<&MemFile, Errno> {
        if let RegFile::Pages(f) = self {
            let m = RegFile::Memfd(Box::new(f.to_memfd(fs)?));
            if let RegFile::Pages(old) = std::mem::replace(self, m) {
                fs.drop_page_map(ix, old.pages, true);
            }
        }
        match self {
            RegFile::Memfd(m) => Ok(m),
            RegFile::Pages(_) => Err(Errno::ENODEV),
        }
    }
}

impl PageFile {
    /// A memfd holding these bytes, allocated-but-unwritten pages and
    /// re-allocated zero pages as the page map has them; the pages stay
    /// charged as they were.
    fn to_memfd(&self, fs: &Tmpfs) -> Result<MemFile, Errno> {
        let m = MemFile::new(fs, self.pages.len() as u64)?;
        // The size first: a truncation to the size (even the same one)
        // would free the pages allocated past it.
        m.ftruncate(self.size)?;
        for (&idx, page) in &self.pages {
            let pos = idx * PAGE_SIZE;
            match page {
                Page::Data(p) => {
                    // A written page lies below the size (a write extends
                    // it); writing its part below the size allocates it.
                    let n = self.size.saturating_sub(pos).min(PAGE_SIZE) as usize;
                    m.pwrite_all(&p[..n], pos)?;
                }
                Page::Falloc => m.preallocate(pos)?,
                Page::Zero => {
                    m.preallocate(pos)?;
                    m.preallocate(pos)?;
                }
            }
        }
        Ok(m)
    }
}

/// Frees pages that left the page index once no reader pinned now can
/// still copy from them.
fn retire_pages(bufs: Vec<PageBuf>) {
    if bufs.is_empty() {
        return;
    }
    let b = std::ptr::NonNull::from(Box::leak(Box::new(bufs)));
    // SAFETY: from a `Box` (`leak` gives its pointer), the pages taken out
    // of the index by the caller (unreachable for new readers), handed over
    // once.
    unsafe { crate::reclaim::defer_drop_box(b) };
}

impl Tmpfs {
    /// Sets a regular file's size, freeing pages past it; whether the
    /// change stamps mtime and ctime.
    pub(super) fn set_size(
        &self,
        ix: &PageIndex,
        f: &mut RegFile,
        size: u64,
    ) -> Result<bool, Errno> {
        let f = match f {
            RegFile::Pages(f) => f,
            RegFile::Memfd(m) => return m.set_size(self, size),
        };
        // Linux frees pages past the new size even when it equals
        // the old one (preallocated KEEP_SIZE pages).
        // `shmem_setattr` stamps mtime and ctime when the size
        // changes, and `shmem_truncate_range` (run when shrinking or
        // keeping the size of a file that holds pages) stamps them
        // too; ftruncate and O_TRUNC also ask for them explicitly
        // (`mtime`), truncate(2) does not. Host: truncate 0 -> 0 of
        // an empty file stamps nothing, 6 -> 6 stamps both.
        let truncates = size <= f.size && !f.pages.is_empty();
        if size <= f.size {
            self.truncate_pages(ix, f, size);
        }
        let old = std::mem::replace(&mut f.size, size);
        Ok(old != size || truncates)
    }

    /// Frees pages from `from` (a byte offset) to the end, zeroing the tail
    /// of a partial page (`shmem_truncate_range(from, -1)`).
    fn truncate_pages(&self, ix: &PageIndex, f: &mut PageFile, from: u64) {
        let first_whole = from.div_ceil(PAGE_SIZE);
        let gone = f.pages.split_off(&first_whole);
        self.release_pages(gone.len() as u64);
        if f.pages.is_empty() {
            self.drop_page_map(ix, gone, false);
        } else {
            self.drop_pages(ix, gone);
        }
        if !from.is_multiple_of(PAGE_SIZE)
            && let Some(Page::Data(p)) = f.pages.get_mut(&(from / PAGE_SIZE))
        {
            self.zero_in(p, (from % PAGE_SIZE) as usize, PAGE_SIZE as usize);
        }
    }

    /// Zeroes bytes `from..to` of a held page, which lockless readers may
    /// be copying (`FastPaths::lockless_read`).
    fn zero_in(&self, p: &mut PageBuf, from: usize, to: usize) {
        if self.lockless_read {
            // SAFETY: `from..to` lies in the page (`to` at most a page);
            // readers copy it only through `racy` too.
            unsafe { racy::zero(p.as_ptr().add(from), to - from) };
        } else {
            p[from..to].fill(0);
        }
    }

    /// Lets go of pages taken out of the page map (`(idx, page)`): with
    /// `FastPaths::lockless_read`, out of the index first, then freed
    /// together after a grace period (one retirement for the lot, so a
    /// truncation of a large file costs one, not one per page).
    fn drop_pages(&self, ix: &PageIndex, pages: impl IntoIterator<Item = (u64, Page)>) {
        if !self.lockless_read {
            return;
        }
        let mut bufs = Vec::new();
        for (idx, page) in pages {
            if let Page::Data(p) = page {
                ix.set(idx, std::ptr::null_mut());
                bufs.push(p);
            }
        }
        retire_pages(bufs);
    }

    /// Lets go of a whole page map taken out of a file (truncated to its
    /// first page boundary, moved to a memfd, evicted), and of the index's
    /// nodes: the index is left empty, or gone (`gone`: readers ask the
    /// lock). The caller gives back the pages' count.
    pub(super) fn drop_page_map(&self, ix: &PageIndex, pages: BTreeMap<u64, Page>, gone: bool) {
        if !self.lockless_read {
            return;
        }
        retire_nodes(ix.detach(gone));
        let bufs = pages
            .into_values()
            .filter_map(|p| match p {
                Page::Data(b) => Some(b),
                Page::Falloc | Page::Zero => None,
            })
            .collect();
        retire_pages(bufs);
    }

    /// Drops a regular file's contents (the inode is freed; the caller
    /// gives back [`RegFile::pages_held`]).
    pub(super) fn clear_file(&self, ix: &PageIndex, f: &mut RegFile) {
        if let RegFile::Pages(old) = std::mem::take(f) {
            self.drop_page_map(ix, old.pages, false);
        }
    }

    /// Punches `[off, end)`: whole pages freed, partial ones zeroed.
    pub(super) fn punch(&self, ix: &PageIndex, f: &mut PageFile, off: u64, end: u64) {
        let first_whole = off.div_ceil(PAGE_SIZE);
        let end_whole = end / PAGE_SIZE;
        if first_whole < end_whole {
            let keys: Vec<u64> = f
                .pages
                .range(first_whole..end_whole)
                .map(|(&k, _)| k)
                .collect();
            let gone: Vec<(u64, Page)> = keys
                .iter()
                .filter_map(|&k| Some((k, f.pages.remove(&k)?)))
                .collect();
            self.drop_pages(ix, gone);
            self.release_pages(keys.len() as u64);
        }
        let mut zero = |idx: u64, from: u64, to: u64| {
            if let Some(Page::Data(p)) = f.pages.get_mut(&idx) {
                self.zero_in(p, from as usize, to as usize);
            }
        };
        let (si, so) = (off / PAGE_SIZE, off % PAGE_SIZE);
        let (ei, eo) = (end / PAGE_SIZE, end % PAGE_SIZE);
        if si == ei {
            zero(si, so, eo);
        } else {
            if so != 0 {
                zero(si, so, PAGE_SIZE);
            }
            if eo != 0 {
                zero(ei, 0, eo);
            }
        }
    }
}
