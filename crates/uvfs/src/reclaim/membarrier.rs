//! `membarrier(2)`'s private expedited command: a full memory barrier on
//! every CPU running a thread of this process, the heavy half of the cheap
//! pin's asymmetric fence.

/// `MEMBARRIER_CMD_QUERY`: the bit mask of supported commands.
const CMD_QUERY: libc::c_int = 0;
/// `MEMBARRIER_CMD_PRIVATE_EXPEDITED`.
const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
/// `MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`.
const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

fn membarrier(cmd: libc::c_int) -> libc::c_long {
    // SAFETY: membarrier takes three integers and touches no user memory.
    unsafe {
        libc::syscall(
            libc::SYS_membarrier,
            cmd,
            0 as libc::c_uint,
            0 as libc::c_int,
        )
    }
}

/// Registers the process for the private expedited command; whether it can
/// be used (false on a kernel without it or where a sandbox refuses it).
/// Called once, when the domain is made.
pub(crate) fn register() -> bool {
    let q = membarrier(CMD_QUERY);
    q >= 0
        && q & libc::c_long::from(CMD_PRIVATE_EXPEDITED) != 0
        && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
}

/// The barrier. Registered at start-up, it fails only in a process that
/// lost the registration (a fork child, should the kernel not carry it
/// over): that registers again and retries. If it still failed the
/// readers' compiler fences would not be enough, so that aborts.
pub(crate) fn expedited() {
    if membarrier(CMD_PRIVATE_EXPEDITED) == 0 {
        return;
    }
    if membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) != 0 || membarrier(CMD_PRIVATE_EXPEDITED) != 0 {
        eprintln!("uvfs: membarrier failed after registration");
        std::process::abort();
    }
}
