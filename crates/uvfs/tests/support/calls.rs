//! One call compared on the host kernel and on uvfs: its outcome as a
//! value or an errno, and the small fixtures the differential tests share.

use std::ffi::CString;
use uvfs::{Errno, FsSysctls, Process, Vfs};

/// A call's outcome: its value, or its errno.
pub type Res = Result<i64, i32>;

pub fn host(r: i64) -> Res {
    if r < 0 && r > -4096 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap())
    } else {
        Ok(r)
    }
}

pub fn ours<T: Into<i64>>(r: Result<T, Errno>) -> Res {
    r.map(Into::into).map_err(Errno::raw)
}

pub fn c(s: &str) -> CString {
    CString::new(s).unwrap()
}

pub fn is_root() -> bool {
    // SAFETY: no arguments, no effect.
    unsafe { libc::geteuid() == 0 }
}

/// A uvfs process on a fresh VFS with the host's sysctls.
pub fn proc_for(fast: uvfs::FastPaths) -> Process {
    let vfs = Vfs::builder()
        .fastpaths(fast)
        .sysctls(FsSysctls::host())
        .build();
    Process::new(&vfs).unwrap()
}
