//! Where a large file's pages live: 2 MiB chunks of anonymous memory the
//! kernel may back with one transparent huge page each (`MADV_HUGEPAGE`),
//! cut into 512 page slots.
//!
//! Why: a page of file data held in its own heap allocation costs the
//! process one page fault the first time it is touched, and a bulk write of
//! fresh pages is then dominated by faults (a 512 MiB `dd` under the shim:
//! 131,072 minor faults, 0.2 s of system time, where the host's tmpfs
//! allocates its pages in the kernel without a fault). A huge page is one
//! fault per 512 pages. A small file's pages stay on the heap
//! ([`PageBuf::Heap`]): a chunk touched once may take 2 MiB of memory,
//! which a file of a few pages should not cost; a file takes pages from
//! the pool once it holds [`POOL_MIN_PAGES`].
//!
//! A slot freed (truncation, hole punch, unlink) goes back to its chunk's
//! free list for the next allocation; a chunk whose slots are all free is
//! unmapped. Memory of a partly used chunk stays with the process, as a
//! heap keeps freed memory below its top.
//!
//! The chunks are mapped with raw system calls: under the LD_PRELOAD shim
//! libc's `mmap` is the shim's own.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
// A process-wide static needs a const constructor: std's mutex (held for a
// few instructions, no lock is taken under it), not the modelled kind.
use std::sync::Mutex;

use super::PAGE_SIZE;

/// One page of data.
pub(super) type PageBytes = [u8; PAGE_SIZE as usize];

const PAGE: usize = PAGE_SIZE as usize;
/// A chunk: the size of an x86-64 (and arm64 4K-granule) huge page.
const CHUNK: usize = 2 << 20;
const SLOTS: usize = CHUNK / PAGE;
/// Pages a file holds (counting the ones a write is about to add) from
/// which its new pages come from the pool: 1 MiB.
pub(super) const POOL_MIN_PAGES: u64 = 256;

/// A written page's memory: its own heap allocation, or a pool slot.
pub(super) enum PageBuf {
    Heap(HeapPage),
    Pool(PoolPage),
}

impl PageBuf {
    /// A page holding `src` at `at` and zeros elsewhere, from the pool when
    /// `pooled` (and the pool can map a chunk), else from the heap. Bytes
    /// the copy overwrites are not zeroed first.
    pub(super) fn with(pooled: bool, at: usize, src: &[u8]) -> PageBuf {
        let whole = at == 0 && src.len() == PAGE;
        if pooled && let Some(mut p) = PoolPage::alloc() {
            // A reused slot holds an earlier page's bytes.
            if !whole {
                p[..at].fill(0);
                p[at + src.len()..].fill(0);
            }
            p[at..at + src.len()].copy_from_slice(src);
            return PageBuf::Pool(p);
        }
        if whole {
            // One allocation and one copy, no zeroing.
            let b = HeapPage::alloc(false);
            // SAFETY: a fresh allocation of one page, written whole here
            // before anything reads it; `src` is one page.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), b.0.as_ptr().cast(), PAGE) };
            return PageBuf::Heap(b);
        }
        let mut b = HeapPage::alloc(true);
        b[at..at + src.len()].copy_from_slice(src);
        PageBuf::Heap(b)
    }

    /// The page's first byte, for copies that may race a lockless reader
    /// (`racy`): derived from the allocation's own pointer, not from a
    /// reference, so that no reference to the bytes is live meanwhile.
    #[inline]
    pub(super) fn as_ptr(&self) -> *mut u8 {
        match self {
            PageBuf::Heap(b) => b.0.as_ptr().cast(),
            PageBuf::Pool(p) => p.0.as_ptr().cast(),
        }
    }
}

impl Deref for PageBuf {
    type Target = PageBytes;
    fn deref(&self) -> &PageBytes {
        match self {
            PageBuf::Heap(b) => b,
            PageBuf::Pool(p) => p,
        }
    }
}

impl DerefMut for PageBuf {
    fn deref_mut(&mut self) -> &mut PageBytes {
        match self {
            PageBuf::Heap(b) => b,
            PageBuf::Pool(p) => p,
        }
    }
}

