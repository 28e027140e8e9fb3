//! The comparison of a host log with a uvfs log.

use super::*;

pub type Key = (u64, u64);

#[derive(Default)]
pub struct Cmp {
    pub h2u: HashMap<Key, Key>,
    pub u2h: HashMap<Key, Key>,
    /// Last (mtime, ctime) seen per inode, per side.
    pub last_h: HashMap<Key, (Ts, Ts, usize)>,
    pub last_u: HashMap<Key, (Ts, Ts, usize)>,
    /// Successful renames (on the host) so far.
    pub renames: usize,
}

impl Cmp {
    pub fn ino(&mut self, h: Key, u: Key) -> Result<(), String> {
        match (self.h2u.get(&h), self.u2h.get(&u)) {
            (None, None) => {
                self.h2u.insert(h, u);
                self.u2h.insert(u, h);
                Ok(())
            }
            (Some(&x), _) if x == u => Ok(()),
            (x, y) => Err(format!(
                "inode identity: host {h:?} was paired with uvfs {x:?}, uvfs {u:?} with host {y:?}"
            )),
        }
    }

    pub fn stat(&mut self, h: &St, u: &St) -> Result<(), String> {
        let mut diffs = Vec::new();
        macro_rules! field {
            ($f:ident) => {
                if h.$f != u.$f {
                    diffs.push(format!(
                        "{} host {:?} uvfs {:?}",
                        stringify!($f),
                        h.$f,
                        u.$f
                    ));
                }
            };
        }
        field!(mode);
        field!(nlink);
        field!(uid);
        field!(gid);
        field!(rdev);
        field!(size);
        field!(blocks);
        field!(blksize);
        field!(statx);
        // statx fills only what its result mask says; a time left out is
        // zero on Linux and must be on uvfs too, and is no observation.
        let mask = h.statx.map_or(u32::MAX, |(m, _, _)| m);
        let have = |bit: u32| mask & bit != 0;
        if !have(STATX_ATIME) || h.atime.sec < OLD_TIME || u.atime.sec < OLD_TIME {
            field!(atime);
        }
        if !have(STATX_MTIME) || h.mtime.sec < OLD_TIME || u.mtime.sec < OLD_TIME {
            field!(mtime);
        }
        if !have(STATX_CTIME) {
            field!(ctime);
        }
        let hk = (h.dev, h.ino);
        let uk = (u.dev, u.ino);
        if let Err(e) = self.ino(hk, uk) {
            diffs.push(e);
        }
        if !have(STATX_MTIME) || !have(STATX_CTIME) {
            return if diffs.is_empty() {
                Ok(())
            } else {
                Err(diffs.join("; "))
            };
        }
        let lh = self.last_h.insert(hk, (h.mtime, h.ctime, self.renames));
        let lu = self.last_u.insert(uk, (u.mtime, u.ctime, self.renames));
        // Only where Linux stamps the inode with its own multigrain clock:
        // not directories, and not across a rename (see the module doc).
        let reliable = h.mode & S_IFMT != S_IFDIR;
        if let (Some((hm, hc, hr)), Some((um, uc, _))) = (lh, lu)
            && reliable
            && hr == self.renames
        {
            if (hm != h.mtime) != (um != u.mtime) {
                diffs.push(format!(
                    "mtime changed since last stat: host {} uvfs {}",
                    hm != h.mtime,
                    um != u.mtime
                ));
            }
            if (hc != h.ctime) != (uc != u.ctime) {
                diffs.push(format!(
                    "ctime changed since last stat: host {} uvfs {}",
                    hc != h.ctime,
                    uc != u.ctime
                ));
            }
        }
        if diffs.is_empty() {
            Ok(())
        } else {
            Err(diffs.join("; "))
        }
    }

    pub fn res(&mut self, h: &Res, u: &Res) -> Result<(), String> {
        match (h, u) {
            (Ok(Val::Stat(a)), Ok(Val::Stat(b))) => self.stat(a, b),
            (Ok(Val::Dents(n, a)), Ok(Val::Dents(m, b))) => {
                if n != m || a.len() != b.len() {
                    Err("getdents64 records differ".into())
                } else {
                    let mut r = Ok(());
                    for (x, y) in a.iter().zip(b) {
                        if x.name != y.name || x.off != y.off || x.ty != y.ty {
                            r = Err("getdents64 records differ".into());
                            break;
                        }
                        if let Err(e) = self.ino((0, x.ino), (0, y.ino)) {
                            r = Err(format!("d_ino of {}: {e}", show_bytes(&x.name)));
                            break;
                        }
                    }
                    r
                }
            }
            (a, b) if a == b => Ok(()),
            _ => Err("results differ".into()),
        }
    }
}

