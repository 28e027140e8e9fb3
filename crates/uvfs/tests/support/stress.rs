//! What the stress tests share: their length, scaled by `UVFS_STRESS_SECS`.

/// `n` scaled by `UVFS_STRESS_SECS` (default 1), at least 1.
pub fn scaled(n: u64) -> u64 {
    let f: f64 = std::env::var("UVFS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0);
    ((n as f64 * f) as u64).max(1)
}
