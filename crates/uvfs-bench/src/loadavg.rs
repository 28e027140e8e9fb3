//! The machine's load average, recorded beside every figure the lab
//! publishes (the VMs are shared: a figure without its load means little).

use serde::Serialize;

/// The load average (1, 5 and 15 minutes), from `/proc/loadavg`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct LoadAvg(pub [f64; 3]);

impl LoadAvg {
    /// Now (zeros where `/proc/loadavg` cannot be read).
    pub fn now() -> LoadAvg {
        let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        let mut v = [0.0; 3];
        for (x, w) in v.iter_mut().zip(text.split_whitespace()) {
            *x = w.parse().unwrap_or(0.0);
        }
        LoadAvg(v)
    }
}
