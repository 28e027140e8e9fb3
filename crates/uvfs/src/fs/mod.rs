//! The file-system interface below the VFS caches, in inode numbers (the
//! layer a FUSE low-level server sees): the VFS asks a [`FileSystem`] to look
//! up, create, read or change inodes by number, and keeps its own dentry and
//! inode caches in front of it, so that they can evict and re-read a file
//! system the way the kernel re-reads a disk.
//!
//! Division of labour, as in Linux: the VFS does path walk, permission
//! checks (`may_lookup`, `may_create`, `may_delete` from the attributes it
//! reads here), flag handling and file positions; a file system stores
//! inodes, directory entries and data, enforces its own limits (`ENOSPC`,
//! `EFBIG`, `ENAMETOOLONG` for its name length), keeps link counts, sizes and
//! block counts, and stamps timestamps the way the kernel's generic code does
//! for it (see each method).

use crate::acl::{AclType, PosixAcl};
use crate::errno::Errno;
use std::sync::Arc;

pub mod timekeeping;
pub mod tmpfs;

/// An inode number, unique within one file system.
pub type Ino = u64;

/// The `S_IFMT` type bits.
pub const S_IFMT: u32 = 0o170000;
/// Regular file.
pub const S_IFREG: u32 = 0o100000;
/// Directory.
pub const S_IFDIR: u32 = 0o040000;
/// Symbolic link.
pub const S_IFLNK: u32 = 0o120000;
/// FIFO (named pipe).
pub const S_IFIFO: u32 = 0o010000;
/// Character device.
pub const S_IFCHR: u32 = 0o020000;
/// Block device.
pub const S_IFBLK: u32 = 0o060000;
/// Socket.
pub const S_IFSOCK: u32 = 0o140000;
/// Set-user-ID bit.
pub const S_ISUID: u32 = 0o4000;
/// Set-group-ID bit.
pub const S_ISGID: u32 = 0o2000;
/// Sticky bit.
pub const S_ISVTX: u32 = 0o1000;

/// `renameat2`: fail with `EEXIST` if the target exists.
pub const RENAME_NOREPLACE: u32 = 1;
/// `renameat2`: swap source and target atomically.
pub const RENAME_EXCHANGE: u32 = 2;
/// renameat2: leave a whiteout (a character device 0/0) at the old name.
pub const RENAME_WHITEOUT: u32 = 4;
/// `fallocate`: do not change the file size.
pub const FALLOC_FL_KEEP_SIZE: u32 = 1;
/// `fallocate`: deallocate the range (requires `KEEP_SIZE`).
pub const FALLOC_FL_PUNCH_HOLE: u32 = 2;
/// `fallocate`: obsolete, never accepted.
pub const FALLOC_FL_NO_HIDE_STALE: u32 = 4;
/// `fallocate`: remove the range, shifting what follows down.
pub const FALLOC_FL_COLLAPSE_RANGE: u32 = 8;
/// `fallocate`: zero the range.
pub const FALLOC_FL_ZERO_RANGE: u32 = 0x10;
/// `fallocate`: insert a hole, shifting what follows up.
pub const FALLOC_FL_INSERT_RANGE: u32 = 0x20;
/// `fallocate`: unshare shared blocks.
pub const FALLOC_FL_UNSHARE_RANGE: u32 = 0x40;
/// `fallocate`: write zeroes to the device (Linux 6.17).
pub const FALLOC_FL_WRITE_ZEROES: u32 = 0x80;

/// A point in time, as `struct timespec`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timespec {
    /// Seconds since the epoch.
    pub sec: i64,
    /// Nanoseconds, `0..1_000_000_000`.
    pub nsec: u32,
}

impl Timespec {
    /// The current wall-clock time.
    pub fn now() -> Timespec {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        Timespec {
            sec: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
        }
    }
}

/// The wall clock's seconds from the coarse clock (`CLOCK_REALTIME_COARSE`,
/// what the kernel's `current_time` reads): a few nanoseconds, for checks
/// that need only seconds (`relatime`'s one-day rule).
pub fn coarse_now_sec() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `clock_gettime` writes one `timespec` into the valid, owned
    // buffer we pass; it has no other effect.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts) };
    if r == 0 {
        ts.tv_sec
    } else {
        Timespec::now().sec
    }
}

