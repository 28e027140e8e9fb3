//! What the stat family and `getdents64` return: `struct stat`, `struct
//! statx` and `struct linux_dirent64`, with the field names and layout of
//! x86-64 Linux, built from a file system's [`Attr`].

use crate::fs::{Attr, S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};
use crate::uapi::{DT_BLK, DT_CHR, DT_DIR, DT_FIFO, DT_LNK, DT_REG, DT_SOCK, DT_UNKNOWN};

/// `struct stat` (x86-64 field names and types).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Stat {
    pub st_dev: u64,
    pub st_ino: u64,
    pub st_nlink: u64,
    pub st_mode: u32,
    pub st_uid: u32,
    pub st_gid: u32,
    pub st_rdev: u64,
    pub st_size: i64,
    pub st_blksize: i64,
    pub st_blocks: i64,
    pub st_atime: i64,
    pub st_atime_nsec: i64,
    pub st_mtime: i64,
    pub st_mtime_nsec: i64,
    pub st_ctime: i64,
    pub st_ctime_nsec: i64,
}

/// A device number from its major and minor numbers, as glibc's
/// `makedev` encodes them in a 64-bit `dev_t` (what `st_rdev` holds and
/// `mknod` takes).
pub const fn makedev(major: u32, minor: u32) -> u64 {
    let (ma, mi) = (major as u64, minor as u64);
    ((ma & 0xffff_f000) << 32) | ((ma & 0xfff) << 8) | ((mi & 0xffff_ff00) << 12) | (mi & 0xff)
}

/// The major number of a `dev_t` (glibc's `major`).
pub const fn major(dev: u64) -> u32 {
    (((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)) as u32
}

/// The minor number of a `dev_t` (glibc's `minor`).
pub const fn minor(dev: u64) -> u32 {
    (((dev >> 12) & 0xffff_ff00) | (dev & 0xff)) as u32
}

impl Stat {
    /// The `stat` of an inode with attributes `a` on device `dev`.
    #[inline]
    pub fn from_attr(a: &Attr, dev: u64) -> Stat {
        Stat {
            st_dev: dev,
            st_ino: a.ino,
            st_nlink: u64::from(a.nlink),
            st_mode: a.mode,
            st_uid: a.uid,
            st_gid: a.gid,
            st_rdev: a.rdev,
            st_size: a.size as i64,
            st_blksize: i64::from(a.blksize),
            st_blocks: a.blocks as i64,
            st_atime: a.atime.sec,
            st_atime_nsec: i64::from(a.atime.nsec),
            st_mtime: a.mtime.sec,
            st_mtime_nsec: i64::from(a.mtime.nsec),
            st_ctime: a.ctime.sec,
            st_ctime_nsec: i64::from(a.ctime.nsec),
        }
    }
}

/// `struct statx_timestamp`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct StatxTimestamp {
    pub tv_sec: i64,
    pub tv_nsec: u32,
}

/// `struct statx` (the fields Linux 6.18 fills for tmpfs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Statx {
    pub stx_mask: u32,
    pub stx_blksize: u32,
    pub stx_attributes: u64,
    pub stx_nlink: u32,
    pub stx_uid: u32,
    pub stx_gid: u32,
    pub stx_mode: u16,
    pub stx_ino: u64,
    pub stx_size: u64,
    pub stx_blocks: u64,
    pub stx_attributes_mask: u64,
    pub stx_atime: StatxTimestamp,
    pub stx_btime: StatxTimestamp,
    pub stx_ctime: StatxTimestamp,
    pub stx_mtime: StatxTimestamp,
    pub stx_rdev_major: u32,
    pub stx_rdev_minor: u32,
    pub stx_dev_major: u32,
    pub stx_dev_minor: u32,
    pub stx_mnt_id: u64,
}

fn ts(t: crate::fs::Timespec) -> StatxTimestamp {
    StatxTimestamp {
        tv_sec: t.sec,
        tv_nsec: t.nsec,
    }
}

impl Statx {
    /// The `statx` of an inode with every field filled; the caller
    /// ([`Process::statx`](crate::Process::statx)) narrows the result mask
    /// and clears what tmpfs does not report for the mask asked.
    pub fn from_attr(a: &Attr, dev: u64, mnt_id: u64, mount_root: bool) -> Statx {
        Statx {
            stx_mask: crate::uapi::STATX_BASIC_STATS
                | crate::uapi::STATX_BTIME
                | crate::uapi::STATX_MNT_ID,
            stx_blksize: a.blksize,
            stx_attributes: if mount_root {
                crate::uapi::STATX_ATTR_MOUNT_ROOT
            } else {
                0
            },
            stx_nlink: a.nlink,
            stx_uid: a.uid,
            stx_gid: a.gid,
            stx_mode: a.mode as u16,
            stx_ino: a.ino,
            stx_size: a.size,
            stx_blocks: a.blocks,
            stx_attributes_mask: crate::uapi::STATX_ATTR_MOUNT_ROOT,
            stx_atime: ts(a.atime),
            stx_btime: ts(a.btime),
            stx_ctime: ts(a.ctime),
            stx_mtime: ts(a.mtime),
            stx_rdev_major: major(a.rdev),
            stx_rdev_minor: minor(a.rdev),
            stx_dev_major: (dev >> 8) as u32,
            stx_dev_minor: (dev & 0xff) as u32,
            stx_mnt_id: mnt_id,
        }
    }
}

