//! `reproduce`'s text report: the load averages, the seeds' A/B table,
//! uvfs against the host, the targets, scaling, memory per object and the
//! sections run on request (the shim, FUSE, the peers), as printed on
//! standard output. The same data's HTML and SVG are [`crate::html`]'s.

use super::*;

fn fmt_opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.prec$}"))
}

/// The text tables.
pub(super) fn print_text(r: &Reproduction) {
    for l in &r.load {
        println!("{}: {}", l.section, l.text());
    }
    println!(
        "seeds: A = fast path off, B = on (all other fast paths on); runs interleaved A B A B"
    );
    println!(
        "{:<4} {:<8} {:<18} {:>13} {:>13} {:>8} {:>17} {:<13} {:>12} {:>8}  seed's figure",
        "seed",
        "test",
        "switch",
        "A ops/s",
        "B ops/s",
        "change",
        "95% CI",
        "verdict",
        "host ops/s",
        "B/host"
    );
    for s in &r.seeds {
        if let Some(e) = &s.error {
            println!("{:<4} {:<8} {:<18} failed: {e}", s.seed, s.test, s.switch);
            continue;
        }
        println!(
            "{:<4} {:<8} {:<18} {:>13.0} {:>13.0} {:>+7.1}% {:>+7.1}%..{:>+6.1}% {:<13} {:>12} {:>8}  {}",
            s.seed,
            s.test,
            s.switch,
            s.a_ops_per_sec,
            s.b_ops_per_sec,
            s.change_pct,
            s.ci_low_pct,
            s.ci_high_pct,
            s.verdict,
            fmt_opt(s.host_ops_per_sec, 0),
            s.host_ops_per_sec
                .map_or_else(|| "-".into(), |h| format!("{:.1}x", s.b_ops_per_sec / h)),
            if s.unit == "ops/s" {
                s.evidence.clone()
            } else {
                format!("{} (A, B, host in {})", s.evidence, s.unit)
            }
        );
    }
    println!(
        "\nuvfs (all fast paths) against the host kernel, 1 task, processes mode (getfl: 1 task, threads mode; fstree: {FSTREE_TASKS} threads, blogbench: {BLOGBENCH_TASKS})"
    );
    println!(
        "{:<8} {:>14} {:>14} {:>8} {:>7}",
        "test", "uvfs ops/s", "host ops/s", "ratio", "target"
    );
    for v in &r.versus {
        println!(
            "{:<8} {:>14} {:>14} {:>7}x {:>7}{}",
            v.test,
            fmt_opt(v.uvfs_ops_per_sec, 0),
            fmt_opt(v.host_ops_per_sec, 0),
            fmt_opt(v.ratio, 1),
            v.target.map_or_else(String::new, |t| format!(">={t}x")),
            v.error
                .as_ref()
                .map_or_else(String::new, |e| format!("  ({e})"))
        );
    }
    if let Some(note) = &r.scaling_note {
        println!("\nscaling: {note}");
    } else {
        println!("\nscaling over tasks (total ops/s)");
        for p in &r.scaling {
            println!(
                "{:<8} {:<5} {:<10} {:>3} tasks {:>14.0}",
                p.test, p.backend, p.mode, p.tasks, p.ops_per_sec
            );
        }
    }
    println!("\nthe lab's targets");
    for t in &r.targets {
        println!(
            "{:<45} {:>8} measured {:>6}  {}",
            t.what,
            t.goal,
            fmt_opt(t.measured, 2),
            match t.met {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "not measured",
            }
        );
    }
    println!("\nmemory per object (bytes):");
    for (what, bytes) in &r.object_sizes {
        println!("  {bytes:>5}  {what}");
    }
    println!("\nthe LD_PRELOAD shim: C open/close loop (uvfs-bench preload)");
    match (&r.preload, &r.preload_note) {
        (Some(p), _) => {
            if let Err(e) = preload::print_text(&mut std::io::stdout(), p) {
                eprintln!("reproduce: printing the preload section: {e}");
            }
        }
        (None, Some(note)) => println!("{note}"),
        (None, None) => println!("not run"),
    }
    println!("\nFUSE: the tests through a mount (uvfs-bench fuse)");
    match (&r.fuse, &r.fuse_note) {
        (Some(f), _) => {
            if let Err(e) = fuse::print_text(&mut std::io::stdout(), f) {
                eprintln!("reproduce: printing the FUSE section: {e}");
            }
        }
        (None, Some(note)) => println!("{note}"),
        (None, None) => println!("not run"),
    }
    println!("\nuvfs against the kernel and the in-memory crates (uvfs-bench peers)");
    match (&r.peers, &r.peers_note) {
        (Some(p), _) => {
            if let Err(e) = peers::print_text(&mut std::io::stdout(), p) {
                eprintln!("reproduce: printing the peers section: {e}");
            }
        }
        (None, Some(note)) => println!("{note}"),
        (None, None) => println!("not run"),
    }
}