/// An inode's attributes (what `stat` reports, less what the VFS adds:
/// device numbers come from the mount).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    /// Inode number.
    pub ino: Ino,
    /// Type and permission bits (`st_mode`).
    pub mode: u32,
    /// Link count.
    pub nlink: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size in bytes (for a directory, what the file system reports; tmpfs:
    /// 40 plus 20 per entry; for a symlink, the target's length).
    pub size: u64,
    /// 512-byte blocks allocated.
    pub blocks: u64,
    /// Preferred I/O size.
    pub blksize: u32,
    /// Last access.
    pub atime: Timespec,
    /// Last data modification.
    pub mtime: Timespec,
    /// Last status change.
    pub ctime: Timespec,
    /// Creation.
    pub btime: Timespec,
    /// The device a character or block device node stands for (`st_rdev`,
    /// as glibc's `makedev` encodes it); 0 for every other type.
    pub rdev: u64,
    /// Which POSIX ACLs the inode has: [`HAS_ACCESS_ACL`] |
    /// [`HAS_DEFAULT_ACL`] (0 on a file system without ACLs). The VFS asks
    /// for an ACL only when its bit is set, so inodes without ACLs cost
    /// nothing more.
    pub acl: u8,
}

/// [`Attr::acl`]: the inode has an access ACL.
pub const HAS_ACCESS_ACL: u8 = 1;
/// [`Attr::acl`]: the inode (a directory) has a default ACL.
pub const HAS_DEFAULT_ACL: u8 = 2;

/// Where the lock-free permission snapshots (the dentry's and the inode
/// cache's mode word) keep [`Attr::acl`]: above the 16 bits of a mode.
/// A change of ACLs thus changes the snapshot, as a chmod does.
pub(crate) const ACL_SNAP_SHIFT: u32 = 24;

impl Attr {
    /// The mode word of the permission snapshots: the mode with the ACL
    /// bits above it (see [`ACL_SNAP_SHIFT`]).
    pub(crate) fn snap_mode(&self) -> u32 {
        self.mode | (u32::from(self.acl) << ACL_SNAP_SHIFT)
    }
}

impl Attr {
    /// The `S_IFMT` bits.
    pub fn file_type(&self) -> u32 {
        self.mode & S_IFMT
    }

    /// Whether this is a directory.
    pub fn is_dir(&self) -> bool {
        self.file_type() == S_IFDIR
    }
}

/// What a new inode is created as and owned by. The VFS has applied the
/// umask and decided uid/gid (the file system applies a set-group-ID parent
/// directory: gid and, for directories, `S_ISGID` are inherited).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NewInode {
    /// Type and permission bits.
    pub mode: u32,
    /// Owner (the caller's fsuid).
    pub uid: u32,
    /// Group (the caller's fsgid, unless the parent is set-group-ID).
    pub gid: u32,
    /// The access ACL inherited from the directory's default ACL
    /// (`posix_acl_create`; the VFS has masked `mode` with it).
    pub acl: Option<Arc<PosixAcl>>,
    /// The default ACL a new directory inherits (its parent's).
    pub default_acl: Option<Arc<PosixAcl>>,
}

/// How `setattr` sets a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetTime {
    /// To the current time (`UTIME_NOW`).
    Now,
    /// To this time.
    At(Timespec),
}

/// Attribute changes for [`FileSystem::setattr`] (`struct iattr`). The VFS
/// has checked permissions and cleared set-ID bits where chown or write
/// require it; the file system applies the changes and sets `ctime` to now
/// whenever anything changes, `mtime` too when the size changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetAttr {
    /// New permission bits (the type bits are kept).
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New size (truncate or extend with a hole); `EFBIG` past the maximum
    /// file size, `EISDIR` on a directory, `EINVAL` on other non-regular
    /// files.
    pub size: Option<u64>,
    /// New access time.
    pub atime: Option<SetTime>,
    /// New modification time.
    pub mtime: Option<SetTime>,
    /// Leave ctime alone: an access-time update on a read (`touch_atime`),
    /// not a change of the inode.
    pub no_ctime: bool,
}

/// One directory entry as `readdir` yields it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's inode.
    pub ino: Ino,
    /// Its type bits (`S_IFMT` part of the mode; `d_type` derives from it).
    pub file_type: u32,
    /// Its name (`.` and `..` included).
    pub name: Vec<u8>,
    /// This entry's own cookie: where a listing that stops before it
    /// resumes (`.` is 0, `..` is 1).
    pub pos: u64,
    /// The cookie to resume after this entry (`d_off`): stable across
    /// concurrent creates and unlinks of other entries.
    pub next: u64,
}

/// File-system-wide figures (`statfs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatFs {
    /// Block size.
    pub bsize: u64,
    /// Total blocks (0: unlimited).
    pub blocks: u64,
    /// Free blocks.
    pub bfree: u64,
    /// Total inodes (0: unlimited).
    pub files: u64,
    /// Free inodes.
    pub ffree: u64,
    /// Maximum name length.
    pub namemax: u64,
}

