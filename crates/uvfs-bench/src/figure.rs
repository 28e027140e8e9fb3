//! A figure measured over rounds (its median, extremes and samples), as
//! the `preload` and `fuse` sections report them.

use serde::{Deserialize, Serialize};

/// A figure over the rounds: ns per call (or per pair).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The median of `samples`.
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// One per round.
    pub samples: Vec<f64>,
}

impl Figure {
    /// The figure of `samples` (all zero when empty).
    pub fn of(samples: Vec<f64>) -> Figure {
        Figure {
            median: median(&samples),
            min: if samples.is_empty() {
                0.0
            } else {
                samples.iter().copied().fold(f64::INFINITY, f64::min)
            },
            max: samples.iter().copied().fold(0.0, f64::max),
            samples,
        }
    }

    /// `(max - min) / median`, in %.
    pub fn spread_pct(&self) -> f64 {
        if self.median > 0.0 {
            (self.max - self.min) / self.median * 100.0
        } else {
            0.0
        }
    }
}

/// The median (the mean of the two middle values for an even count; 0 for
/// none).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}
