//! The A/B switches: one [`FastPaths`] value, fixed when a [`Vfs`](crate::Vfs)
//! is built, chooses for each seed's fast path between the seed's code and
//! the code Linux ran before it; uvfs's own fast paths (`path_cache`) follow
//! the seeds', with the per-component walk Linux runs as their stock side.
//! Both sides of every switch are real code paths doing real work; nothing
//! imitates a cost.

use crate::errno::Errno;
use std::fmt;

/// Which fast paths a VFS instance runs. Every field `true` is [`seeds()`]
/// (the kernel after the seed patches, plus uvfs's own fast paths), every
/// field `false` is [`stock()`] (before them).
///
/// ```
/// use uvfs::FastPaths;
///
/// // The command line's spelling: a preset, then switches left to right.
/// let f = FastPaths::parse("stock,close_sync=on").unwrap();
/// assert_eq!(f, FastPaths::stock().with("close_sync", true));
/// assert_eq!(f.get("close_sync"), Some(true));
/// assert_eq!(f.get("typesafe_files"), Some(false));
/// assert_eq!(f.to_string(), "stock,close_sync=on");
/// assert_eq!(FastPaths::seeds().to_string(), "seeds");
/// assert!(FastPaths::parse("turbo=on").is_err());
/// ```
///
/// [`seeds()`]: FastPaths::seeds
/// [`stock()`]: FastPaths::stock
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FastPaths {
    /// Seed 000: close(2) does the final release of the file synchronously;
    /// off, the release is queued as deferred work (task_work) and runs when
    /// the call returns.
    pub close_sync: bool,
    /// Seed 001: a failed open frees its never-opened file object at once;
    /// off, it goes through the deferred queue and the full release.
    pub badopen_immediate: bool,
    /// Seed 001: file objects come from a type-stable pool and are reused at
    /// once (lookups re-validate); off, they are heap objects freed after an
    /// epoch grace period, and lookups pin the epoch.
    pub typesafe_files: bool,
    /// Seed 003: fd lookup is one masked, branch-free slot load, then
    /// inc-not-zero and a re-check of the slot; off, the generic
    /// "get file from slot" helper with its branches and reloads.
    pub fget_masked: bool,
    /// Seed 004: alloc_fd looks in the open_fds word holding `next_fd` first,
    /// and `full_fds_bits` is cleared only when set; off, the stock two-level
    /// search and an unconditional clear.
    pub alloc_fd_fast: bool,
    /// Seed 002: the inode cache is searched without the hash lock, which
    /// is taken only to insert (searching again under it); off, the first
    /// search takes the lock too, so a miss takes it twice.
    pub icache_lockless: bool,
    /// Beyond the seeds (uvfs's own, issue 19): an fd table with a single
    /// user (a process with one thread) is written without its lock and
    /// without atomic read-modify-writes (alloc_fd, close, dup); off, every
    /// writer takes the lock, as Linux always takes `files->file_lock`.
    pub fd_single_user: bool,
    /// Issue 16: a lookup whose whole path was resolved before, from the
    /// same starting point with the same credentials, is answered from a
    /// full-path cache in a constant number of hash operations, trusted
    /// while nothing in the namespace changed since; off, every lookup
    /// walks component by component (the lockless walk, then the locked
    /// one).
    pub path_cache: bool,
    /// Beyond the seeds (uvfs's own, issue 19): consecutive fds' slots lie
    /// on different cache lines (fd `n`'s slot is on line `n % 8` of its
    /// chunk's first eight), so threads sharing a table, each busy with its
    /// own low fd, do not write the same line of slots at every install and
    /// close; off, slots are in fd order, eight to a line, as Linux's
    /// `fdt->fd` array.
    pub fd_slot_spread: bool,
    /// Issue 16 (uvfs's own): tmpfs reaches its inode without the inode
    /// table: through the object the cached inode holds (`InodeData`,
    /// handed to the file system's `*_node` methods: getattr, setattr,
    /// read, write, readdir, lookup and create in a directory), and where
    /// the VFS has none (a stat by number from the path cache), getattr
    /// and reads and writes of at most four pages work on the inode under
    /// the table's shard lock without taking a reference to it (when the
    /// inode's own lock is free; otherwise as off); off, every call finds
    /// the inode in the table and takes and drops a reference. Applies to
    /// the root tmpfs a `VfsBuilder` makes (`Tmpfs::new` turns it on).
    pub tmpfs_borrow: bool,
    /// Issue 16 (uvfs's own): stat, lstat and fstatat answered by the path
    /// cache read the attributes without taking a reference on the
    /// answer's dentry (pinned, its sequence count checked; the inode
    /// asked of the file system by number); off, the lookup returns a
    /// referenced dentry and the reference is dropped after. Needs
    /// `path_cache`.
    pub stat_noref: bool,
    /// Issue 19 (uvfs's own): the lockless walk, the path cache and the
    /// stock side's fd lookup pin with a per-thread epoch record written by
    /// a plain store (the reclaimer issues `membarrier` for both sides; a
    /// `SeqCst` fence on the reader's side where `membarrier` is missing);
    /// off, with crossbeam-epoch's pin (a `SeqCst` read-modify-write).
    /// Retired objects wait for both schemes' grace periods whatever the
    /// switch says (see `docs/reclaim.md`).
    pub cheap_pin: bool,
    /// Issue 19 (uvfs's own): a shared table allocates fds 0..63 with one
    /// compare-and-swap on the first open_fds word, which never moves (it
    /// lives outside the lock, so growth leaves it in place), and frees a
    /// reservation with one `fetch_and`, neither taking the lock; off, every
    /// allocation takes the table's lock, as Linux takes `file_lock`.
    pub fd_bits_lockfree: bool,
    /// Issue 19 (uvfs's own): an open of a regular file counts itself for
    /// leases (Linux's `i_writecount`/`i_readcount`) by a plain store of
    /// its inode into its own file object, with no atomic read-modify-write
    /// on the inode and none at the close; `F_SETLEASE`, which needs the
    /// counts, issues `membarrier` and counts the files of the type-stable
    /// pool open on the inode. Needs `typesafe_files` (heap files are
    /// counted in the inode as off); off, every open and final release of
    /// a regular file increments and decrements the inode's counts.
    pub open_count_lazy: bool,
    /// Issue 16 (uvfs's own, Linux's `path_parentat` in RCU mode): the
    /// directory of a name to be created or removed (open with
    /// `O_CREAT`, mkdir, unlink, rename, …) is found by the lockless walk,
    /// taking one reference, on the directory itself; off, by the walk with
    /// references, which locks a hash bucket and takes and drops a
    /// reference at every component.
    pub rcu_parent: bool,
    /// Issues 16 and 19 (uvfs's own): tmpfs keeps each inode's attributes
    /// in one block of atomics (their only copy), which writers change
    /// under the inode's write lock inside a sequence count, and `stat`,
    /// `fstat` and the read path's size check read them without the
    /// inode's lock (retrying while a writer is between its first and last
    /// store); off, writers skip the count and readers read the same block
    /// under the inode's read lock. Applies to the root tmpfs a
    /// `VfsBuilder` makes (`Tmpfs::new` turns it on).
    pub lockless_attrs: bool,
    /// Issue 16 (uvfs's own): `stat` of a path the path cache misses ends
    /// its lockless walk by reading the attributes from the dentry found,
    /// still pinned, at the sequence count the walk validated, without
    /// taking and dropping a reference on it (what `stat_noref` does for a
    /// path-cache hit); off, the walk takes a reference on the dentry and
    /// `stat` reads through it. Needs the path cache and `stat_noref`.
    pub stat_noref_walk: bool,
    /// Issue 19 (uvfs's own): tmpfs reads find a file's pages through a
    /// lockless page index under the epoch pin and copy them with no lock
    /// and no atomic read-modify-write (the size from the published
    /// attributes; pages a truncation, hole punch or move to a memfd takes
    /// away are freed after a grace period); off, a read copies under the
    /// inode's read lock. Needs `lockless_attrs` (without it a read takes
    /// the lock). Applies to the root tmpfs a `VfsBuilder` makes
    /// (`Tmpfs::new` turns it on).
    pub lockless_read: bool,
    /// Issue 19 (uvfs's own): a thread of a shared table closes an fd
    /// below 64 without the table's lock: a compare-and-swap marks the
    /// fd's slot as closing, a `fetch_and` frees the number, a store
    /// empties the slot; lookups, installs, dup2 and fork's copy wait out
    /// a marked slot. Needs `fd_bits_lockfree` (without it, a close takes
    /// the lock); off, every close of a shared table takes the lock.
    pub fd_close_lockless: bool,
    /// Issue 16 (uvfs's own): a write of one buffer to a regular tmpfs
    /// file whose mode has no set-ID bit takes tmpfs's inode lock alone:
    /// the append offset, the set-ID check and the copy are all decided
    /// under it; off (and for a write that must drop set-ID bits, a
    /// vector of several buffers, or a file whose data is in a memfd),
    /// the write takes the VFS inode mutex first, as Linux's
    /// `inode_lock` in `shmem_file_write_iter`, then tmpfs's lock.
    pub write_one_lock: bool,
    /// Issue 16 (Linux's `d_delete`): unlink of a name whose dentry the
    /// unlinker alone holds turns the dentry negative in place, keeping it
    /// hashed (and listed on its parent's child list), so the next create
    /// of the name finds it and allocates no dentry; the unlink frees only
    /// the inode. A dentry someone else holds (an open file) is unhashed
    /// as off; off, every unlinked dentry is unhashed and dies at its last
    /// put.
    pub d_delete: bool,
    /// Issue 16 (uvfs's own): a write of one buffer at an offset, wholly
    /// inside a regular tmpfs file's size and over pages it holds, to a
    /// file whose mode has no set-ID bit and whose mtime and ctime already
    /// equal the coarse clock (nobody queried the ctime since), takes no
    /// lock: it claims the inode's attribute cell (a compare-and-swap of
    /// its sequence count from even to odd), checks all that, copies, and
    /// lets the claim go with a plain store. Every writer under tmpfs's
    /// inode lock holds the same claim from its lock to its unlock, so the
    /// two never overlap. Needs `write_one_lock`, `lockless_read` and
    /// `lockless_attrs`; off, such a write takes tmpfs's inode lock.
    pub light_overwrite: bool,
    /// Issue 16 (Linux's `d_iname`): a dentry holds a name of at most 8
    /// bytes in itself, in the word that otherwise points at the name, so
    /// such a file's dentry makes no second allocation and a lookup
    /// compares the name without leaving the dentry (a rename changes it
    /// in place, inside the dentry's sequence count); off, every name is
    /// allocated on its own, as longer names always are.
    pub dentry_inline_name: bool,
    /// Issue 16 (uvfs's own): a path-cache entry of a positive answer also
    /// records, when its filler finds the file system reads attributes
    /// through objects reached without a reference (tmpfs with
    /// `tmpfs_borrow` and `lockless_attrs`), the inode's object, its
    /// number and the device number, read from the dentry at the count
    /// the entry records. A stat answered by the cache then reads the
    /// slot, the dentry's count and the inode's attribute cell, not the
    /// dentry's inode, superblock and file system on the way. Needs
    /// `path_cache` and `stat_noref`; off, entries record no object and a
    /// hit goes from the dentry.
    pub path_cache_inode: bool,
    /// Issue 16 (uvfs's own): a path-cache miss that the lockless walk
    /// answers fills the key's slot only if the same key missed that slot
    /// before under the same namespace generation (a hint beside the slot
    /// records the last key that missed without filling). A lookup made
    /// once (a stat of each of a directory's 10,000 names) then writes no
    /// slot and evicts no entry of a path looked up again and again; a
    /// path is walked twice before the cache answers it. Needs
    /// `path_cache`; off, every answered miss fills its slot.
    pub path_cache_admit: bool,
    /// Issue 16 (uvfs's own; Tsai et al. invalidate per directory too): a
    /// change confined to one file's dentry (an unlink, its `d_delete` or
    /// `d_drop`, a chmod or chown of a non-directory) does not move the
    /// namespace generation, so it no longer makes every path-cache entry
    /// stale: the entries that end on that dentry see its own count move,
    /// and no entry's walk goes through a non-directory. A directory's
    /// unhash or permission change, a move, a mount and a dentry's death
    /// still move it. Needs `path_cache` to matter; off, every unlink,
    /// chmod or chown anywhere empties the cache, as before.
    pub path_cache_dir_gen: bool,
    /// Issue 16 (uvfs's own): the parent walk of a create, unlink, mkdir,
    /// rmdir, link, symlink or rename (`lookup_parent`) asks the path
    /// cache for the path's directory part, as a lookup of it with
    /// `FOLLOW | DIRECTORY` would (the lockless walk fills the entry on a
    /// miss), then checks search permission on that directory: one hash
    /// of the prefix and one probe, not a step per component. Needs
    /// `path_cache` and `rcu_parent`; off, the lockless parent walk.
    pub path_cache_parent: bool,
}