/// What a file system tells the VFS about itself, once, when it is mounted
/// (the superblock's `s_maxbytes`, `s_blocksize`, the name length its
/// `lookup` enforces, …). Generic code reads these from the superblock and
/// never assumes a particular file system's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FsLimits {
    /// The longest name a directory entry may have (`NAME_MAX`, 255 on
    /// tmpfs); longer names fail with `ENAMETOOLONG` before the file system
    /// is asked.
    pub name_max: usize,
    /// The largest file size (`s_maxbytes`): writes and `fallocate` reaching
    /// past it fail with `EFBIG`.
    pub max_file_size: u64,
    /// The directory position a listing rests at once it has reached the
    /// end (tmpfs's `DIR_OFFSET_EOD`): entries created later are not listed
    /// by the same open directory.
    pub dir_offset_eod: u64,
    /// `stx_attributes_mask`: the `STATX_ATTR_*` bits this file system can
    /// report.
    pub statx_attributes_mask: u64,
    /// The block size (`s_blocksize`, `f_bsize`).
    pub block_size: u32,
}

/// A file system's own object for one inode, held by the cached inode
/// from its fill to its eviction (Linux's `i_private`, or the
/// `shmem_inode_info` around a tmpfs `struct inode`): with it the file
/// system reaches its inode without searching a table by number. One word,
/// so the cached inode stores it in one atomic pointer; type-erased, so
/// only the file system that made it may read it (see
/// [`FileSystem::inode_data`]). Not dropped on its own: whoever holds one
/// hands it back to its file system ([`FileSystem::release_data`]). One
/// dropped instead leaks its inode (the reference it holds is never let
/// go); in test and debug builds that drop panics, so the leak is loud.
#[derive(Debug)]
#[must_use = "an InodeData holds a reference: hand it back with FileSystem::release_data"]
pub struct InodeData(std::ptr::NonNull<()>);

#[cfg(any(test, debug_assertions))]
impl Drop for InodeData {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!(
                "an InodeData was dropped, not handed back (FileSystem::release_data): its inode leaks"
            );
        }
    }
}

// SAFETY: an `InodeData` is an `Arc<T>` with `T: Send + Sync` (see
// `from_arc`), which is itself `Send` and `Sync`.
unsafe impl Send for InodeData {}
// SAFETY: as above.
unsafe impl Sync for InodeData {}

impl InodeData {
    /// Wraps one reference of `a`.
    pub fn from_arc<T: Send + Sync + 'static>(a: Arc<T>) -> InodeData {
        let p = Arc::into_raw(a).cast_mut().cast::<()>();
        // SAFETY: `Arc::into_raw` never returns null.
        InodeData(unsafe { std::ptr::NonNull::new_unchecked(p) })
    }

    /// Unwraps the reference.
    ///
    /// # Safety
    /// `self` was made by [`from_arc`](Self::from_arc) with this `T`.
    pub unsafe fn into_arc<T>(self) -> Arc<T> {
        let p = self.into_raw();
        // SAFETY: the pointer came from `Arc::<T>::into_raw` (the caller's
        // promise) and its reference is the one `self` owned.
        unsafe { Arc::from_raw(p.cast::<T>().cast_const()) }
    }

    /// Borrows the object, for as long as `self` holds its reference.
    pub(crate) fn borrow(&self) -> DataRef<'_> {
        // SAFETY: `self` holds the reference for the borrow's life.
        unsafe { DataRef::new(self.0) }
    }

    /// The raw pointer, for the cached inode's slot.
    pub(crate) fn into_raw(self) -> *mut () {
        // The reference goes with the pointer: no drop (see the type).
        std::mem::ManuallyDrop::new(self).0.as_ptr()
    }

    /// Takes back a pointer given up by [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `p` came from `into_raw`, and the caller transfers its reference.
    pub(crate) unsafe fn from_raw(p: std::ptr::NonNull<()>) -> InodeData {
        InodeData(p)
    }
}

/// A borrowed [`InodeData`], alive as long as the cached inode's
/// reference the VFS holds for the call.
#[derive(Clone, Copy, Debug)]
pub struct DataRef<'a>(std::ptr::NonNull<()>, std::marker::PhantomData<&'a ()>);