/// The `d_type` of a file type.
pub fn d_type(file_type: u32) -> u8 {
    match file_type & S_IFMT {
        S_IFDIR => DT_DIR,
        S_IFREG => DT_REG,
        S_IFLNK => DT_LNK,
        S_IFIFO => DT_FIFO,
        S_IFCHR => DT_CHR,
        S_IFBLK => DT_BLK,
        S_IFSOCK => DT_SOCK,
        _ => DT_UNKNOWN,
    }
}

/// The size of a `linux_dirent64` record for a name of `len` bytes.
pub fn dirent64_reclen(len: usize) -> usize {
    (19 + len + 1).next_multiple_of(8)
}

/// Appends a `linux_dirent64` record to `buf` at `at`; false if it does not
/// fit.
pub fn put_dirent64(buf: &mut [u8], at: usize, ino: u64, off: i64, dtype: u8, name: &[u8]) -> bool {
    let reclen = dirent64_reclen(name.len());
    let Some(rec) = buf.get_mut(at..at + reclen) else {
        return false;
    };
    rec.fill(0);
    rec[0..8].copy_from_slice(&ino.to_ne_bytes());
    rec[8..16].copy_from_slice(&off.to_ne_bytes());
    rec[16..18].copy_from_slice(&(reclen as u16).to_ne_bytes());
    rec[18] = dtype;
    rec[19..19 + name.len()].copy_from_slice(name);
    true
}

/// One decoded `linux_dirent64` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dirent64 {
    /// Inode number.
    pub d_ino: u64,
    /// Cookie of the next entry.
    pub d_off: i64,
    /// Type (`DT_*`).
    pub d_type: u8,
    /// Name.
    pub name: Vec<u8>,
}

/// Decodes the records `getdents64` wrote into `buf[..len]`.
pub fn parse_dirents64(buf: &[u8]) -> Vec<Dirent64> {
    Dirents64::new(buf).map(|d| d.to_dirent64()).collect()
}

/// One `linux_dirent64` record with its name borrowed from the buffer
/// `getdents64` filled (what glibc's `readdir` hands out: a pointer into
/// its buffer, valid until the next call), beside the owning [`Dirent64`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dirent64Ref<'a> {
    /// Inode number.
    pub d_ino: u64,
    /// Cookie of the next entry.
    pub d_off: i64,
    /// Type (`DT_*`).
    pub d_type: u8,
    /// Name, without its terminating NUL.
    pub name: &'a [u8],
}

impl Dirent64Ref<'_> {
    /// The entry with its name copied.
    pub fn to_dirent64(&self) -> Dirent64 {
        Dirent64 {
            d_ino: self.d_ino,
            d_off: self.d_off,
            d_type: self.d_type,
            name: self.name.to_vec(),
        }
    }
}

/// The records of a buffer `getdents64` filled, decoded one at a time
/// without allocating: see [`Dirents64::new`].
#[derive(Clone, Debug)]
pub struct Dirents64<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Dirents64<'a> {
    /// The records in `buf` (the first `n` bytes `getdents64` returned). A
    /// truncated or malformed record ends the sequence.
    pub fn new(buf: &'a [u8]) -> Dirents64<'a> {
        Dirents64 { buf, at: 0 }
    }

    /// Where the next record starts in the buffer.
    pub fn offset(&self) -> usize {
        self.at
    }
}

impl<'a> Iterator for Dirents64<'a> {
    type Item = Dirent64Ref<'a>;

    fn next(&mut self) -> Option<Dirent64Ref<'a>> {
        let buf = self.buf;
        let at = self.at;
        let rec = buf.get(at..at.checked_add(19)?)?;
        let reclen = u16::from_ne_bytes([rec[16], rec[17]]) as usize;
        if reclen < 20 || at + reclen > buf.len() {
            self.at = buf.len();
            return None;
        }
        let rec = &buf[at..at + reclen];
        let name = &rec[19..];
        let n = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        self.at = at + reclen;
        Some(Dirent64Ref {
            d_ino: u64::from_ne_bytes(rec[0..8].try_into().unwrap_or([0; 8])),
            d_off: i64::from_ne_bytes(rec[8..16].try_into().unwrap_or([0; 8])),
            d_type: rec[18],
            name: &name[..n],
        })
    }
}