/// Name, description and accessor of every switch, in a stable order.
type Switch = (&'static str, &'static str, fn(&mut FastPaths) -> &mut bool);

const SWITCHES: [Switch; 27] = [
    (
        "close_sync",
        "seed 000: close(2) releases the file synchronously",
        |f| &mut f.close_sync,
    ),
    (
        "badopen_immediate",
        "seed 001: a failed open frees its file at once",
        |f| &mut f.badopen_immediate,
    ),
    (
        "typesafe_files",
        "seed 001: file objects from a type-stable pool",
        |f| &mut f.typesafe_files,
    ),
    (
        "fget_masked",
        "seed 003: branch-free masked fd lookup",
        |f| &mut f.fget_masked,
    ),
    (
        "alloc_fd_fast",
        "seed 004: alloc_fd searches next_fd's word first",
        |f| &mut f.alloc_fd_fast,
    ),
    (
        "icache_lockless",
        "seed 002: inode cache searched without the hash lock",
        |f| &mut f.icache_lockless,
    ),
    (
        "fd_single_user",
        "uvfs: an fd table with one user is written without its lock",
        |f| &mut f.fd_single_user,
    ),
    ("path_cache", "issue 16: full-path lookup cache", |f| {
        &mut f.path_cache
    }),
    (
        "fd_slot_spread",
        "uvfs: consecutive fds' slots on different cache lines",
        |f| &mut f.fd_slot_spread,
    ),
    (
        "tmpfs_borrow",
        "issue 16: tmpfs reaches its inode through the cached inode, or borrowed from its table",
        |f| &mut f.tmpfs_borrow,
    ),
    (
        "stat_noref",
        "issue 16: stat from a path-cache hit without a dentry reference",
        |f| &mut f.stat_noref,
    ),
    (
        "cheap_pin",
        "issue 19: epoch pin by a plain store, membarrier on the reclaiming side",
        |f| &mut f.cheap_pin,
    ),
    (
        "fd_bits_lockfree",
        "issue 19: a shared table claims fds 0..63 by one CAS, without the lock",
        |f| &mut f.fd_bits_lockfree,
    ),
    (
        "open_count_lazy",
        "issue 19: an open counts itself for leases in its own file; F_SETLEASE scans the pool",
        |f| &mut f.open_count_lazy,
    ),
    (
        "rcu_parent",
        "issue 16: the parent of a name to create or remove found by the lockless walk",
        |f| &mut f.rcu_parent,
    ),
    (
        "lockless_attrs",
        "issues 16, 19: stat and read's size check without the tmpfs inode's lock",
        |f| &mut f.lockless_attrs,
    ),
    (
        "stat_noref_walk",
        "issue 16: stat on a path-cache miss without a dentry reference",
        |f| &mut f.stat_noref_walk,
    ),
    (
        "lockless_read",
        "issue 19: tmpfs reads find and copy pages without the inode's lock",
        |f| &mut f.lockless_read,
    ),
    (
        "fd_close_lockless",
        "issue 19: a shared table closes fds 0..63 without the lock",
        |f| &mut f.fd_close_lockless,
    ),
    (
        "write_one_lock",
        "issue 16: a write that drops no set-ID bit takes tmpfs's inode lock, not the VFS mutex too",
        |f| &mut f.write_one_lock,
    ),
    (
        "d_delete",
        "issue 16: unlink keeps the sole holder's dentry hashed, negative, for the next create",
        |f| &mut f.d_delete,
    ),
    (
        "light_overwrite",
        "issue 16: an overwrite inside the size that stamps nothing takes no lock, only a claim",
        |f| &mut f.light_overwrite,
    ),
    (
        "dentry_inline_name",
        "issue 16: names of up to 8 bytes inside the dentry, no allocation of their own",
        |f| &mut f.dentry_inline_name,
    ),
    (
        "path_cache_inode",
        "issue 16: a path-cache entry leads stat to the inode's attribute cell, not through the dentry",
        |f| &mut f.path_cache_inode,
    ),
    (
        "path_cache_admit",
        "issue 16: a path fills the path cache on its second miss, so a lookup made once evicts nothing",
        |f| &mut f.path_cache_admit,
    ),
    (
        "path_cache_dir_gen",
        "issue 16: a file's unlink, chmod or chown leaves other path-cache entries valid",
        |f| &mut f.path_cache_dir_gen,
    ),
    (
        "path_cache_parent",
        "issue 16: a create's or unlink's directory found through the path cache",
        |f| &mut f.path_cache_parent,
    ),
];