impl<'a> DataRef<'a> {
    /// Borrows the raw pointer of an [`InodeData`] held elsewhere.
    ///
    /// # Safety
    /// `p` is an [`InodeData`]'s pointer whose reference stays held for `'a`.
    pub(crate) unsafe fn new(p: std::ptr::NonNull<()>) -> DataRef<'a> {
        DataRef(p, std::marker::PhantomData)
    }

    /// The raw pointer (for the path cache to record, `Pinned`).
    pub(crate) fn as_ptr(self) -> std::ptr::NonNull<()> {
        self.0
    }

    /// The object.
    ///
    /// # Safety
    /// The data was made by [`InodeData::from_arc`] with this `T`.
    pub unsafe fn get<T>(self) -> &'a T {
        // SAFETY: the caller's promise, and the reference held for `'a`.
        unsafe { &*self.0.as_ptr().cast::<T>().cast_const() }
    }
}

/// An inode as the VFS names it to the file system's `*_node` methods: its
/// number and, when the file system gave the cached inode an
/// [`InodeData`], that object.
#[derive(Clone, Copy, Debug)]
pub struct Node<'a> {
    /// The inode number.
    pub ino: Ino,
    /// The file system's object for it, if it gave one.
    pub data: Option<DataRef<'a>>,
}

impl From<Ino> for Node<'_> {
    fn from(ino: Ino) -> Self {
        Node { ino, data: None }
    }
}

/// An inode a lookup or create found or made: its attributes and the file
/// system's object for the cached inode.
pub type Found = (Attr, Option<InodeData>);

/// Where `seek_data_hole` looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seek {
    /// The next offset at or after `off` holding data (`SEEK_DATA`).
    Data,
    /// The next offset at or after `off` in a hole, or the size (`SEEK_HOLE`).
    Hole,
}

/// A file system, in inode numbers. Methods are called concurrently from
/// many threads; a file system serializes what it must internally.
///
/// Errors are Linux's for the same situation on the same file system (the
/// VFS checks permissions and path syntax before calling).
pub trait FileSystem: Send + Sync + std::any::Any {
    /// The root directory's inode.
    fn root(&self) -> Ino;

    /// The file system's limits, read once when it is mounted.
    fn limits(&self) -> FsLimits;

    /// The child `name` of directory `dir` (`ENOENT`, `ENOTDIR`).
    fn lookup(&self, dir: Ino, name: &[u8]) -> Result<Attr, Errno>;

    /// An inode's attributes (`ESTALE` if it no longer exists).
    fn getattr(&self, ino: Ino) -> Result<Attr, Errno>;

    /// Changes attributes; returns the new ones.
    fn setattr(&self, ino: Ino, set: &SetAttr) -> Result<Attr, Errno>;

    /// Creates a regular file `name` in `dir` (`EEXIST`, `ENOSPC`).
    /// Stamps the new inode's times and the directory's mtime and ctime.
    fn create(&self, dir: Ino, name: &[u8], new: NewInode) -> Result<Attr, Errno>;

    /// Creates a special file `name` in `dir` (`mknod`): a FIFO, a socket,
    /// or a character or block device node for `rdev` (0 for the others).
    /// The VFS has checked the type and `CAP_MKNOD`. A file system that
    /// cannot hold special files refuses with `EPERM` (the default; Linux's
    /// answer when a directory has no `mknod` operation).
    fn mknod(&self, _dir: Ino, _name: &[u8], _new: NewInode, _rdev: u64) -> Result<Attr, Errno> {
        Err(Errno::EPERM)
    }

    /// Creates a directory (link counts: 2 for it, +1 for `dir`).
    fn mkdir(&self, dir: Ino, name: &[u8], new: NewInode) -> Result<Attr, Errno>;

    /// Creates a symlink to `target` (`ENAMETOOLONG` past 4095 bytes).
    fn symlink(&self, dir: Ino, name: &[u8], target: &[u8], new: NewInode) -> Result<Attr, Errno>;

    /// Creates an unnamed regular file in `dir` with link count 0
    /// (`O_TMPFILE`); it lives until [`evict`](Self::evict) or a `link`.
    fn tmpfile(&self, dir: Ino, new: NewInode) -> Result<Attr, Errno>;

    /// Adds the name `name` in `dir` for `ino` (`EEXIST`, `EMLINK`; linking an
    /// unnamed tmpfile gives it its first name).
    fn link(&self, ino: Ino, dir: Ino, name: &[u8]) -> Result<Attr, Errno>;

    /// Removes the non-directory `name` from `dir` (`EISDIR` on a
    /// directory). The inode lives on while the VFS holds it (open files):
    /// it is freed at [`evict`](Self::evict) once its link count is zero.
    fn unlink(&self, dir: Ino, name: &[u8]) -> Result<(), Errno>;

    /// Removes the empty directory `name` (`ENOTEMPTY`, `ENOTDIR`).
    fn rmdir(&self, dir: Ino, name: &[u8]) -> Result<(), Errno>;