/// The layout of a heap page: aligned to a cache line, so that the page
/// index can keep a height in a page pointer's low bits and copies run on
/// whole lines.
const HEAP_LAYOUT: std::alloc::Layout = match std::alloc::Layout::from_size_align(PAGE, 64) {
    Ok(l) => l,
    Err(_) => panic!("page layout"),
};

/// One page on the heap, owned (a `Box` that keeps its pointer raw: a
/// lockless reader may copy from it while the owner writes it through
/// `racy`, which a `Box`'s uniqueness would forbid).
pub(super) struct HeapPage(NonNull<PageBytes>);

// SAFETY: a `HeapPage` is the only owner of its allocation, like a `Box`.
unsafe impl Send for HeapPage {}
// SAFETY: as for `Send`: shared access only reads through `&self`.
unsafe impl Sync for HeapPage {}

impl HeapPage {
    /// A fresh page, zeroed if `zeroed`; aborts on allocation failure as
    /// `Box::new` does.
    fn alloc(zeroed: bool) -> HeapPage {
        // SAFETY: the layout's size is not zero.
        let p = unsafe {
            if zeroed {
                std::alloc::alloc_zeroed(HEAP_LAYOUT)
            } else {
                std::alloc::alloc(HEAP_LAYOUT)
            }
        };
        match NonNull::new(p.cast::<PageBytes>()) {
            Some(p) => HeapPage(p),
            None => std::alloc::handle_alloc_error(HEAP_LAYOUT),
        }
    }
}

impl Deref for HeapPage {
    type Target = PageBytes;
    fn deref(&self) -> &PageBytes {
        // SAFETY: a live allocation of one page owned by this handle; a
        // fresh unzeroed one is read only after its owner wrote all of it
        // (`PageBuf::with` copies a whole page into it first).
        unsafe { self.0.as_ref() }
    }
}

impl DerefMut for HeapPage {
    fn deref_mut(&mut self) -> &mut PageBytes {
        // SAFETY: as in `deref`; `&mut self` makes this the only access.
        unsafe { self.0.as_mut() }
    }
}

impl Drop for HeapPage {
    fn drop(&mut self) {
        // SAFETY: allocated in `alloc` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.0.as_ptr().cast(), HEAP_LAYOUT) };
    }
}

/// One slot of a pool chunk, owned: freed back to the pool on drop.
pub(super) struct PoolPage(NonNull<PageBytes>);

// SAFETY: a `PoolPage` is the only handle to its slot (the pool hands a
// slot out once until it is dropped), like a `Box`; the pool itself is
// behind a mutex.
unsafe impl Send for PoolPage {}
// SAFETY: as for `Send`: shared access only reads through `&self`.
unsafe impl Sync for PoolPage {}

impl PoolPage {
    fn alloc() -> Option<PoolPage> {
        let addr = POOL.lock().unwrap_or_else(|e| e.into_inner()).alloc()?;
        NonNull::new(addr as *mut PageBytes).map(PoolPage)
    }
}

impl Deref for PoolPage {
    type Target = PageBytes;
    fn deref(&self) -> &PageBytes {
        // SAFETY: the slot is mapped read-write while this handle lives
        // (a chunk is unmapped only once all its slots are free), aligned
        // to a page, every byte initialised (anonymous memory starts as
        // zeros, and is written only through such handles), and no other
        // handle to it exists.
        unsafe { self.0.as_ref() }
    }
}

impl DerefMut for PoolPage {
    fn deref_mut(&mut self) -> &mut PageBytes {
        // SAFETY: as in `deref`; `&mut self` makes this the only access.
        unsafe { self.0.as_mut() }
    }
}

impl Drop for PoolPage {
    fn drop(&mut self) {
        POOL.lock()
            .unwrap_or_else(|e| e.into_inner())
            .free(self.0.as_ptr() as usize);
    }
}

/// One chunk's bookkeeping.
struct Chunk {
    /// Slots never handed out: `fresh..SLOTS`.
    fresh: u16,
    /// Slots handed out and given back, to be reused first.
    free: Vec<u16>,
    /// Slots handed out now.
    used: u16,
}

impl Chunk {
    fn take(&mut self) -> Option<u16> {
        let s = self.free.pop().or_else(|| {
            ((self.fresh as usize) < SLOTS).then(|| {
                self.fresh += 1;
                self.fresh - 1
            })
        })?;
        self.used += 1;
        Some(s)
    }

