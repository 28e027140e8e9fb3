//! Helpers shared by the integration tests. Each test file declares
//! `mod support;` and uses the parts it needs:
//!
//! - [`rng`]: the deterministic random number generator of the seeded tests;
//! - [`vfs`]: tiny VFSs and processes, whole-file and directory helpers;
//! - [`host`]: host-kernel fixtures of the differential tests (directories
//!   on tmpfs, a thread with a private mount namespace, forked children);
//! - [`pathdiff`]: the path API's differential harness (generator, host and
//!   uvfs backends, comparison, minimizer);
//! - [`calls`]: one call's outcome on the host and on uvfs, compared;
//! - [`fdcalls`]: the fd-call tests' file double and helpers;
//! - [`fuzz`]: the fuzz target's decoder and executor;
//! - [`stress`]: the stress tests' length, scaled by `UVFS_STRESS_SECS`;
#![allow(dead_code)] // each test binary uses its own subset

pub mod calls;
pub mod fdcalls;
pub mod fuzz;
#[cfg(target_os = "linux")]
pub mod host;
#[cfg(target_os = "linux")]
pub mod pathdiff;
pub mod rng;
pub mod stress;
pub mod vfs;
