//! Between uvfs's types and fuser's: errno values, times, file types, names
//! and the times of a setattr.

use fuser::{Errno as FErrno, FileType, TimeOrNow};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uvfs::Errno;
use uvfs::fs::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFSOCK};
use uvfs::uapi::Timespec;

pub(super) fn ferr(e: Errno) -> FErrno {
    FErrno::from_i32(e.raw())
}

pub(super) fn to_system_time(sec: i64, nsec: i64) -> SystemTime {
    if sec >= 0 {
        UNIX_EPOCH + Duration::new(sec as u64, nsec as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(sec.unsigned_abs()) + Duration::from_nanos(nsec as u64)
    }
}

pub(super) fn kind_of(mode: u32) -> FileType {
    match mode & S_IFMT {
        S_IFDIR => FileType::Directory,
        S_IFLNK => FileType::Symlink,
        S_IFIFO => FileType::NamedPipe,
        S_IFCHR => FileType::CharDevice,
        S_IFBLK => FileType::BlockDevice,
        S_IFSOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

pub(super) fn kind_of_dtype(t: u8) -> FileType {
    kind_of(u32::from(t) << 12)
}

pub(super) fn name_bytes(name: &OsStr) -> &[u8] {
    name.as_bytes()
}

/// The timespec utimensat takes for one time of a setattr.
pub(super) fn timespec_of(t: Option<TimeOrNow>) -> Timespec {
    match t {
        None => Timespec {
            tv_sec: 0,
            tv_nsec: uvfs::cred::UTIME_OMIT,
        },
        Some(TimeOrNow::Now) => Timespec {
            tv_sec: 0,
            tv_nsec: uvfs::cred::UTIME_NOW,
        },
        Some(TimeOrNow::SpecificTime(t)) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => Timespec {
                tv_sec: d.as_secs() as i64,
                tv_nsec: i64::from(d.subsec_nanos()),
            },
            // fuser 0.18 turns the kernel's (sec < 0, nsec) into
            // `UNIX_EPOCH - (|sec| s + nsec ns)` (its `system_time_from_time`
            // subtracts the nanoseconds instead of adding them), so a time
            // before the epoch is undone the same way: the distance's whole
            // seconds, negated, and its nanoseconds as they are. The mapping
            // is one to one, so the kernel's timespec comes back exactly
            // (mount_differential's utimensat of [-5, 3] found it).
            Err(e) => {
                let d = e.duration();
                Timespec {
                    tv_sec: -(d.as_secs() as i64),
                    tv_nsec: i64::from(d.subsec_nanos()),
                }
            }
        },
    }
}