    fn is_full(&self) -> bool {
        self.free.is_empty() && self.fresh as usize == SLOTS
    }
}

struct Pool {
    /// Chunks by base address.
    chunks: Option<HashMap<usize, Chunk>>,
    /// Bases of chunks that had a free slot when last seen; checked when
    /// taken (a chunk may have filled up or been unmapped since).
    avail: Vec<usize>,
}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    chunks: None,
    avail: Vec::new(),
});

impl Pool {
    /// A free slot's address, mapping a new chunk when none is free; `None`
    /// when the kernel refuses the mapping.
    fn alloc(&mut self) -> Option<usize> {
        let chunks = self.chunks.get_or_insert_with(HashMap::new);
        // Every chunk listed in `avail` and still mapped has a free slot: one
        // that fills up leaves the list at once.
        while let Some(&base) = self.avail.last() {
            if let Some(c) = chunks.get_mut(&base)
                && let Some(s) = c.take()
            {
                if c.is_full() {
                    self.avail.pop();
                }
                return Some(base + s as usize * PAGE);
            }
            self.avail.pop();
        }
        let base = map_chunk()?;
        chunks.insert(
            base,
            Chunk {
                fresh: 1,
                free: Vec::new(),
                used: 1,
            },
        );
        self.avail.push(base);
        Some(base)
    }

    fn free(&mut self, addr: usize) {
        let base = addr & !(CHUNK - 1);
        let Some(chunks) = self.chunks.as_mut() else {
            return;
        };
        let Some(c) = chunks.get_mut(&base) else {
            return;
        };
        let was_full = c.is_full();
        c.used -= 1;
        if c.used == 0 {
            chunks.remove(&base);
            unmap(base, CHUNK);
            return;
        }
        c.free.push(((addr - base) / PAGE) as u16);
        if was_full {
            self.avail.push(base);
        }
    }
}

#[cfg(not(any(loom, shuttle)))]
thread_local! {
    /// The pool's guard held across a `fork` by the forking thread.
    static FORK_GUARD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, Pool>>> =
        const { std::cell::RefCell::new(None) };
}

/// Takes the pool's lock on the forking thread, so the child never
/// inherits it held by a thread it does not have (a page freed outside a
/// call the shim's fork gate waits for: a thread's handle dropped at its
/// exit, closing an unlinked file). [`crate::pool::before_fork`] calls it.
#[cfg(not(any(loom, shuttle)))]
pub(crate) fn before_fork() {
    let g = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let _ = FORK_GUARD.try_with(|f| *f.borrow_mut() = Some(g));
}

/// Releases what [`before_fork`] took (parent and child, same thread).
#[cfg(not(any(loom, shuttle)))]
pub(crate) fn after_fork() {
    let _ = FORK_GUARD.try_with(|f| f.borrow_mut().take());
}

/// Maps a 2 MiB-aligned chunk of `CHUNK` bytes and asks for a huge page.
fn map_chunk() -> Option<usize> {
    // Twice the size, then the unaligned head and tail unmapped.
    // SAFETY: an anonymous private mapping at an address the kernel picks;
    // no existing memory is touched.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mmap,
            std::ptr::null_mut::<libc::c_void>(),
            2 * CHUNK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1i32,
            0i64,
        )
    };
    if r < 0 {
        return None;
    }
    let start = r as usize;
    let base = (start + CHUNK - 1) & !(CHUNK - 1);
    if base > start {
        unmap(start, base - start);
    }
    let tail = start + 2 * CHUNK - (base + CHUNK);
    if tail > 0 {
        unmap(base + CHUNK, tail);
    }
    // Advice only: without huge pages the chunk still works, page by page.
    // SAFETY: `base..base + CHUNK` is this pool's own mapping.
    unsafe { libc::syscall(libc::SYS_madvise, base, CHUNK, libc::MADV_HUGEPAGE) };
    Some(base)
}

fn unmap(addr: usize, len: usize) {
    // SAFETY: `addr..addr + len` is a range of this pool's mappings that no
    // handle points into any more.
    unsafe { libc::syscall(libc::SYS_munmap, addr, len) };
}
