//! What one `reproduce` measured: its profile and budget, the seed rows,
//! uvfs against the host, the scaling points, the targets, the preload
//! section. The data model shared by [`reproduce`](crate::reproduce),
//! which fills it and prints it, and [`html`](crate::html), which draws it;
//! serialized as `reproduce.json`.

use crate::fuse::FuseReport;
use crate::peers::PeersReport;
use crate::preload::PreloadReport;
use crate::report::Machine;
use serde::Serialize;

/// How long and how steady.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A smoke test (CI): well under 30 s.
    Quick,
    /// The README's main job: under 3 minutes on 2 cores.
    Default,
    /// Longer samples and more rounds.
    Full,
}

/// The time budget of a profile.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Budget {
    /// A/B rounds per seed row (each round: one A sample, one B sample).
    pub rounds: usize,
    /// Seconds per A/B sample (one runner run).
    pub sample: f64,
    /// Warm-up seconds before each run.
    pub warmup: f64,
    /// Seconds per run in the uvfs-against-host and scaling sections.
    pub run: f64,
    /// Rounds of the preload section (each runs its four modes).
    pub preload_rounds: usize,
    /// Seconds per measurement in the preload section.
    pub preload_seconds: f64,
    /// Rounds of the FUSE section (each runs host, floor and uvfs per
    /// test).
    pub fuse_rounds: usize,
    /// Measured seconds per run in the FUSE section.
    pub fuse_seconds: f64,
    /// Rounds of the peers section.
    pub peers_rounds: usize,
    /// Seconds per cell in the peers section.
    pub peers_seconds: f64,
    /// Files of the peers section's one-directory rows.
    pub peers_files: usize,
    /// Files of its memory measurement.
    pub peers_memory_files: usize,
}

impl Profile {
    /// The profile's budget.
    pub fn budget(self) -> Budget {
        match self {
            Profile::Quick => Budget {
                rounds: 4,
                sample: 0.1,
                warmup: 0.02,
                run: 0.15,
                preload_rounds: 3,
                preload_seconds: 0.04,
                fuse_rounds: 2,
                fuse_seconds: 0.1,
                peers_rounds: 1,
                peers_seconds: 0.02,
                peers_files: 1000,
                peers_memory_files: 10_000,
            },
            Profile::Default => Budget {
                rounds: 10,
                sample: 0.3,
                warmup: 0.05,
                run: 1.0,
                preload_rounds: 5,
                preload_seconds: 0.3,
                fuse_rounds: 3,
                fuse_seconds: 0.5,
                peers_rounds: 3,
                peers_seconds: 0.1,
                peers_files: 10_000,
                // virtual-fs searches a directory linearly: 100,000 files
                // take it about a minute.
                peers_memory_files: 20_000,
            },
            Profile::Full => Budget {
                rounds: 30,
                sample: 1.0,
                warmup: 0.2,
                run: 4.0,
                preload_rounds: 9,
                preload_seconds: 0.6,
                fuse_rounds: 5,
                fuse_seconds: 1.0,
                peers_rounds: 11,
                peers_seconds: 0.25,
                peers_files: 10_000,
                peers_memory_files: 100_000,
            },
        }
    }

    /// The profile's name, as the command line spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Profile::Quick => "quick",
            Profile::Default => "default",
            Profile::Full => "full",
        }
    }
}

/// One seed row's result.
#[derive(Clone, Debug, Serialize)]
pub struct SeedResult {
    /// The seed's number.
    pub seed: String,
    /// The test.
    pub test: String,
    /// processes or threads.
    pub mode: String,
    /// What A and B count: `ops/s`, or `blogs read/s` (blogbench's read
    /// score per second).
    pub unit: String,
    /// Tasks per run.
    pub tasks: usize,
    /// The `FastPaths` switch (A: off, B: on; all others on).
    pub switch: String,
    /// The fast path in a few words.
    pub what: String,
    /// The seed's own figure.
    pub evidence: String,
    /// That figure as a change of this row's metric, B against A, % (low
    /// end), when the seed published one for this test.
    pub published_low_pct: Option<f64>,
    /// Its high end (equal to the low end for a single figure).
    pub published_high_pct: Option<f64>,
    /// A's per-round ops/s.
    pub a_samples: Vec<f64>,
    /// B's per-round ops/s.
    pub b_samples: Vec<f64>,
    /// Mean of A.
    pub a_ops_per_sec: f64,
    /// Mean of B.
    pub b_ops_per_sec: f64,
    /// B against A, %.
    pub change_pct: f64,
    /// 95 % interval of the change (normal approximation), % of A.
    pub ci_low_pct: f64,
    /// Upper end.
    pub ci_high_pct: f64,
    /// `reproduces`, `within noise` or `opposite`.
    pub verdict: String,
    /// The host kernel's ops/s for the same test, if it ran.
    pub host_ops_per_sec: Option<f64>,
    /// An error that stopped the row.
    pub error: Option<String>,
}