/// The seed switches (the first six of [`SWITCHES`]): the ones
/// [`FastPaths::all_combinations`] combines exhaustively.
const SEED_SWITCHES: usize = 6;

impl FastPaths {
    /// All fast paths off: the kernel before the seed patches.
    pub const fn stock() -> Self {
        FastPaths {
            close_sync: false,
            badopen_immediate: false,
            typesafe_files: false,
            fget_masked: false,
            alloc_fd_fast: false,
            icache_lockless: false,
            fd_single_user: false,
            path_cache: false,
            fd_slot_spread: false,
            tmpfs_borrow: false,
            stat_noref: false,
            cheap_pin: false,
            fd_bits_lockfree: false,
            open_count_lazy: false,
            rcu_parent: false,
            lockless_attrs: false,
            stat_noref_walk: false,
            lockless_read: false,
            fd_close_lockless: false,
            write_one_lock: false,
            d_delete: false,
            light_overwrite: false,
            dentry_inline_name: false,
            path_cache_inode: false,
            path_cache_admit: false,
            path_cache_dir_gen: false,
            path_cache_parent: false,
        }
    }

    /// All fast paths on: the kernel after the seed patches, and uvfs's
    /// own (`path_cache`).
    pub const fn seeds() -> Self {
        FastPaths {
            close_sync: true,
            badopen_immediate: true,
            typesafe_files: true,
            fget_masked: true,
            alloc_fd_fast: true,
            icache_lockless: true,
            fd_single_user: true,
            path_cache: true,
            fd_slot_spread: true,
            tmpfs_borrow: true,
            stat_noref: true,
            cheap_pin: true,
            fd_bits_lockfree: true,
            open_count_lazy: true,
            rcu_parent: true,
            lockless_attrs: true,
            stat_noref_walk: true,
            lockless_read: true,
            fd_close_lockless: true,
            write_one_lock: true,
            d_delete: true,
            light_overwrite: true,
            dentry_inline_name: true,
            path_cache_inode: true,
            path_cache_admit: true,
            path_cache_dir_gen: true,
            path_cache_parent: true,
        }
    }

