//! The loom harness of the `*_loom` tests: a model builder with a
//! preemption bound, a checker that reports how many executions loom
//! explored, and a counter of outcomes across executions.

use loom::model::Builder;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;

/// A loom model builder bounded to `preemptions` preemptions.
pub fn builder(preemptions: usize) -> Builder {
    let mut b = Builder::new();
    b.preemption_bound = Some(preemptions);
    b
}

/// Runs `model` under `b`, reporting how many executions loom explored.
pub fn check(b: &Builder, model: impl Fn() + Send + Sync + 'static) {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let start = std::time::Instant::now();
    b.check(move || {
        counter.fetch_add(1, SeqCst);
        model();
    });
    eprintln!(
        "{}: {} executions in {:.2?}",
        thread_name(),
        runs.load(SeqCst),
        start.elapsed()
    );
}

/// The name of the current (test) thread: the test's name.
pub fn thread_name() -> String {
    std::thread::current().name().unwrap_or("?").to_owned()
}

/// Counts outcomes across executions, to show a model reaches each one.
pub struct Seen<const N: usize>([AtomicUsize; N]);

impl<const N: usize> Seen<N> {
    pub const fn new() -> Self {
        Seen([const { AtomicUsize::new(0) }; N])
    }

    pub fn hit(&self, i: usize) {
        self.0[i].fetch_add(1, SeqCst);
    }

    /// Prints the counts and asserts that every outcome in `must` occurred.
    pub fn report(&self, names: [&str; N], must: &[usize]) {
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