/// The first mismatch, as a replayable report; `None` if the logs agree.
pub fn compare(seed: u64, side: &str, ops: &[Op], host: &Log, uvfs: &Log) -> Option<String> {
    compare_at(seed, side, ops, host, uvfs).map(|(_, r)| r)
}

/// As [`compare`], with the step of the first mismatch.
pub fn compare_at(
    seed: u64,
    side: &str,
    ops: &[Op],
    host: &Log,
    uvfs: &Log,
) -> Option<(usize, String)> {
    let mut cmp = Cmp::default();
    // getdents64 d_ino uses (0, ino) keys: seed them with the stat keys as
    // they come (a dirent's inode is usually stat'ed too). Both are checked
    // for consistency within their own key space.
    let n = host.obs.len().max(uvfs.obs.len());
    for i in 0..n {
        let (h, u) = (host.obs.get(i), uvfs.obs.get(i));
        let err = match (h, u) {
            (Some(h), Some(u)) if h.what != u.what => Some("different dump step".to_string()),
            (Some(h), Some(u)) => {
                if let Some(Op::Rename(..) | Op::Renameat(..) | Op::Renameat2(..)) = ops.get(i)
                    && h.res.is_ok()
                {
                    cmp.renames += 1;
                }
                cmp.res(&h.res, &u.res).err()
            }
            _ => Some("one log is longer".to_string()),
        };
        let Some(err) = err else { continue };
        // Seed 0 stands for a hand-written or minimized op list.
        let mut msg = if seed == 0 {
            format!("op list (uvfs {side}): first difference at step {i}: {err}\n")
        } else {
            format!(
                "seed {seed} (uvfs {side}): first difference at step {i}: {err}\n\
                 replay: {}UVFS_DIFF_SEED={seed} cargo test --release -p uvfs --test path_differential\n",
                if known_enabled() {
                    "UVFS_DIFF_KNOWN=1 "
                } else {
                    ""
                }
            )
        };
        // The differing step first: a log cut to its first lines (CI's
        // record of a failure) still says what differed.
        let side_res = |log: &Log| log.obs.get(i).map_or("-".into(), |o| show_res(&o.res));
        let _ = writeln!(
            msg,
            "step {i}: {}\n         host {}\n         uvfs {}\nthe steps up to it:",
            ops.get(i)
                .map_or_else(|| "(final dump)".to_string(), |op| op.to_string()),
            side_res(host),
            side_res(uvfs)
        );
        let mut nfd = 0;
        for (j, op) in ops.iter().enumerate().take((i + 1).min(ops.len())) {
            let hr = host.obs.get(j).map_or("-".into(), |o| show_res(&o.res));
            let ur = uvfs.obs.get(j).map_or("-".into(), |o| show_res(&o.res));
            let mark = if j == i { "!!" } else { "  " };
            let new_fd = if opens(op) {
                nfd += 1;
                format!("#{} = ", nfd - 1)
            } else {
                String::new()
            };
            if hr == ur {
                let _ = writeln!(msg, "{mark} {j:4}: {new_fd}{op}  => {hr}");
            } else {
                let _ = writeln!(
                    msg,
                    "{mark} {j:4}: {new_fd}{op}\n         host {hr}\n         uvfs {ur}"
                );
            }
        }
        if i >= ops.len() {
            let _ = writeln!(msg, "final dump from {}:", sp(&host.dump_root));
            for j in ops.len()..=i {
                let mark = if j == i { "!!" } else { "  " };
                for (side, log) in [("host", host), ("uvfs", uvfs)] {
                    if let Some(o) = log.obs.get(j) {
                        let _ = writeln!(msg, "{mark} {side} {}: {}", o.what, show_res(&o.res));
                    }
                }
            }
        }
        return Some((i, msg));
    }
    None
}