/// uvfs against the host for one test.
#[derive(Clone, Debug, Serialize)]
pub struct Versus {
    /// The test.
    pub test: String,
    /// uvfs (all fast paths) ops/s.
    pub uvfs_ops_per_sec: Option<f64>,
    /// Host ops/s.
    pub host_ops_per_sec: Option<f64>,
    /// The standard deviation of uvfs's samples, ops/s.
    pub uvfs_stddev: Option<f64>,
    /// The standard deviation of the host's samples, ops/s.
    pub host_stddev: Option<f64>,
    /// uvfs / host.
    pub ratio: Option<f64>,
    /// The ratio divided by 1 + its spread (one standard deviation of
    /// each side's samples, relative, combined).
    pub ratio_low: Option<f64>,
    /// The ratio multiplied by 1 + its spread.
    pub ratio_high: Option<f64>,
    /// The target ratio, if any.
    pub target: Option<f64>,
    /// Errors, if a side failed.
    pub error: Option<String>,
}

/// One point of a scaling curve.
#[derive(Clone, Debug, Serialize)]
pub struct ScalePoint {
    /// The test.
    pub test: String,
    /// host or uvfs.
    pub backend: String,
    /// processes or threads.
    pub mode: String,
    /// Tasks.
    pub tasks: usize,
    /// Total ops/s (the mean of the samples).
    pub ops_per_sec: f64,
    /// The standard deviation of the samples, ops/s.
    pub stddev: f64,
}

pub use crate::loadavg::LoadAvg;

/// The machine's load around one section of the report: a "within
/// noise" on a loaded machine is not a null result on a quiet one.
#[derive(Clone, Debug, Serialize)]
pub struct SectionLoad {
    /// `versus`, `seeds`, `scaling` or `preload`.
    pub section: String,
    /// Before the section's first run.
    pub before: LoadAvg,
    /// After its last.
    pub after: LoadAvg,
}

impl SectionLoad {
    /// A section that started at `before` and ends now.
    pub fn new(section: &str, before: LoadAvg) -> SectionLoad {
        SectionLoad {
            section: section.into(),
            before,
            after: LoadAvg::now(),
        }
    }

    /// For a page or a terminal: `load average 1.20 0.90 0.50 before,
    /// 2.10 1.10 0.60 after (1, 5, 15 min)`.
    pub fn text(&self) -> String {
        let f = |l: &LoadAvg| format!("{:.2} {:.2} {:.2}", l.0[0], l.0[1], l.0[2]);
        format!(
            "load average {} before, {} after (1, 5, 15 min)",
            f(&self.before),
            f(&self.after)
        )
    }
}

/// One checked target.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    /// What is checked.
    pub what: String,
    /// The goal, e.g. `>= 20x`.
    pub goal: String,
    /// The measured figure.
    pub measured: Option<f64>,
    /// Met or not (None: not measured).
    pub met: Option<bool>,
}

/// Everything one `reproduce` measured.
#[derive(Clone, Debug, Serialize)]
pub struct Reproduction {
    /// The command line's profile.
    pub profile: Profile,
    /// Its budget.
    pub budget: Budget,
    /// The machine.
    pub machine: Machine,
    /// Seconds since the epoch when the run started.
    pub started_unix: u64,
    /// Wall seconds the run took.
    pub wall_seconds: f64,
    /// Host work directories were made under this directory.
    pub host_dir: String,
    /// fstree's and blogbench's shapes.
    pub fstree: String,
    /// The seed rows.
    pub seeds: Vec<SeedResult>,
    /// uvfs against the host.
    pub versus: Vec<Versus>,
    /// Scaling points (empty on one CPU).
    pub scaling: Vec<ScalePoint>,
    /// Why scaling is missing, if it is.
    pub scaling_note: Option<String>,
    /// The targets.
    pub targets: Vec<Target>,
    /// Bytes per object.
    pub object_sizes: Vec<(String, usize)>,
    /// The LD_PRELOAD shim against the host's tmpfs, if it ran.
    pub preload: Option<PreloadReport>,
    /// Why the preload section is missing, if it is.
    pub preload_note: Option<String>,
    /// The FUSE section (host tmpfs, floor, uvfs mount), if it ran.
    pub fuse: Option<FuseReport>,
    /// Why the FUSE section is missing, if it is.
    pub fuse_note: Option<String>,
    /// uvfs against the kernel and the in-memory crates, if it ran.
    pub peers: Option<PeersReport>,
    /// Why the peers section is missing, if it is.
    pub peers_note: Option<String>,
    /// The load average before and after each section.
    pub load: Vec<SectionLoad>,
    /// Every run's record, as records.json holds them (so that `compare`
    /// takes this file too).
    pub records: Vec<crate::report::Record>,
}
