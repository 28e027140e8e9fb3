//! Dentries' memory (Linux's `dentry_cache` kmem cache): slabs of
//! [`SLAB`] dentries of 128 bytes, 64-aligned, carved by the cache that
//! owns them and freed only with it, and a free list of slots.
//!
//! A dentry comes from here (`DentryCache::new_child`, `new_root`) and
//! goes back when its retirement's grace period is over: `kill` retires it
//! with [`reclaim::defer_free`](crate::reclaim::defer_free) exactly as it
//! retired the box before, and the dentry's [`Free`](crate::reclaim::Free)
//! moves the value out of its slot, pushes the slot here and only then
//! drops the value (whose superblock reference may be the last one keeping
//! the cache, and so this slab, alive).
//!
//! What this changes for a lockless reader: nothing. Every reader of a
//! dentry without a reference is pinned (`reclaim::pin`) from before it
//! reached the dentry (through a hash chain, a parent pointer, a mount, or
//! a path-cache entry it trusts only after a generation check that a death
//! moves before the retirement) until it stops reading it. A slot comes
//! back only after the grace period of that retirement, which waits for
//! every pin that began before the retirement; a pin that began after it
//! cannot reach the dead dentry (unhashed, unlisted, off the LRU, no
//! reference or parent pointer left to it, the generation moved). So no
//! reader that could see the old dentry is left when the slot is reused,
//! as no reader was left when the box was freed; a recycled dentry is
//! reached only through the new pointers its next life publishes (with a
//! release, as a fresh box was). Addresses were reused before too (malloc
//! gave a freed 144-byte chunk to the next dentry), so no check that
//! compares dentry addresses (a parent pointer, the hash's parent part, a
//! path-cache key) meets anything new. Unlike the inode cache's nodes,
//! which lockless searches read with no grace period at all (so they must
//! be a valid inode at every instant), a free slot here holds no dentry:
//! nobody reads it.
//!
//! Under AddressSanitizer (`scripts/asan` builds with `--cfg uvfs_asan`)
//! a free slot is poisoned past its link word, as KASAN poisons a freed
//! slab object, so a read of a dentry after its grace period is still
//! reported as it was when the box went back to malloc (ASan's own
//! quarantine aside: a slot may be handed out again at once).
//!
//! The memory is never given back to the allocator while the cache lives
//! (Linux's slab allocator frees a slab's pages once all its objects are
//! free and the cache keeps enough partial slabs; this one keeps them, as
//! the inode cache and the file pool do).
//!
//! Synchronization: a free runs wherever the reclaim scheme runs it (a
//! crossbeam collection, possibly at a thread's exit, outside any uvfs
//! call), so it takes no lock: it pushes the slot on a lock-free stack
//! (`returned`). Allocation, inside a uvfs call (`d_alloc`), takes the
//! lock, pops its own list, and when that is empty takes the whole
//! returned stack at once (a swap: a stack only pushed onto and taken
//! whole has no ABA), or carves a slab. The lock and the stack are std's
//! even under loom and shuttle: they stand in for malloc, which the
//! models never saw either, so the models' state spaces are what they
//! were (and under both, retired dentries leak: no slot comes back).

use super::Dentry;
use crate::primitive::sync::{UnmodelledMutex, lock_unmodelled};
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, Ordering};

/// Dentries per slab: 64 of 128 bytes, 8 KiB (2 under loom, as the inode
/// cache's).
pub(super) const SLAB: usize = if cfg!(loom) { 2 } else { 64 };

/// AddressSanitizer's manual poisoning (its runtime is linked in an ASan
/// build): a free slot's bytes past its link are unaddressable until the
/// slot is handed out again.
#[cfg(uvfs_asan)]
mod asan {
    use std::ffi::c_void;

    unsafe extern "C" {
        fn __asan_poison_memory_region(addr: *const c_void, size: usize);
        fn __asan_unpoison_memory_region(addr: *const c_void, size: usize);
    }

    /// Marks the bytes of the free slot `s` past its link unaddressable.
    pub(super) fn poison(s: *mut super::FreeSlot) {
        let link = size_of::<super::FreeSlot>();
        // SAFETY: `s` is a slot of a live slab (128 bytes); only the
        // sanitizer's shadow memory is written.
        unsafe {
            __asan_poison_memory_region(
                s.cast::<u8>().add(link).cast(),
                size_of::<super::Dentry>() - link,
            );
        }
    }

    /// Makes the slot at `s` addressable again.
    pub(super) fn unpoison(s: *mut u8, len: usize) {
        // SAFETY: `s` is `len` bytes of a live slab; only the shadow is
        // written.
        unsafe { __asan_unpoison_memory_region(s.cast(), len) };
    }
}

/// A free slot, as its first word holds it: the next free slot.
struct FreeSlot {
    next: *mut FreeSlot,
}