    /// Renames, with `RENAME_NOREPLACE` and `RENAME_EXCHANGE` (`EEXIST`,
    /// `ENOTEMPTY`, `EISDIR`, `ENOTDIR`, `EINVAL` for moving a directory
    /// into itself). A failed rename changes nothing.
    fn rename(
        &self,
        odir: Ino,
        oname: &[u8],
        ndir: Ino,
        nname: &[u8],
        flags: u32,
    ) -> Result<(), Errno>;

    /// `rename` with `RENAME_WHITEOUT` in `flags` (and maybe
    /// `RENAME_NOREPLACE`): the same rename, and in the same step a
    /// whiteout `whiteout` (a character device 0/0) takes the old name in
    /// `odir`. Returns the whiteout's attributes. A file system without
    /// whiteouts refuses with `EINVAL` (the default; Linux's answer from a
    /// file system whose rename does not know the flag).
    fn rename_whiteout(
        &self,
        _odir: Ino,
        _oname: &[u8],
        _ndir: Ino,
        _nname: &[u8],
        _flags: u32,
        _whiteout: NewInode,
    ) -> Result<Attr, Errno> {
        Err(Errno::EINVAL)
    }

    /// A symlink's target.
    fn readlink(&self, ino: Ino) -> Result<Vec<u8>, Errno>;

    /// Reads at `off` into `buf`; returns the bytes read (0 at or past EOF;
    /// holes read as zeros). Does not touch atime (the VFS decides).
    fn read(&self, ino: Ino, off: u64, buf: &mut [u8]) -> Result<usize, Errno>;

    /// Writes `data` at `off`, extending the file; returns the bytes written.
    /// Past the space limit it writes what fits and returns that count, or
    /// `ENOSPC` if nothing fits; `EFBIG` at the maximum file size. Stamps
    /// mtime and ctime.
    fn write(&self, ino: Ino, off: u64, data: &[u8]) -> Result<usize, Errno>;

    /// `fallocate` with mode 0, `KEEP_SIZE`, or `PUNCH_HOLE | KEEP_SIZE`
    /// (`EOPNOTSUPP` for other modes).
    fn fallocate(&self, ino: Ino, mode: u32, off: u64, len: u64) -> Result<(), Errno>;

    /// `SEEK_DATA` / `SEEK_HOLE` (`ENXIO` at or past the size). A result
    /// that is negative as an `i64` is returned by lseek(2) as it is,
    /// without moving the file position (Linux's tmpfs does so for a hole
    /// reached at the last page below 2^63).
    fn seek_data_hole(&self, ino: Ino, off: u64, whence: Seek) -> Result<u64, Errno>;

    /// Lists `dir` from `cookie` (0: the start, `.` and `..` first), calling
    /// `emit` for each entry until it returns false.
    fn readdir(
        &self,
        dir: Ino,
        cookie: u64,
        emit: &mut dyn FnMut(&DirEntry) -> bool,
    ) -> Result<(), Errno>;

    /// File-system-wide figures.
    fn statfs(&self) -> StatFs;

    /// The value of the extended attribute `name` (full, with its
    /// namespace prefix): `ENODATA` if it has none, `EOPNOTSUPP` for a
    /// namespace the file system does not hold (the default: no xattrs),
    /// `EINVAL` for a bare prefix. The VFS has checked the caller's
    /// permission (`xattr_permission`).
    fn getxattr(&self, _ino: Ino, _name: &[u8]) -> Result<Vec<u8>, Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Sets (`Some`) or removes (`None`) the extended attribute `name`,
    /// with `XATTR_CREATE` (`EEXIST` if it exists) and `XATTR_REPLACE`
    /// (`ENODATA` if it does not; a removal passes it), stamping ctime on
    /// success; errors as [`getxattr`](Self::getxattr), `ENOSPC`.
    fn setxattr(
        &self,
        _ino: Ino,
        _name: &[u8],
        _value: Option<&[u8]>,
        _flags: i32,
    ) -> Result<(), Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Every extended attribute name the inode has, `trusted.*` included
    /// (the VFS hides those from callers without `CAP_SYS_ADMIN`); none by
    /// default.
    fn listxattr(&self, _ino: Ino) -> Result<Vec<Vec<u8>>, Errno> {
        Ok(Vec::new())
    }

