//! A regular file's pages for readers without the inode's lock
//! (`FastPaths::lockless_read`): a radix tree (Linux's xarray, reduced)
//! from page number to the page's bytes, beside the page map
//! ([`pages`](super::pages)) that stays the owner of every page.
//!
//! Writers change it only under the inode's write lock, so there is one
//! writer at a time and every store is a plain atomic store (no
//! read-modify-write); readers load it under the epoch pin
//! ([`reclaim`](crate::reclaim)). The protocol:
//! - A page goes in after its bytes are written (a release store of its
//!   pointer into its slot); a reader's acquire load of the slot sees them.
//! - A page comes out (truncation, hole punch) by a store of null into its
//!   slot, and only then is it retired: freed after a grace period, so a
//!   reader that loaded the pointer before the store, being pinned, still
//!   reads live memory.
//! - The tree only grows while the file keeps its pages: a new root takes
//!   the old one as its first child (a reader that loaded the old root
//!   walks a tree still valid below the old height), and interior nodes
//!   stay until the whole tree is detached ([`detach`]) and its nodes
//!   retired: when the data moves to a memfd (the index is then marked
//!   [`GONE`]: readers ask the lock) or the inode is evicted.
//!
//! The root word holds the top node's address and the tree's height in its
//! low six bits (nodes are 64-byte aligned). Height 0 is a file whose only
//! page is page 0: the root is that page itself (no node: a one-page file
//! costs nothing here).
//!
//! The tree is written once for two sets of atomics, as
//! [`published`](super::published)'s cell is: std's for tmpfs (also under
//! loom: the inode's lock is unmodelled) and loom's for its own models
//! (`pageindex/loom_tests.rs`).
//!
//! [`detach`]: PageIndex::detach

/// The root word of an index whose file moved to a memfd: readers must
/// ask the lock (height 1, no node: never a real root).
const GONE: usize = 1;
/// The height's bits in the root word.
const HEIGHT: usize = 63;

/// What a reader finds at a page number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// The page's bytes (valid while the reader stays pinned).
    Page(*const u8),
    /// No page: zeros (a hole, a page not yet written, past the end).
    Hole,
    /// The file's data left the page map: ask the inode's lock.
    Gone,
}

