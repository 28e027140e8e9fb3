//! The rest of `preload_route`: the shim's placeholder numbering
//! (`numbering.rs`, with `fdmap.rs`) against a model kernel, and its fork
//! gate (`fork_gate.rs`) stepped by one thread against a model of the
//! gate's state. Both read the same input as the routing model, each in
//! its own way (so every corpus entry drives all three).
//!
//! Numbering: a kernel that hands out the lowest free number (with an fd
//! limit), a program that opens and closes uvfs fds (placeholders), opens
//! and closes kernel fds (the cache flushed first, as every interposed
//! call that makes an fd does), and dup2s onto any number. Checked after
//! every call: each number the program gets is the one Linux would give
//! it (the lowest number free as the program sees it, `EMFILE` when none
//! is below the limit); the fd map's stale entries are exactly the cache;
//! every cached number is open in the kernel; the cache holds at most its
//! size, in one window of `CACHE_MAX` numbers; every number below the mark
//! is taken in the kernel (the rule the cache's reuse rests on). The
//! lock-free claims and releases are modelled with threads in
//! `numbering/loom_tests.rs`; here each call runs whole.
//!
//! Gate: threads take and give back slots, enter and leave, a fork is
//! prepared and released, an attach begins and ends, a thread without a
//! slot holds every other out. Checked: an attempt to enter succeeds
//! exactly when nothing in its mask is pending, and a failed one leaves
//! its flag down; the word read on the way in carries `SHARED` exactly
//! while a thread other than the owner holds a slot, or held one and the
//! owner was not yet built (set by every take but the very first, cleared
//! when the last other thread gives its slot back), so `solo` holds only
//! for the owner alone in the gate; the flags up are the threads inside;
//! slots are reused (never more than were held at once).

use crate::fdmap::{Fd, FdMap};
use crate::fork_gate::{ATTACH, FORK, Gate, Inside, Mine, SHARED, mask, solo};
use crate::numbering::{CACHE_MAX, Kernel, Numbering};
use libfuzzer_sys::arbitrary::{Result as AResult, Unstructured};
use std::collections::{BTreeMap, BTreeSet};

/// Calls per input at most.
const MAX_CALLS: usize = 64;

// ---------------------------------------------------------------------------
// Numbering.

/// The model kernel: the numbers open, and the limit (`RLIMIT_NOFILE`).
struct ModelKernel {
    open: BTreeSet<i32>,
    limit: i32,
}

impl ModelKernel {
    fn lowest_free(&self) -> Option<i32> {
        (0..self.limit).find(|n| !self.open.contains(n))
    }
}

impl Kernel for ModelKernel {
    type Error = &'static str;

    fn open_placeholder(&mut self) -> Result<i32, &'static str> {
        let k = self.lowest_free().ok_or("EMFILE")?;
        self.open.insert(k);
        Ok(k)
    }

    fn close_placeholder(&mut self, k: i32) {
        assert!(
            self.open.remove(&k),
            "the shim closed {k}, which was not open"
        );
    }
}

/// What the program has open: kernel fds and uvfs fds (by number).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Prog {
    Kernel,
    Uvfs(i32),
}

