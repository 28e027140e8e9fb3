//! Micro-benchmarks of the fd-table hot paths, each under both presets and
//! the single switch that matters for it. Numbers are for A/B within one
//! run; the lab (`uvfs-bench`) is where published figures come from.
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use uvfs::{Errno, FastPaths, Process, Vfs};

fn configs(switch: &str) -> [(String, FastPaths); 3] {
    [
        ("seeds".into(), FastPaths::seeds()),
        (
            format!("seeds,{switch}=off"),
            FastPaths::seeds().with(switch, false),
        ),
        ("stock".into(), FastPaths::stock()),
    ]
}

fn bench(c: &mut Criterion) {
    for (name, fast) in configs("fget_masked") {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        let fd = p.open_with(0, |_| Ok(())).unwrap();
        c.bench_function(&format!("fget+put/{name}"), |b| {
            b.iter(|| drop(black_box(p.fget(black_box(fd)).unwrap())))
        });
        let t = p.new_thread();
        c.bench_function(&format!("fget+put shared/{name}"), |b| {
            b.iter(|| drop(black_box(p.fget(black_box(fd)).unwrap())))
        });
        drop(t);
    }
    for (name, fast) in configs("close_sync") {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        c.bench_function(&format!("open+close/{name}"), |b| {
            b.iter(|| {
                let fd = p.open_with(0, |_| Ok(())).unwrap();
                p.close(black_box(fd)).unwrap();
            })
        });
    }
    for (name, fast) in configs("badopen_immediate") {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        c.bench_function(&format!("failed open/{name}"), |b| {
            b.iter(|| black_box(p.open_with(0, |_| Err(Errno::ENOENT))))
        });
    }
    for (name, fast) in configs("alloc_fd_fast") {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        // ~100 fds open, as in blogbench.
        for _ in 0..100 {
            p.open_with(0, |_| Ok(())).unwrap();
        }
        p.close(70).unwrap();
        c.bench_function(&format!("dup+close at 100 fds/{name}"), |b| {
            b.iter(|| {
                let fd = p.dup(black_box(3)).unwrap();
                p.close(fd).unwrap();
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