    /// The inode's POSIX ACL of type `ty` (`None`: it has none).
    /// `EOPNOTSUPP` where the file system (the default) or the inode
    /// (tmpfs: a symlink) holds no ACLs. [`listxattr`](Self::listxattr)
    /// lists the ACL names of the ACLs present, as Linux's tmpfs does.
    fn get_acl(&self, _ino: Ino, _ty: AclType) -> Result<Option<Arc<PosixAcl>>, Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// Sets (`Some`) or removes (`None`) the inode's ACL of type `ty`, and
    /// with `mode` (an access ACL's `posix_acl_update_mode`, decided by the
    /// VFS) the new permission bits, in one step; stamps ctime; returns
    /// the new attributes. The VFS has checked ownership and validity.
    /// `EOPNOTSUPP` as [`get_acl`](Self::get_acl).
    fn set_acl(
        &self,
        _ino: Ino,
        _ty: AclType,
        _acl: Option<Arc<PosixAcl>>,
        _mode: Option<u32>,
    ) -> Result<Attr, Errno> {
        Err(Errno::EOPNOTSUPP)
    }

    /// The file's seals (`F_GET_SEALS`); `EINVAL` for a file that cannot
    /// be sealed (the default: only tmpfs's regular files can).
    fn get_seals(&self, _ino: Ino) -> Result<u32, Errno> {
        Err(Errno::EINVAL)
    }

    /// Adds seals (`F_ADD_SEALS`), once the VFS has checked the fd's mode,
    /// the bits and that `F_SEAL_SEAL` is not set; `EINVAL` by default.
    fn add_seals(&self, _ino: Ino, _seals: u32) -> Result<(), Errno> {
        Err(Errno::EINVAL)
    }

    /// A kernel file holding regular file `ino`'s data, opened anew with
    /// access mode `accmode` (`O_RDONLY`, `O_WRONLY` or `O_RDWR`, as the
    /// open file being mapped) and close-on-exec, for a program to
    /// `mmap(2)`: the kernel then checks the mapping against that mode as
    /// it would the file's. Writes through a shared mapping are the file's
    /// data at once. `ENODEV` by default (a file system the kernel cannot
    /// map).
    fn mmap_file(&self, _ino: Ino, _accmode: i32) -> Result<std::os::fd::OwnedFd, Errno> {
        Err(Errno::ENODEV)
    }

    /// The object the cached inode of `ino` keeps (see [`InodeData`]);
    /// `None` (the default) for a file system that has none. A file
    /// system that returns one must read every [`DataRef`] it is handed as
    /// the type it made, and take each back in
    /// [`release_data`](Self::release_data). `ESTALE` inodes give `None`.
    fn inode_data(&self, _ino: Ino) -> Option<InodeData> {
        None
    }

    /// Takes back an [`InodeData`] this file system made for `ino`: the
    /// cached inode was evicted (after [`evict`](Self::evict)), or the VFS
    /// did not need it. The default drops nothing (a file system that
    /// makes none gets none back).
    fn release_data(&self, _ino: Ino, _data: InodeData) {}

    /// [`lookup`](Self::lookup) in the directory `dir`, with the found
    /// inode's object.
    fn lookup_node(&self, dir: Node<'_>, name: &[u8]) -> Result<Found, Errno> {
        self.lookup(dir.ino, name).map(|a| (a, None))
    }

    /// [`mknod`](Self::mknod) in `dir`, with the new inode's object.
    fn mknod_node(
        &self,
        dir: Node<'_>,
        name: &[u8],
        new: NewInode,
        rdev: u64,
    ) -> Result<Found, Errno> {
        self.mknod(dir.ino, name, new, rdev).map(|a| (a, None))
    }

    /// [`mkdir`](Self::mkdir) in `dir`, with the new inode's object.
    fn mkdir_node(&self, dir: Node<'_>, name: &[u8], new: NewInode) -> Result<Found, Errno> {
        self.mkdir(dir.ino, name, new).map(|a| (a, None))
    }

    /// [`symlink`](Self::symlink) in `dir`, with the new inode's object.
    fn symlink_node(
        &self,
        dir: Node<'_>,
        name: &[u8],
        target: &[u8],
        new: NewInode,
    ) -> Result<Found, Errno> {
        self.symlink(dir.ino, name, target, new).map(|a| (a, None))
    }

    /// [`tmpfile`](Self::tmpfile) in `dir`, with the new inode's object.
    fn tmpfile_node(&self, dir: Node<'_>, new: NewInode) -> Result<Found, Errno> {
        self.tmpfile(dir.ino, new).map(|a| (a, None))
    }

    /// [`link`](Self::link) of `n` into `dir`.
    fn link_node(&self, n: Node<'_>, dir: Node<'_>, name: &[u8]) -> Result<Attr, Errno> {
        self.link(n.ino, dir.ino, name)
    }

