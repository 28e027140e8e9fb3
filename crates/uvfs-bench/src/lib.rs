//! The uvfs lab: will-it-scale's file-system tests run on the host kernel
//! (real system calls through libc) and on uvfs, in processes or threads
//! mode, with JSON results and a regression comparison; and `reproduce`,
//! the seeds' A/B experiments; and `preload`, the C open/close loop under
//! the LD_PRELOAD shim against the host's tmpfs.
//!
//! Modules, one concern each: [`cli`] (the command line and its drivers),
//! [`workloads`] (the tests), [`backend`] (host and uvfs system calls and
//! work directories), [`runner`] (tasks, start barrier, counters,
//! sampling), [`report`] (records, JSON, tables), [`compare`] (the noise
//! rule and verdicts), [`reproduce`] (the seeds' A/B table, uvfs against
//! the host, targets, scaling), [`reproduction`] (what it measured: the
//! data its tables, JSON and charts are made from), [`html`] (its HTML
//! report and SVG charts), [`soak`] (a long mixed workload watching
//! resident memory), [`preload`] (issue 5's benchmark of the shim, with
//! [`preload_calls`], issue 14's per-call costs and first call; both
//! report [`figure`]s; their C programs are built and run by [`cprog`]),
//! [`floor`] (a trivial FUSE server: the cost of the crossing) and
//! [`fuse`] (issue 13's section: host tmpfs, the floor and the uvfs mount)
//! and [`peers`] (issue 16's: uvfs against the kernel and the in-memory
//! file-system crates).
//!
//! Imports run one way: `cli` on top; `reproduce` below it; `html` below
//! `reproduce`; `reproduction`, `report`, `runner` and the rest below
//! those.

pub mod backend;
pub mod cli;
pub mod compare;
pub mod cprog;
pub mod figure;
pub mod floor;
pub mod fuse;
pub mod html;
pub mod loadavg;
pub mod memstat;
pub mod peers;
pub mod preload;
pub mod preload_calls;
pub mod report;
pub mod reproduce;
pub mod reproduction;
pub mod runner;
pub mod soak;
pub mod workloads;