pub fn run_numbering(data: &[u8]) -> AResult<Result<(), String>> {
    let mut u = Unstructured::new(data);
    let max = *u.choose(&[0usize, 1, 2, 3, 16])?;
    let limit = *u.choose(&[8, 12, 24, 64])?;
    let num = Numbering::new();
    let map = FdMap::new();
    let mut kern = ModelKernel {
        open: (0..3).collect(),
        limit,
    };
    let mut prog: BTreeMap<i32, Prog> = (0..3).map(|k| (k, Prog::Kernel)).collect();
    let mut next_u = 0;
    let mut log = Vec::new();
    let mut calls = 0;
    while !u.is_empty() && calls < MAX_CALLS {
        calls += 1;
        let solo = u.arbitrary::<bool>()?;
        // Linux's number: the lowest one the program does not have.
        let linux = (0..limit).find(|n| !prog.contains_key(n));
        let r: Result<(), String> = match u.int_in_range(0..=5)? {
            // a uvfs open: a placeholder
            0 => {
                log.push("uvfs open".to_string());
                match num.placeholder(&mut kern, &map, max, solo) {
                    Ok(k) if Some(k) == linux => {
                        map.set(k, next_u + 1);
                        prog.insert(k, Prog::Uvfs(next_u));
                        next_u += 1;
                        Ok(())
                    }
                    Ok(k) => Err(format!("uvfs open got {k}, Linux gives {linux:?}")),
                    Err(e) if linux.is_none() => {
                        let _ = e;
                        Ok(())
                    }
                    Err(e) => Err(format!("uvfs open failed ({e}), Linux gives {linux:?}")),
                }
            }
            // a uvfs close
            1 => match pick(&mut u, &prog, |p| matches!(p, Prog::Uvfs(_)))? {
                Some(k) => {
                    log.push(format!("uvfs close({k})"));
                    prog.remove(&k);
                    num.release(&mut kern, &map, k, max, solo);
                    match map.get(k) {
                        Fd::Uvfs(_) => Err(format!("{k} still maps a uvfs fd after close")),
                        _ => Ok(()),
                    }
                }
                None => Ok(()),
            },
            // a kernel fd made through an interposed call
            2 => {
                log.push("kernel open".to_string());
                num.flush(&mut kern, &map, solo);
                match kern.lowest_free() {
                    got if got != linux => {
                        Err(format!("kernel open got {got:?}, Linux gives {linux:?}"))
                    }
                    // EMFILE, as on Linux
                    None => Ok(()),
                    Some(k) => {
                        kern.open.insert(k);
                        prog.insert(k, Prog::Kernel);
                        Ok(())
                    }
                }
            }
            // a kernel fd closed through an interposed call
            3 => match pick(&mut u, &prog, |p| *p == Prog::Kernel)? {
                Some(k) => {
                    log.push(format!("kernel close({k})"));
                    prog.remove(&k);
                    kern.open.remove(&k);
                    num.hole_lower(k);
                    Ok(())
                }
                None => Ok(()),
            },
            // dup2 of a uvfs fd onto any number below the limit (state's
            // `placeholder_at`: a cached number is taken back, anything
            // else the kernel replaces in place)
            4 => {
                let k = u.int_in_range(0..=limit - 1)?;
                log.push(format!("uvfs dup2 onto {k}"));
                if !num.uncache(k, solo) {
                    kern.open.insert(k);
                }
                map.set(k, next_u + 1);
                prog.insert(k, Prog::Uvfs(next_u));
                next_u += 1;
                Ok(())
            }
            // every kernel call that makes an fd flushes first
            _ => {
                log.push("flush".to_string());
                num.flush(&mut kern, &map, solo);
                if num.cached() != 0 {
                    Err("the cache is not empty after a flush".to_string())
                } else {
                    Ok(())
                }
            }
        };
        if let Err(e) = r.and_then(|()| check_numbering(max, &num, &map, &kern, &prog)) {
            return Ok(Err(format!(
                "cache {max}, limit {limit}, calls:\n  {}\n{e}",
                log.join("\n  ")
            )));
        }
    }
    Ok(Ok(()))
}

/// One of the program's numbers that `want` accepts, if any.
fn pick(
    u: &mut Unstructured,
    prog: &BTreeMap<i32, Prog>,
    want: impl Fn(&Prog) -> bool,
) -> AResult<Option<i32>> {
    let ks: Vec<i32> = prog
        .iter()
        .filter(|(_, p)| want(p))
        .map(|(&k, _)| k)
        .collect();
    if ks.is_empty() {
        return Ok(None);
    }
    Ok(Some(*u.choose(&ks)?))
}