    /// [`rename`](Self::rename) of `oname` in `odir` to `nname` in
    /// `ndir`, or with `whiteout` (`RENAME_WHITEOUT` in `flags`, and only
    /// then) [`rename_whiteout`](Self::rename_whiteout), whose new inode
    /// is returned with its object.
    fn rename_node(
        &self,
        odir: Node<'_>,
        oname: &[u8],
        ndir: Node<'_>,
        nname: &[u8],
        flags: u32,
        whiteout: Option<NewInode>,
    ) -> Result<Option<Found>, Errno> {
        let (od, nd) = (odir.ino, ndir.ino);
        match whiteout {
            Some(wo) => self
                .rename_whiteout(od, oname, nd, nname, flags, wo)
                .map(|a| Some((a, None))),
            None => self.rename(od, oname, nd, nname, flags).map(|()| None),
        }
    }

    /// [`fallocate`](Self::fallocate) of `n`.
    fn fallocate_node(&self, n: Node<'_>, mode: u32, off: u64, len: u64) -> Result<(), Errno> {
        self.fallocate(n.ino, mode, off, len)
    }

    /// [`seek_data_hole`](Self::seek_data_hole) of `n`.
    fn seek_data_hole_node(&self, n: Node<'_>, off: u64, whence: Seek) -> Result<u64, Errno> {
        self.seek_data_hole(n.ino, off, whence)
    }

    /// [`readlink`](Self::readlink) of `n`.
    fn readlink_node(&self, n: Node<'_>) -> Result<Vec<u8>, Errno> {
        self.readlink(n.ino)
    }

    /// [`get_seals`](Self::get_seals) of `n`.
    fn get_seals_node(&self, n: Node<'_>) -> Result<u32, Errno> {
        self.get_seals(n.ino)
    }

    /// [`mmap_file`](Self::mmap_file) of `n`.
    fn mmap_file_node(&self, n: Node<'_>, accmode: i32) -> Result<std::os::fd::OwnedFd, Errno> {
        self.mmap_file(n.ino, accmode)
    }

    /// [`getxattr`](Self::getxattr) of `n`.
    fn getxattr_node(&self, n: Node<'_>, name: &[u8]) -> Result<Vec<u8>, Errno> {
        self.getxattr(n.ino, name)
    }

    /// [`setxattr`](Self::setxattr) of `n`.
    fn setxattr_node(
        &self,
        n: Node<'_>,
        name: &[u8],
        value: Option<&[u8]>,
        flags: i32,
    ) -> Result<(), Errno> {
        self.setxattr(n.ino, name, value, flags)
    }

    /// [`listxattr`](Self::listxattr) of `n`.
    fn listxattr_node(&self, n: Node<'_>) -> Result<Vec<Vec<u8>>, Errno> {
        self.listxattr(n.ino)
    }

    /// [`get_acl`](Self::get_acl) of `n`.
    fn get_acl_node(&self, n: Node<'_>, ty: AclType) -> Result<Option<Arc<PosixAcl>>, Errno> {
        self.get_acl(n.ino, ty)
    }

    /// [`set_acl`](Self::set_acl) of `n`.
    fn set_acl_node(
        &self,
        n: Node<'_>,
        ty: AclType,
        acl: Option<Arc<PosixAcl>>,
        mode: Option<u32>,
    ) -> Result<Attr, Errno> {
        self.set_acl(n.ino, ty, acl, mode)
    }

    /// [`unlink`](Self::unlink) of `name` in `dir`, which the VFS found
    /// to be `victim` (the file system may check that it still is).
    fn unlink_node(&self, dir: Node<'_>, victim: Node<'_>, name: &[u8]) -> Result<(), Errno> {
        let _ = victim;
        self.unlink(dir.ino, name)
    }

    /// [`rmdir`](Self::rmdir) of `name` in `dir`, found to be `victim`.
    fn rmdir_node(&self, dir: Node<'_>, victim: Node<'_>, name: &[u8]) -> Result<(), Errno> {
        let _ = victim;
        self.rmdir(dir.ino, name)
    }

    /// [`evict`](Self::evict), with the object the cached inode held,
    /// which this call takes back (the default: `evict`, then
    /// [`release_data`](Self::release_data)).
    fn evict_node(&self, ino: Ino, data: Option<InodeData>) {
        self.evict(ino);
        if let Some(d) = data {
            self.release_data(ino, d);
        }
    }

    /// [`getattr`](Self::getattr) of `n`.
    fn getattr_node(&self, n: Node<'_>) -> Result<Attr, Errno> {
        self.getattr(n.ino)
    }