    /// The names of the switches, in a stable order, with a one-line
    /// description each.
    pub fn switches() -> impl Iterator<Item = (&'static str, &'static str)> {
        SWITCHES.iter().map(|(n, d, _)| (*n, *d))
    }

    /// Reads a switch by name.
    pub fn get(&self, name: &str) -> Option<bool> {
        let mut copy = *self;
        SWITCHES
            .iter()
            .find(|s| s.0 == name)
            .map(|s| *(s.2)(&mut copy))
    }

    /// Sets a switch by name; `EINVAL` for an unknown name.
    pub fn set(&mut self, name: &str, on: bool) -> Result<(), Errno> {
        let s = SWITCHES.iter().find(|s| s.0 == name).ok_or(Errno::EINVAL)?;
        *(s.2)(self) = on;
        Ok(())
    }

    /// Returns a copy with one switch changed; panics on an unknown name
    /// (for literals in code; use [`set`](Self::set) for user input).
    pub fn with(mut self, name: &str, on: bool) -> Self {
        if self.set(name, on).is_err() {
            panic!("unknown fast-path switch {name:?}");
        }
        self
    }

    /// Every combination of the seed switches (2^6 values), with the
    /// switches beyond the seeds (`fd_single_user`, `path_cache`,
    /// `fd_slot_spread`, `tmpfs_borrow`, `stat_noref`, `cheap_pin`,
    /// `fd_bits_lockfree`, `open_count_lazy`) on in half of them (by the parity of the seed switches that are on;
    /// `stock()` and `seeds()` are among them as themselves); then, for
    /// each switch beyond the seeds, `seeds()` with it alone off and
    /// `stock()` with it alone on. For tests that check the switches never
    /// change observable results: each later switch adds two values, not a
    /// doubling.
    pub fn all_combinations() -> impl Iterator<Item = FastPaths> {
        let seeds = (0u32..1 << SEED_SWITCHES).map(|bits| {
            let mut f = FastPaths::stock();
            for (i, s) in SWITCHES.iter().enumerate().take(SEED_SWITCHES) {
                *(s.2)(&mut f) = bits & (1 << i) != 0;
            }
            // Parity: 0 for stock (no bit), 0 for seeds (six bits), so
            // both presets appear as themselves; flip it for the others
            // with an even count so that half the values have it on.
            let ones = bits.count_ones();
            let on = match ones {
                0 => false,
                n if n == SEED_SWITCHES as u32 => true,
                n => n % 2 == 1,
            };
            for s in SWITCHES.iter().skip(SEED_SWITCHES) {
                *(s.2)(&mut f) = on;
            }
            f
        });
        let later = SWITCHES.iter().skip(SEED_SWITCHES).flat_map(|s| {
            let mut off_in_seeds = FastPaths::seeds();
            *(s.2)(&mut off_in_seeds) = false;
            let mut on_in_stock = FastPaths::stock();
            *(s.2)(&mut on_in_stock) = true;
            [off_in_seeds, on_in_stock]
        });
        seeds.chain(later)
    }