fn check_numbering(
    max: usize,
    num: &Numbering,
    map: &FdMap,
    kern: &ModelKernel,
    prog: &BTreeMap<i32, Prog>,
) -> Result<(), String> {
    let cached = num.cached_numbers();
    if num.cached() != cached.len() {
        return Err(format!("cached() {} for {cached:?}", num.cached()));
    }
    // The cache is one window of `CACHE_MAX` numbers, holding at most
    // `max` of them (none without a cache).
    if cached.len() > max {
        return Err(format!("{cached:?} cached, at most {max}"));
    }
    if let (Some(lo), Some(hi)) = (cached.first(), cached.last())
        && hi - lo >= CACHE_MAX as i32
    {
        return Err(format!("{cached:?} do not fit one window"));
    }
    let span = kern.limit + 2;
    for k in 0..span {
        let want = match prog.get(&k) {
            Some(Prog::Uvfs(u)) => Fd::Uvfs(*u),
            Some(Prog::Kernel) => Fd::Kernel,
            None if cached.contains(&k) => Fd::Stale,
            None => Fd::Kernel,
        };
        if map.get(k) != want {
            return Err(format!(
                "fd map at {k}: {:?}, expected {want:?}",
                map.get(k)
            ));
        }
        let in_kernel = prog.contains_key(&k) || cached.contains(&k);
        if kern.open.contains(&k) != in_kernel {
            return Err(format!(
                "kernel has {k} {}, the program and cache say {}",
                if kern.open.contains(&k) {
                    "open"
                } else {
                    "free"
                },
                if in_kernel { "open" } else { "free" }
            ));
        }
    }
    let hole = num.hole();
    if let Some(free) = (0..hole).find(|n| !kern.open.contains(n)) {
        return Err(format!(
            "{free} is free in the kernel below the mark {hole}"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The gate.

/// One model thread.
#[derive(Default)]
struct Thread {
    mine: Option<Mine>,
    /// Inside uvfs (the guard).
    inside: Option<Inside<'static>>,
    /// This thread's handle is the owner's.
    owner: bool,
}

pub fn run_gate(data: &[u8]) -> AResult<Result<(), String>> {
    // One gate per input, freed with its slots once every thread's slot
    // and guard are gone (`run_gate_on` drops them all).
    let g = Box::into_raw(Box::new(Gate::new()));
    // SAFETY: `g` lives until freed below, after `run_gate_on` returned.
    let r = run_gate_on(unsafe { &*g }, data);
    // SAFETY: every `Mine` and `Inside` of the gate was dropped (or
    // forgotten) inside `run_gate_on`; `g` came from `Box::into_raw`.
    unsafe {
        (*g).free_slots();
        drop(Box::from_raw(g));
    }
    r
}

fn run_gate_on(g: &'static Gate, data: &[u8]) -> AResult<Result<(), String>> {
    let mut u = Unstructured::new(data);
    let mut th: Vec<Thread> = (0..4).map(|_| Thread::default()).collect();
    let mut takes = 0usize;
    // SHARED as the model has it.
    let mut shared = false;
    let mut owner_slot: Option<&'static crate::fork_gate::Slot> = None;
    let mut fork = false;
    let mut attach = false;
    let mut alone: Option<Inside<'static>> = None;
    let mut held_max = 0usize;
    // The owners' slots kept after their threads exited.
    let mut kept = 0usize;
    let mut log = Vec::new();
    let mut calls = 0;
    while !u.is_empty() && calls < MAX_CALLS {
        calls += 1;
        let i = u.int_in_range(0..=3)?;
        let pending =
            (if fork || alone.is_some() { FORK } else { 0 }) | if attach { ATTACH } else { 0 };
        let r: Result<(), String> = match u.int_in_range(0..=7)? {
            // a thread's first call takes its slot (waits for the owner to
            // be outside, and for an alone call's hold on the slot list to
            // end: not stepped while either lasts; stepped, this one thread
            // would wait for ever on its own hold)
            0 if th[i].mine.is_none() => {
                let owner_inside = th.iter().any(|t| t.owner && t.inside.is_some());
                if owner_inside || alone.is_some() {
                    Ok(())
                } else {
                    log.push(format!("t{i} takes a slot"));
                    th[i].mine = Some(g.take(|| owner_slot));
                    takes += 1;
                    // Every take but the very first marks the gate shared.
                    shared |= takes > 1;
                    let held = th.iter().filter(|t| t.mine.is_some()).count() + kept;
                    held_max = held_max.max(held);
                    if owner_slot.is_none() && takes == 1 {
                        // The first thread builds the root: the owner.
                        th[i].owner = true;
                        owner_slot = th[i].mine.as_ref().map(Mine::slot);
                    }
                    Ok(())
                }
            }
            // an entry attempt (the blocking `enter` when it cannot block)
            1 | 2 if th[i].mine.is_some() && th[i].inside.is_none() => {
                let m = mask(th[i].owner);
                let mine = th[i].mine.as_ref().unwrap();
                log.push(format!("t{i} enters (mask {m})"));
                let got = if pending & m == 0 && u.arbitrary::<bool>()? {
                    Ok(g.enter(Some(mine), m))
                } else {
                    g.attempt(mine, m)
                };
                match got {
                    Ok((inside, word)) => {
                        let is_shared = word & SHARED != 0;
                        th[i].inside = Some(inside);
                        if pending & m != 0 {
                            Err(format!("entered with {pending} pending"))
                        } else if is_shared != shared {
                            Err(format!("SHARED {is_shared}, the model says {shared}"))
                        } else if solo(th[i].owner, word) != (th[i].owner && !shared) {
                            Err("solo wrong".to_string())
                        } else {
                            Ok(())
                        }
                    }
                    Err(p) if p == pending & m => Ok(()),
                    Err(p) => Err(format!("held out by {p}, pending {pending}, mask {m}")),
                }
            }
            // a thread leaves uvfs
            3 if th[i].inside.is_some() => {
                log.push(format!("t{i} leaves"));
                th[i].inside = None;
                Ok(())
            }
            // a thread exits (outside uvfs): its slot goes back (the
            // owner's is kept); it waits out an alone call's hold on the
            // slot list (not stepped meanwhile)
            4 if th[i].mine.is_some() && th[i].inside.is_none() && alone.is_none() => {
                log.push(format!("t{i} exits"));
                let m = th[i].mine.take().unwrap();
                if th[i].owner {
                    m.keep();
                    th[i].owner = false;
                    kept += 1;
                } else {
                    g.give_back(m, owner_slot);
                    // The owner alone again: the mark is cleared.
                    let others = th.iter().any(|t| t.mine.is_some() && !t.owner);
                    if owner_slot.is_some() && !others {
                        shared = false;
                    }
                }
                Ok(())
            }
            // fork: prepared (the mark and the fence) or released (only
            // with nobody inside, where the real prepare stops waiting)
            5 if alone.is_none() && !attach => {
                let inside = th.iter().filter(|t| t.inside.is_some()).count();
                if !fork {
                    log.push("fork prepared".to_string());
                    g.prepare_fork();
                    fork = true;
                    Ok(())
                } else if inside == 0 {
                    log.push("fork released".to_string());
                    g.after_fork();
                    fork = false;
                    Ok(())
                } else {
                    Ok(())
                }
            }
            // an attach to the owner begins or ends
            6 if !fork && alone.is_none() && owner_slot.is_some() => {
                if !attach {
                    log.push("attach begins".to_string());
                    g.begin_attach();
                } else {
                    log.push("attach ends".to_string());
                    g.end_attach();
                }
                attach = !attach;
                Ok(())
            }
            // a call without thread-locals holds every other thread out
            // (entered only with nobody inside: it waits like a fork)
            7 if !fork && !attach => {
                let inside = th.iter().filter(|t| t.inside.is_some()).count();
                if alone.is_some() {
                    log.push("alone call ends".to_string());
                    alone = None;
                } else if inside == 0 {
                    log.push("alone call".to_string());
                    alone = Some(g.enter(None, FORK).0);
                }
                Ok(())
            }
            _ => Ok(()),
        };
        let r = r.and_then(|()| {
            let inside = th.iter().filter(|t| t.inside.is_some()).count();
            let want = (if fork || alone.is_some() { FORK } else { 0 })
                | (if attach { ATTACH } else { 0 })
                | (if shared { SHARED } else { 0 });
            if g.word() != want {
                Err(format!("word {}, expected {want}", g.word()))
            } else if g.flags_up() != inside {
                Err(format!(
                    "{} flags up, {inside} threads inside",
                    g.flags_up()
                ))
            } else if g.slot_count() > held_max {
                Err(format!(
                    "{} slots made, at most {held_max} held at once",
                    g.slot_count()
                ))
            } else {
                Ok(())
            }
        });
        if let Err(e) = r {
            return Ok(Err(format!("calls:\n  {}\n{e}", log.join("\n  "))));
        }
    }
    // Leave the gate clean (its slots are leaked with it).
    for t in &mut th {
        t.inside = None;
        if t.owner {
            if let Some(m) = t.mine.take() {
                m.keep();
            }
        }
    }
    drop(alone);
    if fork {
        g.after_fork();
    }
    Ok(Ok(()))
}
