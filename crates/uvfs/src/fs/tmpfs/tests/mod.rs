//! Tests of the tmpfs. "Host:" marks a fact checked on a Linux 6.18 host's
//! tmpfs (`/dev/shm` or a fresh `mount -t tmpfs` in a private namespace).

use super::*;
use crate::fs::{
    FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE, FileSystem, Ino, NewInode, RENAME_EXCHANGE,
    RENAME_NOREPLACE, S_IFLNK, S_IFREG, S_ISGID, SetAttr, SetTime, Timespec,
};
use std::time::Duration;

const R: Ino = ROOT_INO;
const EOD: u64 = DIR_OFFSET_EOD;

fn fs() -> Arc<Tmpfs> {
    Tmpfs::new(TmpfsOptions::default())
}

fn limited(size: u64, inodes: u64) -> Arc<Tmpfs> {
    Tmpfs::new(TmpfsOptions {
        size_bytes: Some(size),
        nr_inodes: Some(inodes),
        ..TmpfsOptions::default()
    })
}

fn nf(mode: u32) -> NewInode {
    NewInode {
        mode,
        uid: 1000,
        gid: 1000,
        ..NewInode::default()
    }
}

fn file(fs: &Tmpfs, dir: Ino, name: &str) -> Ino {
    fs.create(dir, name.as_bytes(), nf(0o644)).unwrap().ino
}

fn dir(fs: &Tmpfs, parent: Ino, name: &str) -> Ino {
    fs.mkdir(parent, name.as_bytes(), nf(0o755)).unwrap().ino
}

/// (name, d_off) from `cookie`, as one getdents would see them.
fn ls_from(fs: &Tmpfs, d: Ino, cookie: u64) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    fs.readdir(d, cookie, &mut |e| {
        out.push((String::from_utf8(e.name.clone()).unwrap(), e.next));
        true
    })
    .unwrap();
    out
}

fn ls(fs: &Tmpfs, d: Ino) -> Vec<(String, u64)> {
    ls_from(fs, d, 0)
}

fn names(fs: &Tmpfs, d: Ino) -> Vec<String> {
    ls(fs, d)
        .into_iter()
        .map(|(n, _)| n)
        .filter(|n| n != "." && n != "..")
        .collect()
}

fn pairs(v: &[(&str, u64)]) -> Vec<(String, u64)> {
    v.iter().map(|(n, o)| (n.to_string(), *o)).collect()
}

/// Waits until a new stamp is later than every stamp made so far: tmpfs
/// stamps with the coarse clock (multigrain), so a short sleep may stay
/// within one tick. Waits on the clock; no test outcome depends on how long.
fn tick() {
    use crate::fs::timekeeping::{coarse_mg, fine_mg};
    let t = fine_mg();
    while coarse_mg() <= t {
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn old() -> Timespec {
    Timespec { sec: 1, nsec: 0 }
}

/// Sets mtime and atime far in the past and returns the ctime now.
fn age(fs: &Tmpfs, ino: Ino) -> Timespec {
    let set = SetAttr {
        atime: Some(SetTime::At(old())),
        mtime: Some(SetTime::At(old())),
        ..SetAttr::default()
    };
    let c = fs.setattr(ino, &set).unwrap().ctime;
    tick();
    c
}

fn ok(fs: &Tmpfs) {
    fs.fsck(false).unwrap();
}

mod concurrency;
mod data;
mod memfd;
mod names;
mod rename;
mod store;
mod table;
mod tableless;