macro_rules! page_index {
    ($bits:expr) => {
        /// Slot bits per level.
        const BITS: u32 = $bits;
        const FAN: usize = 1 << BITS;

        /// One node: `FAN` slots, each a child node (above the last level)
        /// or a page's bytes (at it), or null.
        #[repr(align(64))]
        pub(crate) struct Node {
            slots: [AtomicPtr<u8>; FAN],
        }

        impl Node {
            fn boxed() -> *mut Node {
                Box::into_raw(Box::new(Node {
                    slots: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
                }))
            }
        }

        /// The index of one file's pages (one word while the file is
        /// empty or holds only page 0).
        pub(crate) struct PageIndex {
            root: AtomicUsize,
        }

        /// Whether a tree of `height` reaches page `idx`.
        fn fits(height: usize, idx: u64) -> bool {
            let span = height as u32 * BITS;
            span >= 64 || idx >> span == 0
        }

        fn slot_of(idx: u64, level: usize) -> usize {
            ((idx >> (level as u32 * BITS)) as usize) & (FAN - 1)
        }

        impl PageIndex {
            pub(crate) fn new() -> PageIndex {
                PageIndex {
                    root: AtomicUsize::new(0),
                }
            }

            /// The page at `idx`, for a reader without the inode's lock.
            ///
            /// The caller stays pinned (`reclaim::pin_with`) from before
            /// this call until it is done with the page's bytes.
            #[inline]
            pub(crate) fn get(&self, idx: u64) -> Found {
                let r = self.root.load(Ordering::Acquire);
                if r == GONE {
                    return Found::Gone;
                }
                if r == 0 {
                    return Found::Hole;
                }
                let mut level = r & HEIGHT;
                let mut p = (r & !HEIGHT) as *mut u8;
                if level == 0 {
                    return if idx == 0 {
                        Found::Page(p)
                    } else {
                        Found::Hole
                    };
                }
                if !fits(level, idx) {
                    return Found::Hole;
                }
                loop {
                    level -= 1;
                    // SAFETY: `p` is a node of this tree: reachable when
                    // loaded (acquire: its slots' initial nulls and later
                    // stores are visible), and nodes are freed only a
                    // grace period after the tree is detached, which the
                    // caller's pin outlasts.
                    let node = unsafe { &*(p as *const Node) };
                    p = node.slots[slot_of(idx, level)].load(Ordering::Acquire);
                    if p.is_null() {
                        return Found::Hole;
                    }
                    if level == 0 {
                        return Found::Page(p);
                    }
                }
            }

            /// Sets page `idx` to `page` (null: no page). Only under the
            /// inode's write lock; `page`'s bytes are written before.
            pub(crate) fn set(&self, idx: u64, page: *mut u8) {
                let mut r = self.root.load(Ordering::Relaxed);
                debug_assert_ne!(r, GONE, "a page set in the index of a memfd file");
                if r == GONE {
                    return;
                }
                if r == 0 {
                    if page.is_null() {
                        return;
                    }
                    if idx == 0 {
                        self.root.store(page as usize, Ordering::Release);
                        return;
                    }
                    r = Node::boxed() as usize | 1;
                    self.root.store(r, Ordering::Release);
                }
                let mut height = r & HEIGHT;
                if height == 0 && idx == 0 {
                    // Page 0 alone, replaced or removed.
                    self.root.store(page as usize, Ordering::Release);
                    return;
                }
                if !fits(height, idx) {
                    if page.is_null() {
                        return;
                    }
                    // Grow: each new root takes the old tree (or page 0)
                    // as its first child, initialised before it is stored.
                    while !fits(height, idx) {
                        let n = Node::boxed();
                        // SAFETY: `n` is fresh and not yet shared.
                        unsafe { &*n }.slots[0].store((r & !HEIGHT) as *mut u8, Ordering::Relaxed);
                        height += 1;
                        r = n as usize | height;
                    }
                    self.root.store(r, Ordering::Release);
                }
                let mut node = (r & !HEIGHT) as *mut Node;
                for level in (1..height).rev() {
                    // SAFETY: a node of this tree, which only this writer
                    // changes, and frees only once detached.
                    let slot = &unsafe { &*node }.slots[slot_of(idx, level)];
                    let mut child = slot.load(Ordering::Relaxed);
                    if child.is_null() {
                        if page.is_null() {
                            return;
                        }
                        child = Node::boxed().cast();
                        slot.store(child, Ordering::Release);
                    }
                    node = child.cast();
                }
                // SAFETY: as above.
                unsafe { &*node }.slots[slot_of(idx, 0)].store(page, Ordering::Release);
            }

            /// Takes the whole tree out (the root becomes empty, or
            /// [`GONE`] with `gone`) and returns its nodes, for the caller
            /// to free once no reader can hold them (readers that loaded
            /// the old root may still walk them). Only under the inode's
            /// write lock.
            pub(crate) fn detach(&self, gone: bool) -> Vec<*mut Node> {
                let r = self
                    .root
                    .swap(if gone { GONE } else { 0 }, Ordering::Relaxed);
                let mut out = Vec::new();
                if r != GONE && r & HEIGHT != 0 {
                    collect(r & !HEIGHT, r & HEIGHT, &mut out);
                }
                out
            }

            /// Whether the file's data left the page map.
            #[cfg(test)]
            pub(crate) fn is_gone(&self) -> bool {
                self.root.load(Ordering::Relaxed) == GONE
            }
        }

        /// The nodes of the tree below `p` (a node of `height` levels).
        fn collect(p: usize, height: usize, out: &mut Vec<*mut Node>) {
            let node = p as *mut Node;
            if height > 1 {
                // SAFETY: a node of a tree this writer detached.
                for s in &unsafe { &*node }.slots {
                    let c = s.load(Ordering::Relaxed);
                    if !c.is_null() {
                        collect(c as usize, height - 1, out);
                    }
                }
            }
            out.push(node);
        }

        impl Drop for PageIndex {
            /// The inode is gone, and with it every reader (each held a
            /// reference): the nodes are freed at once.
            fn drop(&mut self) {
                for n in self.detach(false) {
                    // SAFETY: from `Node::boxed`, unreachable, freed once.
                    drop(unsafe { Box::from_raw(n) });
                }
            }
        }

        // SAFETY: the index hands out raw pointers only under the
        // protocol in the module docs (one writer under the inode's lock,
        // readers pinned); its nodes are owned by it, like a `Box`'s.
        unsafe impl Send for PageIndex {}
        // SAFETY: as for `Send`: shared access is through atomics.
        unsafe impl Sync for PageIndex {}
    };
}