/// The slabs and the slots free for allocation, under the lock.
struct Owned {
    /// Free slots, linked through their first word.
    free: *mut FreeSlot,
    /// Every slab carved (from `Box::into_raw`), freed in `drop`.
    slabs: Vec<NonNull<[MaybeUninit<Dentry>]>>,
}

/// The dentry cache's slab of dentries.
pub(super) struct DentrySlab {
    owned: UnmodelledMutex<Owned>,
    /// Slots given back after their grace period (see the module docs).
    returned: AtomicPtr<FreeSlot>,
}

// SAFETY: the raw pointers are slots of slabs this object owns; free slots
// are handed between threads only through the lock or the stack (release
// on the push, acquire on the swap), and a slot in use belongs to its
// dentry.
unsafe impl Send for DentrySlab {}
// SAFETY: as above.
unsafe impl Sync for DentrySlab {}

impl Drop for DentrySlab {
    fn drop(&mut self) {
        // Every dentry holds its superblock's reference to the caches, so
        // none is alive (or waiting for its grace period) when the cache
        // and this slab go: the slots hold nothing to drop.
        let mut owned = lock_unmodelled(&self.owned);
        for s in owned.slabs.drain(..) {
            #[cfg(uvfs_asan)]
            asan::unpoison(s.as_ptr().cast(), s.len() * size_of::<Dentry>());
            // SAFETY: made by `Box::into_raw` in `carve`, freed once here;
            // no slot is in use (see above), and `MaybeUninit` drops
            // nothing.
            drop(unsafe { Box::from_raw(s.as_ptr()) });
        }
    }
}

impl DentrySlab {
    pub(super) fn new() -> DentrySlab {
        DentrySlab {
            owned: UnmodelledMutex::new(Owned {
                free: ptr::null_mut(),
                slabs: Vec::new(),
            }),
            returned: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Places `d` in a free slot (carving a slab if none is free) and
    /// returns it, owned by the caller until it is given back with
    /// [`free`](Self::free).
    pub(super) fn alloc(&self, d: Dentry) -> NonNull<Dentry> {
        let slot = {
            let mut o = lock_unmodelled(&self.owned);
            if o.free.is_null() {
                // Acquire: the pushers' links (and their last reads of the
                // dentries that were there) happen before our use.
                o.free = self.returned.swap(ptr::null_mut(), Ordering::Acquire);
            }
            if o.free.is_null() {
                o.carve();
            }
            let s = o.free;
            // SAFETY: a free slot of one of our slabs, linked by `carve` or
            // `free`; the lock makes it ours to unlink.
            o.free = unsafe { (*s).next };
            s
        };
        let p = slot.cast::<Dentry>();
        #[cfg(uvfs_asan)]
        asan::unpoison(p.cast(), size_of::<Dentry>());
        // SAFETY: a free slot: 128 bytes aligned to 64 (a `Dentry`'s
        // layout), holding no value and read by nobody (see the module
        // docs), now ours.
        unsafe { p.write(d) };
        // SAFETY: a slot of a slab, not null.
        unsafe { NonNull::new_unchecked(p) }
    }

    /// Gives a slot back.
    ///
    /// # Safety
    /// `p` came from this slab's [`alloc`](Self::alloc), its value was
    /// moved out or dropped, nobody reads it any more (its grace period is
    /// over), and it is not used again.
    pub(super) unsafe fn free(&self, p: NonNull<Dentry>) {
        let s = p.as_ptr().cast::<FreeSlot>();
        // Before the push: once published the slot may be taken, unpoisoned
        // and filled at once. The link stays addressable (a pop reads it).
        #[cfg(uvfs_asan)]
        asan::poison(s);
        let mut head = self.returned.load(Ordering::Relaxed);
        loop {
            // SAFETY: the slot is ours (the contract) until the exchange
            // below publishes it; it is large and aligned enough for a link.
            unsafe { s.write(FreeSlot { next: head }) };
            match self
                .returned
                .compare_exchange_weak(head, s, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(now) => head = now,
            }
        }
    }

    /// Dentries carved (the slab's memory is this times 128 bytes).
    pub(super) fn objects(&self) -> usize {
        lock_unmodelled(&self.owned).slabs.len() * SLAB
    }
}

impl Owned {
    /// Carves a slab and links its slots on the free list (empty before).
    fn carve(&mut self) {
        let slab: Box<[MaybeUninit<Dentry>]> = Box::new_uninit_slice(SLAB);
        let slab = NonNull::from(Box::leak(slab));
        self.slabs.push(slab);
        let base = slab.as_ptr().cast::<MaybeUninit<Dentry>>();
        for i in (0..SLAB).rev() {
            // SAFETY: `i < SLAB`, in the slab just carved; its slots are
            // free, each large and aligned enough for a link.
            unsafe {
                let s = base.add(i).cast::<FreeSlot>();
                s.write(FreeSlot { next: self.free });
                #[cfg(uvfs_asan)]
                asan::poison(s);
                self.free = s;
            }
        }
    }
}
