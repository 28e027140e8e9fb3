//! The loom harness of the in-crate models (`loom_tests` modules beside the
//! code they model): a builder with a preemption bound, a checker that
//! reports how many executions loom explored, and a counter of outcomes
//! across executions. Built only for tests under `--cfg loom`.

use loom::model::Builder;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

/// A loom model builder bounded to `preemptions` preemptions.
pub(crate) fn builder(preemptions: usize) -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(preemptions);
    b
}

/// Runs `model` under `b`, reporting how many executions loom explored.
pub(crate) fn check(b: &Builder, model: impl Fn() + Send + Sync + 'static) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        // The execution before this one is over, its threads with it: what
        // it retired can be given back (memory only; see `loom_leaked`).
        crate::reclaim::loom_leaked::give_back_all();
        counter.fetch_add(1, SeqCst);
        model();
    });
    crate::reclaim::loom_leaked::give_back_all();
    eprintln!(
        "{}: {} executions in {:.2?}",
        std::thread::current().name().unwrap_or("?"),
        runs.load(SeqCst),
        start.elapsed()
    );
}

/// Counts outcomes across executions, to show a model reaches each one.
pub(crate) struct Seen<const N: usize>([AtomicUsize; N]);

impl<const N: usize> Seen<N> {
    pub(crate) const fn new() -> Self {
        Seen([const { AtomicUsize::new(0) }; N])
    }

    pub(crate) fn hit(&self, i: usize) {
        self.0[i].fetch_add(1, SeqCst);
    }

    /// Prints the counts and asserts that every outcome in `must` occurred.
    pub(crate) fn report(&self, names: [&str; N], must: &[usize]) {
        let counts: Vec<_> = self.0.iter().map(|c| c.load(SeqCst)).collect();
        let line: Vec<_> = names
            .iter()
            .zip(&counts)
            .map(|(n, c)| format!("{n}: {c}"))
            .collect();
        eprintln!("  {}", line.join(", "));
        for &i in must {
            assert!(counts[i] > 0, "no execution reached \"{}\"", names[i]);
        }
    }
}