/// The index tmpfs uses: std's atomics in every build.
mod unmodelled {
    use super::{Found, GONE, HEIGHT};
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
    page_index!(6);
}

/// The same index on loom's atomics with four slots a node, for the
/// models.
#[cfg(all(test, loom))]
#[allow(dead_code)]
pub(crate) mod modelled {
    use super::{Found, GONE, HEIGHT};
    use loom::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
    page_index!(2);
}

pub(super) use unmodelled::{Node, PageIndex};

/// Detached nodes, freed when dropped.
struct Detached(Vec<*mut Node>);

// SAFETY: the nodes are owned by this list alone (detached from their
// tree) and hold only atomics.
unsafe impl Send for Detached {}

impl Drop for Detached {
    fn drop(&mut self) {
        for &n in &self.0 {
            // SAFETY: from `Node::boxed`, detached, freed once (the list
            // owns them).
            drop(unsafe { Box::from_raw(n) });
        }
    }
}

/// Frees detached nodes after a grace period, all in one retirement.
pub(super) fn retire_nodes(nodes: Vec<*mut Node>) {
    if nodes.is_empty() {
        return;
    }
    let d = std::ptr::NonNull::from(Box::leak(Box::new(Detached(nodes))));
    // SAFETY: from a `Box`; the nodes were detached (unreachable for new
    // readers) by the caller, and the list is handed over once.
    unsafe { crate::reclaim::defer_drop_box(d) };
}

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;

    fn page(k: usize) -> *mut u8 {
        // Any distinct, 64-aligned, non-null addresses: never read here.
        (k * 4096) as *mut u8
    }

    #[test]
    fn grows_finds_and_forgets_pages() {
        let ix = PageIndex::new();
        assert_eq!(ix.get(0), Found::Hole);
        ix.set(0, page(1));
        assert_eq!(ix.get(0), Found::Page(page(1)));
        assert_eq!(ix.get(1), Found::Hole);
        for (i, idx) in [1u64, 63, 64, 4095, 4096, 1 << 40, (1 << 52) - 1]
            .into_iter()
            .enumerate()
        {
            ix.set(idx, page(i + 2));
            assert_eq!(ix.get(idx), Found::Page(page(i + 2)), "{idx}");
            assert_eq!(ix.get(0), Found::Page(page(1)), "page 0 after {idx}");
        }
        assert_eq!(ix.get(2), Found::Hole);
        assert_eq!(ix.get(1 << 41), Found::Hole);
        ix.set(63, std::ptr::null_mut());
        assert_eq!(ix.get(63), Found::Hole);
        assert_eq!(ix.get(64), Found::Page(page(4)));
        // Removing from a part of the tree never built builds nothing.
        ix.set(1 << 30, std::ptr::null_mut());
        assert_eq!(ix.get(1 << 30), Found::Hole);
        let nodes = ix.detach(true);
        assert!(!nodes.is_empty());
        assert!(ix.is_gone());
        assert_eq!(ix.get(0), Found::Gone);
        for n in nodes {
            // SAFETY: detached, never shared.
            drop(unsafe { Box::from_raw(n) });
        }
    }

    #[test]
    fn page_zero_alone_needs_no_node() {
        let ix = PageIndex::new();
        ix.set(0, page(3));
        assert!(ix.detach(false).is_empty());
        assert_eq!(ix.get(0), Found::Hole);
        ix.set(0, page(3));
        ix.set(0, std::ptr::null_mut());
        assert_eq!(ix.get(0), Found::Hole);
        ix.set(5, std::ptr::null_mut());
        assert!(ix.detach(false).is_empty());
    }
}
