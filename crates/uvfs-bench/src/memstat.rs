//! This process's memory, as the lab reads it: the resident set (from
//! `/proc/self/statm`) and the bytes glibc's allocator has handed out and
//! not had back (`mallinfo2`). The resident set is what a user pays; the
//! heap count is what finds a leak, because it moves by the bytes
//! allocated, not by the pages the allocator happens to touch or return.

/// Resident bytes of this process (from /proc/self/statm).
pub fn rss_bytes() -> Result<u64, String> {
    let s = std::fs::read_to_string("/proc/self/statm").map_err(|e| format!("statm: {e}"))?;
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or("statm: no resident field")?;
    // SAFETY: sysconf has no memory effects.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Ok(pages * u64::try_from(page).unwrap_or(4096))
}

/// Bytes glibc's allocator has handed out and not had back: its arenas'
/// chunks in use plus its mmapped blocks. Chunks parked in a thread's
/// tcache count as in use (a bounded few per size).
pub fn heap_bytes() -> u64 {
    // SAFETY: mallinfo2 only reads the allocator's statistics (taking each
    // arena's lock in turn).
    let m = unsafe { libc::mallinfo2() };
    (m.uordblks + m.hblkhd) as u64
}