    /// [`getattr_node`](Self::getattr_node) of a node the caller reached
    /// without a reference, inside a reclaim pin (`stat` answered by the
    /// path cache, `FastPaths::stat_noref`): `n.data` may belong to an
    /// inode being evicted meanwhile. A file system answers only if it
    /// frees the objects it hands out after a grace period (so each
    /// outlives the caller's pin) and can read the attributes without
    /// waiting; `None` (the default) sends the caller the usual way.
    fn getattr_pinned(&self, n: Node<'_>) -> Option<Attr> {
        let _ = n;
        None
    }

    /// [`setattr`](Self::setattr) of `n`.
    fn setattr_node(&self, n: Node<'_>, set: &SetAttr) -> Result<Attr, Errno> {
        self.setattr(n.ino, set)
    }

    /// [`create`](Self::create) in `dir`, with the new inode's object.
    fn create_node(&self, dir: Node<'_>, name: &[u8], new: NewInode) -> Result<Found, Errno> {
        self.create(dir.ino, name, new).map(|a| (a, None))
    }

    /// [`read`](Self::read) of `n`.
    fn read_node(&self, n: Node<'_>, off: u64, buf: &mut [u8]) -> Result<usize, Errno> {
        self.read(n.ino, off, buf)
    }

    /// [`write`](Self::write) to `n`.
    fn write_node(&self, n: Node<'_>, off: u64, data: &[u8]) -> Result<usize, Errno> {
        self.write(n.ino, off, data)
    }

    /// `FastPaths::write_one_lock`: a write of `data` to `n` decided and
    /// done wholly under the file system's own lock of the inode, for a
    /// caller that holds no VFS inode lock: at `off`, or at the end of
    /// file when `off` is `None` (`O_APPEND`: the size read under the same
    /// lock as the write). `None` when the caller must take the locked way
    /// instead: a file whose mode has a set-ID bit (a write may have to
    /// drop it, which the VFS does under its inode lock), an offset at or
    /// past the largest file size (the locked way reports `EFBIG` in its
    /// order), an empty `data`, a file that is not a regular file whose
    /// data the file system holds itself. `Some(Ok((at, n, moved)))`: `n`
    /// bytes written at offset `at`, mtime and ctime stamped as
    /// [`write_node`](Self::write_node) stamps them; `moved` is false only
    /// when the file system knows the write left mtime and ctime as they
    /// were (the same clock tick as the last stamp), so the caller has no
    /// change to note for `relatime`. The default answers `None` always.
    fn write_one_lock(
        &self,
        n: Node<'_>,
        off: Option<u64>,
        data: &[u8],
    ) -> Option<Result<(u64, usize, bool), Errno>> {
        let _ = (n, off, data);
        None
    }

    /// [`readdir`](Self::readdir) of `dir`.
    fn readdir_node(
        &self,
        dir: Node<'_>,
        cookie: u64,
        emit: &mut dyn FnMut(&DirEntry) -> bool,
    ) -> Result<(), Errno> {
        self.readdir(dir.ino, cookie, emit)
    }

    /// The VFS dropped its last in-memory reference to `ino` (the inode
    /// cache evicted it, or its last open file closed). A file system frees
    /// an inode whose link count is zero here; others stay stored. The VFS
    /// holds every inode it unlinks, removes or renames over (it looked it
    /// up first), so an unlinked inode always gets its `evict`.
    fn evict(&self, ino: Ino);
}

#[cfg(test)]
mod tests {
    use super::InodeData;
    use std::sync::Arc;

    /// An `InodeData` dropped instead of handed back (`release_data`)
    /// panics in test builds (the reference it holds would leak), and one
    /// taken back with `into_arc` does not.
    #[test]
    fn a_dropped_inode_data_panics() {
        let a = Arc::new(7u32);
        let d = InodeData::from_arc(a.clone());
        let p = d.borrow().as_ptr();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(d)));
        let msg = r.expect_err("a dropped InodeData must panic");
        let msg = msg.downcast_ref::<&str>().copied().unwrap_or_default();
        assert!(msg.contains("not handed back"), "{msg}");
        assert_eq!(
            Arc::strong_count(&a),
            2,
            "the dropped one's reference is still held"
        );
        // SAFETY: `p` is the dropped `InodeData`'s pointer, from
        // `Arc::<u32>::into_raw`; its reference was never let go (the drop
        // panicked first), so it is taken back here once.
        drop(unsafe { Arc::from_raw(p.as_ptr().cast::<u32>().cast_const()) });
        // Handed back: no panic, the count back to one.
        // SAFETY: made by `from_arc` with an `Arc<u32>` just above.
        drop(unsafe { InodeData::from_arc(a.clone()).into_arc::<u32>() });
        assert_eq!(Arc::strong_count(&a), 1);
    }
}
