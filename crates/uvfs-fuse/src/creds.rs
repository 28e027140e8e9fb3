//! The caller's credentials of a request: the uid and gid FUSE sends with
//! it (the caller's fsuid and fsgid) and the supplementary groups, read
//! from the `Groups:` line of `/proc/<pid>/status` as libfuse's
//! `fuse_req_getgroups` does. The groups are cached per (pid, uid, gid)
//! for a short while (the kernel does not send them, and reading /proc
//! costs more than most requests); a caller whose groups change sees the
//! change within [`GROUPS_TTL`].

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use uvfs::cred::Cred;

/// How long a caller's supplementary groups are reused.
pub const GROUPS_TTL: Duration = Duration::from_millis(100);

/// Entries kept before the cache is cleared.
const MAX_ENTRIES: usize = 4096;

/// A caller: (pid, fsuid, fsgid).
type Caller = (u32, u32, u32);

/// The groups cache.
#[derive(Debug, Default)]
pub struct CredCache {
    map: Mutex<HashMap<Caller, (Instant, Vec<u32>)>>,
}

/// The supplementary groups of process `pid` (empty if it is gone or the
/// line cannot be read).
pub fn read_groups(pid: u32) -> Vec<u32> {
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
        return Vec::new();
    };
    s.lines()
        .find_map(|l| l.strip_prefix("Groups:"))
        .map(|g| {
            g.split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

impl CredCache {
    /// The credentials a request from `pid` with fsuid `uid` and fsgid
    /// `gid` runs with. Root needs no groups (its capabilities decide); a
    /// request with no process behind it (pid 0: the kernel's own) runs
    /// with the ids given and no groups.
    pub fn cred(&self, pid: u32, uid: u32, gid: u32) -> Cred {
        if uid == 0 || pid == 0 {
            return Cred::user(uid, gid, Vec::new());
        }
        let key = (pid, uid, gid);
        let now = Instant::now();
        if let Some((t, g)) = self.map.lock().unwrap().get(&key)
            && now.duration_since(*t) < GROUPS_TTL
        {
            return Cred::user(uid, gid, g.clone());
        }
        let groups = read_groups(pid);
        let mut map = self.map.lock().unwrap();
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(key, (now, groups.clone()));
        Cred::user(uid, gid, groups)
    }
}