    /// Parses `seeds`, `stock`, or a comma-separated list whose items are a
    /// preset or `SWITCH=on|off`, applied left to right, starting from
    /// `seeds` (`stock,close_sync=on` is stock with one fast path).
    pub fn parse(spec: &str) -> Result<FastPaths, Errno> {
        let mut f = FastPaths::seeds();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "seeds" => f = FastPaths::seeds(),
                "stock" => f = FastPaths::stock(),
                _ => {
                    let (name, val) = item.split_once('=').ok_or(Errno::EINVAL)?;
                    let on = match val.trim() {
                        "on" | "1" | "true" => true,
                        "off" | "0" | "false" => false,
                        _ => return Err(Errno::EINVAL),
                    };
                    f.set(name.trim(), on)?;
                }
            }
        }
        Ok(f)
    }
}

impl Default for FastPaths {
    /// The seeds preset: what current Linux runs.
    fn default() -> Self {
        FastPaths::seeds()
    }
}

impl fmt::Display for FastPaths {
    /// `seeds`, `stock`, or `stock,NAME=on,…` naming the switches that differ
    /// from stock; [`FastPaths::parse`] reads it back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == FastPaths::seeds() {
            return f.write_str("seeds");
        }
        f.write_str("stock")?;
        for (name, _) in FastPaths::switches() {
            if self.get(name) == Some(true) {
                write!(f, ",{name}=on")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_parse() {
        assert_eq!(FastPaths::parse("seeds").unwrap(), FastPaths::seeds());
        assert_eq!(FastPaths::parse("stock").unwrap(), FastPaths::stock());
        let f = FastPaths::parse("stock,close_sync=on").unwrap();
        assert!(f.close_sync && !f.fget_masked);
        let f = FastPaths::parse("fget_masked=off").unwrap();
        assert!(!f.fget_masked && f.close_sync);
        assert_eq!(FastPaths::parse("nope=on"), Err(Errno::EINVAL));
        assert_eq!(FastPaths::parse("close_sync=maybe"), Err(Errno::EINVAL));
        assert_eq!(FastPaths::parse("close_sync"), Err(Errno::EINVAL));
    }

    #[test]
    fn display_round_trips_every_combination() {
        let all: Vec<_> = FastPaths::all_combinations().collect();
        assert_eq!(all.len(), 106);
        assert!(all.contains(&FastPaths::seeds()));
        assert!(all.contains(&FastPaths::stock()));
        assert!(all.contains(&FastPaths::seeds().with("fd_single_user", false)));
        assert!(all.contains(&FastPaths::stock().with("fd_single_user", true)));
        let distinct: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), all.len());
        for f in all {
            assert_eq!(FastPaths::parse(&f.to_string()).unwrap(), f, "{f}");
        }
    }

    #[test]
    fn combinations_cover_both_sides_of_later_switches() {
        let all: Vec<_> = FastPaths::all_combinations().collect();
        assert!(all.contains(&FastPaths::stock()));
        assert!(all.contains(&FastPaths::seeds()));
        let on = all.iter().filter(|f| f.path_cache).count();
        assert!(on > 16 && on + 16 < all.len(), "{on} of {}", all.len());
        for (name, _) in FastPaths::switches().take(SEED_SWITCHES) {
            for side in [false, true] {
                for pc in [false, true] {
                    assert!(
                        all.iter()
                            .any(|f| f.get(name) == Some(side) && f.path_cache == pc),
                        "{name}={side} path_cache={pc}"
                    );
                }
            }
        }
    }

    #[test]
    fn get_set_by_name() {
        let mut f = FastPaths::stock();
        for (name, _) in FastPaths::switches() {
            assert_eq!(f.get(name), Some(false));
            f.set(name, true).unwrap();
        }
        assert_eq!(f, FastPaths::seeds());
        assert_eq!(f.get("bogus"), None);
        assert_eq!(f.set("bogus", true), Err(Errno::EINVAL));
    }
}
