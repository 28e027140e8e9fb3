//! The FUSE server fed raw requests without a mount: the kernel's side of
//! the protocol played over a `SOCK_SEQPACKET` socket pair (one request per
//! message, as `/dev/fuse` gives one per read), with the choices of which
//! request to send read from bytes (a seeded generator's in
//! `tests/fuse_wire.rs`, libFuzzer's in `fuzz/fuzz_targets/fuse_requests.rs`).
//!
//! The driver keeps what a kernel keeps: the node ids the server handed out
//! with their lookup counts, and the open file and directory handles. Most
//! requests are ones a kernel could send (node ids and handles it was given,
//! names of a small set so that they meet); some carry unknown node ids and
//! handles, or odd names. It checks:
//! - every request but FORGET and BATCH_FORGET gets exactly one reply, with
//!   its `unique`, a length equal to the message's, an error of 0 or a
//!   negative errno, and a payload of the size its opcode has;
//! - the server never dies (a panic in a worker ends the session: the
//!   socket then reads end-of-file);
//! - at the end, once every handle is released and every lookup forgotten,
//!   the server holds only the root's node, it answers DESTROY and its
//!   session ends cleanly, and the VFS's caches agree with tmpfs with every
//!   dentry reference accounted for (`Vfs::check_consistency`).
//!
//! The record layouts are the FUSE protocol's (Linux's
//! `include/uapi/linux/fuse.h`, protocol 7.40 as fuser speaks it), written
//! here as byte offsets.
#![allow(dead_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;

use fuser::{Config, Session, SessionACL};
use uvfs::fs::tmpfs::{Tmpfs, TmpfsOptions};
use uvfs::{FastPaths, Vfs};
use uvfs_fuse::UvfsFuse;
use uvfs_fuse::server::Counters;

// Opcodes.
const LOOKUP: u32 = 1;
const FORGET: u32 = 2;
const GETATTR: u32 = 3;
const SETATTR: u32 = 4;
const READLINK: u32 = 5;
const SYMLINK: u32 = 6;
const MKNOD: u32 = 8;
const MKDIR: u32 = 9;
const UNLINK: u32 = 10;
const RMDIR: u32 = 11;
const RENAME: u32 = 12;
const LINK: u32 = 13;
const OPEN: u32 = 14;
const READ: u32 = 15;
const WRITE: u32 = 16;
const STATFS: u32 = 17;
const RELEASE: u32 = 18;
const FSYNC: u32 = 20;
const SETXATTR: u32 = 21;
const GETXATTR: u32 = 22;
const LISTXATTR: u32 = 23;
const REMOVEXATTR: u32 = 24;
const FLUSH: u32 = 25;
const INIT: u32 = 26;
const OPENDIR: u32 = 27;
const READDIR: u32 = 28;
const RELEASEDIR: u32 = 29;
const FSYNCDIR: u32 = 30;
const ACCESS: u32 = 34;
const CREATE: u32 = 35;
const DESTROY: u32 = 38;
const BATCH_FORGET: u32 = 42;
const FALLOCATE: u32 = 43;
const READDIRPLUS: u32 = 44;
const RENAME2: u32 = 45;
const LSEEK: u32 = 46;
const COPY_FILE_RANGE: u32 = 47;

/// Sizes of the reply records.
const ATTR_OUT: usize = 104; // attr_valid, nsec, dummy, fuse_attr (88)
const ENTRY_OUT: usize = 128; // nodeid, generation, two valids, two nsecs, fuse_attr
const OPEN_OUT: usize = 16;
const WRITE_OUT: usize = 8;
const STATFS_OUT: usize = 80;
const LSEEK_OUT: usize = 8;

const NAMES: &[&[u8]] = &[b"a", b"b", b"c", b"d", b"a", b"b", b"sub", b"f"];

/// Choices read from bytes, front to back, zeros past the end.
pub struct Choices<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Choices<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Choices { data, pos: 0 }
    }
    pub fn done(&self) -> bool {
        self.pos >= self.data.len()
    }
    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n.max(1)
    }
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }
}

/// One request, built field by field.
struct Msg(Vec<u8>);

impl Msg {
    fn new() -> Msg {
        Msg(Vec::with_capacity(128))
    }
    fn u32(mut self, v: u32) -> Msg {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> Msg {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn name(mut self, n: &[u8]) -> Msg {
        self.0.extend_from_slice(n);
        self.0.push(0);
        self
    }
    fn bytes(mut self, b: &[u8]) -> Msg {
        self.0.extend_from_slice(b);
        self
    }
}

/// The driver: the server on a thread, the kernel's side here.
pub struct Wire {
    sock: OwnedFd,
    unique: u64,
    server: Option<JoinHandle<io::Result<()>>>,
    vfs: Arc<Vfs>,
    counters: Arc<Counters>,
    /// Node ids the server handed out, with the lookups not yet forgotten.
    nodes: Vec<(u64, u64)>,
    /// Open handles: (node id, fh, is a directory).
    handles: Vec<(u64, u64, bool)>,
    /// Requests sent, by whether they succeeded.
    pub ok: usize,
    pub failed: usize,
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

impl Wire {
    /// A server over a fresh tmpfs (small limits, so that ENOSPC is
    /// reachable), initialized.
    pub fn start(fast: FastPaths) -> Wire {
        let tmpfs = Tmpfs::new(TmpfsOptions {
            size_bytes: Some(64 * 4096),
            nr_inodes: Some(32),
            ..TmpfsOptions::default()
        });
        let vfs = Vfs::builder()
            .fastpaths(fast)
            .dcache_limit(16)
            .icache_limit(16)
            .build_with_root(tmpfs.clone());
        let server = UvfsFuse::new(vfs.clone(), tmpfs).expect("server");
        let counters = server.counters();
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors socketpair writes.
        let r = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        assert_eq!(r, 0, "socketpair: {}", io::Error::last_os_error());
        // SAFETY: both fds were just made by socketpair and are owned by
        // nothing else.
        let (ours, theirs) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        let mut w = Wire {
            sock: ours,
            unique: 0,
            server: None,
            vfs,
            counters,
            nodes: Vec::new(),
            handles: Vec::new(),
            ok: 0,
            failed: 0,
        };
        // INIT goes first: the session's handshake reads it before
        // `from_fd` returns. Protocol 7.40, no optional flags.
        w.send(
            INIT,
            0,
            &Msg::new().u32(7).u32(40).u32(0).u32(0).bytes(&[0; 48]).0,
        );
        let session = Session::from_fd(server, theirs, SessionACL::All, Config::default())
            .expect("the server accepts INIT");
        let (err, init) = w.reply(INIT).expect("INIT is answered");
        assert_eq!(err, 0, "INIT failed");
        assert_eq!(le_u32(&init, 0), 7, "protocol major");
        w.server = Some(std::thread::spawn(move || session.run()));
        w
    }

    fn send(&mut self, opcode: u32, nodeid: u64, body: &[u8]) {
        self.send_as(opcode, nodeid, 0, 0, body);
    }

    fn send_as(&mut self, opcode: u32, nodeid: u64, uid: u32, gid: u32, body: &[u8]) {
        self.unique += 2;
        let len = 40 + body.len();
        let mut m = Msg::new()
            .u32(len as u32)
            .u32(opcode)
            .u64(self.unique)
            .u64(nodeid)
            .u32(uid)
            .u32(gid)
            .u32(std::process::id())
            .u32(0)
            .0;
        m.extend_from_slice(body);
        // A signal (libFuzzer's SIGALRM for its timeouts, which has no
        // SA_RESTART) interrupts the call: try again.
        let n = loop {
            // SAFETY: `m` is a valid buffer of `m.len()` bytes.
            let n = unsafe { libc::send(self.sock.as_raw_fd(), m.as_ptr().cast(), m.len(), 0) };
            if n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        };
        assert_eq!(n, m.len() as isize, "send: {}", io::Error::last_os_error());
    }

    /// The reply to the last request: its error and payload; `None` if the
    /// server closed its end.
    fn reply(&mut self, opcode: u32) -> Option<(i32, Vec<u8>)> {
        let mut buf = vec![0u8; 256 << 10];
        // Interrupted by a signal (as `send`): try again.
        let n = loop {
            // SAFETY: `buf` is a valid buffer of `buf.len()` bytes.
            let n =
                unsafe { libc::recv(self.sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n >= 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break n;
            }
        };
        assert!(n >= 0, "recv: {}", io::Error::last_os_error());
        let n = n as usize;
        if n == 0 {
            return None;
        }
        assert!(n >= 16, "opcode {opcode}: a reply of {n} bytes");
        assert_eq!(le_u32(&buf, 0) as usize, n, "opcode {opcode}: length field");
        let err = le_u32(&buf, 4) as i32;
        assert_eq!(le_u64(&buf, 8), self.unique, "opcode {opcode}: unique");
        assert!((-4095..=0).contains(&err), "opcode {opcode}: error {err}");
        if err != 0 {
            assert_eq!(n, 16, "opcode {opcode}: an error reply with a payload");
        }
        buf.truncate(n);
        buf.drain(..16);
        Some((err, buf))
    }

    /// Sends a request and checks its reply's shape: `want` is the payload
    /// size of a success (`None`: any).
    fn call(
        &mut self,
        opcode: u32,
        nodeid: u64,
        uid: u32,
        body: &[u8],
        want: Option<usize>,
    ) -> Option<Vec<u8>> {
        self.send_as(opcode, nodeid, uid, uid, body);
        let (err, payload) = match self.reply(opcode) {
            Some(r) => r,
            None => panic!("the server ended its session on opcode {opcode} (a worker panicked?)"),
        };
        if err != 0 {
            self.failed += 1;
            return None;
        }
        self.ok += 1;
        if let Some(size) = want {
            assert_eq!(payload.len(), size, "opcode {opcode}: payload size");
        }
        Some(payload)
    }

    fn node(&mut self, c: &mut Choices) -> u64 {
        match c.below(16) {
            0 => 1,
            1 => u64::from(c.u32()) | 0x100, // one the server never gave
            _ if self.nodes.is_empty() => 1,
            _ => self.nodes[c.below(self.nodes.len())].0,
        }
    }

    fn handle(&mut self, c: &mut Choices, dir: bool) -> (u64, u64) {
        let mine: Vec<(u64, u64)> = self
            .handles
            .iter()
            .filter(|h| h.2 == dir)
            .map(|h| (h.0, h.1))
            .collect();
        if mine.is_empty() || c.below(16) == 0 {
            let n = self.node(c);
            return (n, u64::from(c.u32()));
        }
        mine[c.below(mine.len())]
    }

    fn name(c: &mut Choices) -> Vec<u8> {
        match c.below(24) {
            0 => b".".to_vec(),
            1 => b"..".to_vec(),
            2 => vec![b'x'; 256],
            3 => Vec::new(),
            _ => c.pick(NAMES).to_vec(),
        }
    }

    /// An entry the server handed out: the kernel now holds one more
    /// lookup of its node. A node id of 0 is a negative entry (a cacheable
    /// ENOENT), which only LOOKUP may answer.
    fn learned(&mut self, entry: &[u8], lookup: bool) {
        let id = le_u64(entry, 0);
        if id == 0 {
            assert!(
                lookup,
                "an entry with node id 0 from a request that creates"
            );
            return;
        }
        match self.nodes.iter_mut().find(|n| n.0 == id) {
            Some(n) => n.1 += 1,
            None => self.nodes.push((id, 1)),
        }
    }

    /// One request chosen by `c`.
    pub fn step(&mut self, c: &mut Choices) {
        let uid = if c.below(8) == 0 { 1000 } else { 0 };
        match c.below(30) {
            0..=3 => {
                let p = self.node(c);
                let n = Self::name(c);
                if let Some(e) = self.call(LOOKUP, p, uid, &Msg::new().name(&n).0, Some(ENTRY_OUT))
                {
                    self.learned(&e, true);
                }
            }
            4 => {
                let n = self.node(c);
                let fh = self.handle(c, false).1;
                let flags = u32::from(c.below(2) == 0);
                self.call(
                    GETATTR,
                    n,
                    uid,
                    &Msg::new().u32(flags).u32(0).u64(fh).0,
                    Some(ATTR_OUT),
                );
            }
            5 => {
                let n = self.node(c);
                let fh = self.handle(c, false).1;
                let valid = u32::from(c.u8()) & 0x1ff;
                let m = Msg::new()
                    .u32(valid)
                    .u32(0)
                    .u64(fh)
                    .u64(u64::from(c.u32()) % 300_000)
                    .u64(0)
                    .u64(u64::from(c.u32()))
                    .u64(u64::from(c.u32()))
                    .u64(0)
                    .u32(c.u32() % 1_000_000_000)
                    .u32(c.u32() % 1_000_000_000)
                    .u32(0)
                    .u32(0o100000 | (c.u32() & 0o7777))
                    .u32(0)
                    .u32(c.pick(&[0, 1000, u32::MAX]))
                    .u32(c.pick(&[0, 1000, u32::MAX]))
                    .u32(0);
                self.call(SETATTR, n, uid, &m.0, Some(ATTR_OUT));
            }
            6 => {
                let p = self.node(c);
                let n = Self::name(c);
                let mode = 0o040000 | (c.u32() & 0o7777);
                if let Some(e) = self.call(
                    MKDIR,
                    p,
                    uid,
                    &Msg::new().u32(mode).u32(0o022).name(&n).0,
                    Some(ENTRY_OUT),
                ) {
                    self.learned(&e, false);
                }
            }
            7 => {
                let p = self.node(c);
                let n = Self::name(c);
                let mode = c.pick(&[0o010644u32, 0o020644, 0o140644, 0o100644, 0]);
                let m = Msg::new()
                    .u32(mode)
                    .u32(c.u32() & 0xffff)
                    .u32(0o022)
                    .u32(0)
                    .name(&n);
                if let Some(e) = self.call(MKNOD, p, uid, &m.0, Some(ENTRY_OUT)) {
                    self.learned(&e, false);
                }
            }
            8..=10 => {
                let p = self.node(c);
                let n = Self::name(c);
                let flags = c.pick(&[0o2u32, 0o102, 0o302, 0o1102, 0o2102, 0o101, 0o100]);
                let m = Msg::new()
                    .u32(flags)
                    .u32(0o100644)
                    .u32(0o022)
                    .u32(0)
                    .name(&n);
                if let Some(r) = self.call(CREATE, p, uid, &m.0, Some(ENTRY_OUT + OPEN_OUT)) {
                    self.learned(&r, false);
                    let id = le_u64(&r, 0);
                    self.handles.push((id, le_u64(&r, ENTRY_OUT), false));
                }
            }
            11 | 12 => {
                let n = self.node(c);
                let flags = c.pick(&[0u32, 1, 2, 0o1002, 0o2001, 0o200000, 0o4000]);
                if let Some(r) = self.call(
                    OPEN,
                    n,
                    uid,
                    &Msg::new().u32(flags).u32(0).0,
                    Some(OPEN_OUT),
                ) {
                    self.handles.push((n, le_u64(&r, 0), false));
                }
            }
            13 | 14 => {
                let (n, fh) = self.handle(c, false);
                let off = u64::from(c.u32()) % 300_000;
                let size = c.pick(&[0u32, 1, 4096, 65536, 131072]);
                let m = Msg::new()
                    .u64(fh)
                    .u64(off)
                    .u32(size)
                    .u32(0)
                    .u64(0)
                    .u32(0)
                    .u32(0);
                if let Some(r) = self.call(READ, n, uid, &m.0, None) {
                    assert!(
                        r.len() <= size as usize,
                        "READ returned {} bytes for {size}",
                        r.len()
                    );
                }
            }
            15 | 16 => {
                let (n, fh) = self.handle(c, false);
                let off = u64::from(c.u32()) % 300_000;
                let len = c.pick(&[0usize, 1, 100, 4096, 70_000]);
                let data = vec![c.u8(); len];
                let m = Msg::new()
                    .u64(fh)
                    .u64(off)
                    .u32(len as u32)
                    .u32(0)
                    .u64(0)
                    .u32(0)
                    .u32(0)
                    .bytes(&data);
                if let Some(r) = self.call(WRITE, n, uid, &m.0, Some(WRITE_OUT)) {
                    assert!(
                        le_u32(&r, 0) as usize <= len,
                        "WRITE wrote more than it was given"
                    );
                }
            }
            17 => {
                if !self.handles.is_empty() {
                    let i = c.below(self.handles.len());
                    let (n, fh, dir) = self.handles.swap_remove(i);
                    let op = if dir { RELEASEDIR } else { RELEASE };
                    self.call(
                        op,
                        n,
                        uid,
                        &Msg::new().u64(fh).u32(0).u32(0).u64(0).0,
                        Some(0),
                    );
                }
            }
            18 => {
                let (n, fh) = self.handle(c, false);
                let op = c.pick(&[FLUSH, FSYNC]);
                let m = if op == FLUSH {
                    Msg::new().u64(fh).u32(0).u32(0).u64(0)
                } else {
                    Msg::new().u64(fh).u32(c.u32() & 1).u32(0)
                };
                self.call(op, n, uid, &m.0, Some(0));
            }
            19 => {
                let p = self.node(c);
                let n = Self::name(c);
                let op = c.pick(&[UNLINK, RMDIR]);
                self.call(op, p, uid, &Msg::new().name(&n).0, Some(0));
            }
            20 => {
                let p = self.node(c);
                let q = self.node(c);
                let (a, b) = (Self::name(c), Self::name(c));
                let flags = c.pick(&[0u32, 1, 2, 4, 3]);
                if c.below(2) == 0 {
                    self.call(
                        RENAME2,
                        p,
                        uid,
                        &Msg::new().u64(q).u32(flags).u32(0).name(&a).name(&b).0,
                        Some(0),
                    );
                } else {
                    self.call(
                        RENAME,
                        p,
                        uid,
                        &Msg::new().u64(q).name(&a).name(&b).0,
                        Some(0),
                    );
                }
            }
            21 => {
                let old = self.node(c);
                let p = self.node(c);
                let n = Self::name(c);
                if let Some(e) = self.call(
                    LINK,
                    p,
                    uid,
                    &Msg::new().u64(old).name(&n).0,
                    Some(ENTRY_OUT),
                ) {
                    self.learned(&e, false);
                }
            }
            22 => {
                let p = self.node(c);
                let n = Self::name(c);
                let t = c.pick(&[&b"a"[..], b"../b", b"/etc/passwd", b"sub/f"]);
                if let Some(e) = self.call(
                    SYMLINK,
                    p,
                    uid,
                    &Msg::new().name(&n).name(t).0,
                    Some(ENTRY_OUT),
                ) {
                    self.learned(&e, false);
                }
                let n = self.node(c);
                self.call(READLINK, n, uid, &[], None);
            }
            23 => {
                let n = self.node(c);
                if let Some(r) = self.call(
                    OPENDIR,
                    n,
                    uid,
                    &Msg::new().u32(0o200000).u32(0).0,
                    Some(OPEN_OUT),
                ) {
                    self.handles.push((n, le_u64(&r, 0), true));
                }
            }
            24 | 25 => {
                let (n, fh) = self.handle(c, true);
                let off = u64::from(c.u8());
                let size = c.pick(&[0u32, 64, 4096]);
                let plus = c.below(2) == 0;
                let m = Msg::new()
                    .u64(fh)
                    .u64(off)
                    .u32(size)
                    .u32(0)
                    .u64(0)
                    .u32(0)
                    .u32(0);
                if let Some(r) =
                    self.call(if plus { READDIRPLUS } else { READDIR }, n, uid, &m.0, None)
                {
                    assert!(r.len() <= size as usize, "a listing longer than asked for");
                    if plus {
                        // Each entry of a READDIRPLUS is a lookup.
                        let mut at = 0;
                        while at + ENTRY_OUT + 24 <= r.len() {
                            let namelen = le_u32(&r, at + ENTRY_OUT + 16) as usize;
                            let start = at + ENTRY_OUT + 24;
                            let name = &r[start..(start + namelen).min(r.len())];
                            // The kernel takes no lookup for "." and ".."
                            // entries, so it never forgets them.
                            if le_u64(&r, at) != 0 && name != b"." && name != b".." {
                                self.learned(&r[at..at + ENTRY_OUT], true);
                            }
                            at += (ENTRY_OUT + 24 + namelen).div_ceil(8) * 8;
                        }
                    }
                }
            }
            26 => {
                let n = self.node(c);
                match c.below(4) {
                    0 => {
                        self.call(STATFS, n, uid, &[], Some(STATFS_OUT));
                    }
                    1 => {
                        self.call(
                            ACCESS,
                            n,
                            uid,
                            &Msg::new().u32(c.u32() & 7).u32(0).0,
                            Some(0),
                        );
                    }
                    2 => {
                        let (n, fh) = self.handle(c, true);
                        self.call(
                            FSYNCDIR,
                            n,
                            uid,
                            &Msg::new().u64(fh).u32(0).u32(0).0,
                            Some(0),
                        );
                    }
                    _ => {
                        let m = Msg::new().u32(8).u32(0).name(b"user.x").bytes(b"12345678");
                        self.call(SETXATTR, n, uid, &m.0, Some(0));
                        self.call(
                            GETXATTR,
                            n,
                            uid,
                            &Msg::new().u32(c.u32() % 64).u32(0).name(b"user.x").0,
                            None,
                        );
                        self.call(
                            LISTXATTR,
                            n,
                            uid,
                            &Msg::new().u32(c.u32() % 64).u32(0).0,
                            None,
                        );
                        self.call(REMOVEXATTR, n, uid, &Msg::new().name(b"user.x").0, Some(0));
                    }
                }
            }
            27 => {
                let (n, fh) = self.handle(c, false);
                let m = Msg::new()
                    .u64(fh)
                    .u64(u64::from(c.u32()) % 300_000)
                    .u64(u64::from(c.u32()) % 300_000)
                    .u32(c.pick(&[0u32, 1, 2, 3, 0x10, 0x20, 0x40]))
                    .u32(0);
                self.call(FALLOCATE, n, uid, &m.0, Some(0));
            }
            28 => {
                let (n, fh) = self.handle(c, false);
                let m = Msg::new()
                    .u64(fh)
                    .u64(u64::from(c.u32()) % 300_000)
                    .u32(c.pick(&[0u32, 1, 2, 3, 4, 9]))
                    .u32(0);
                self.call(LSEEK, n, uid, &m.0, Some(LSEEK_OUT));
            }
            _ => {
                let (n, fh) = self.handle(c, false);
                let (n2, fh2) = self.handle(c, false);
                let m = Msg::new()
                    .u64(fh)
                    .u64(u64::from(c.u32()) % 300_000)
                    .u64(n2)
                    .u64(fh2)
                    .u64(u64::from(c.u32()) % 300_000)
                    .u64(u64::from(c.u32()) % 100_000)
                    .u64(0);
                self.call(COPY_FILE_RANGE, n, uid, &m.0, Some(WRITE_OUT));
            }
        }
        // Now and then the kernel forgets part of what it looked up.
        if c.below(8) == 0 && !self.nodes.is_empty() {
            let i = c.below(self.nodes.len());
            let k = 1 + c.below(self.nodes[i].1 as usize) as u64;
            let id = self.nodes[i].0;
            self.forget(&[(id, k)]);
        }
    }

    /// Drops the newest node from the driver's books without a FORGET, as
    /// a kernel that lost a lookup would: `finish` must then fail (the
    /// test that shows the end check can fail).
    pub fn lose_a_lookup(&mut self) -> bool {
        self.nodes.pop().is_some()
    }

    fn forget(&mut self, what: &[(u64, u64)]) {
        if what.len() == 1 {
            self.send(FORGET, what[0].0, &Msg::new().u64(what[0].1).0);
        } else {
            let mut m = Msg::new().u32(what.len() as u32).u32(0);
            for &(id, k) in what {
                m = m.u64(id).u64(k);
            }
            self.send(BATCH_FORGET, 0, &m.0);
        }
        for &(id, k) in what {
            if let Some(n) = self.nodes.iter_mut().find(|n| n.0 == id) {
                n.1 -= k;
            }
        }
        self.nodes.retain(|n| n.1 > 0);
    }

    /// Releases every handle, forgets every lookup, checks the server holds
    /// only the root, sends DESTROY, and checks the session and the VFS.
    pub fn finish(mut self) {
        for (n, fh, dir) in std::mem::take(&mut self.handles) {
            let op = if dir { RELEASEDIR } else { RELEASE };
            self.call(
                op,
                n,
                0,
                &Msg::new().u64(fh).u32(0).u32(0).u64(0).0,
                Some(0),
            );
        }
        let all: Vec<(u64, u64)> = self.nodes.clone();
        if !all.is_empty() {
            self.forget(&all);
        }
        // A forget has no reply: a STATFS after it is answered only once
        // the forgets before it were read (one worker, in order).
        self.call(STATFS, 1, 0, &[], Some(STATFS_OUT));
        assert_eq!(
            self.counters.nodes.load(Ordering::Relaxed),
            1,
            "every lookup forgotten, but the server still holds nodes other than the root"
        );
        self.send(DESTROY, 0, &[]);
        let (err, _) = self.reply(DESTROY).expect("DESTROY is answered");
        assert_eq!(err, 0);
        let r = self
            .server
            .take()
            .unwrap()
            .join()
            .expect("the session thread panicked");
        assert!(r.is_ok(), "the session ended with {r:?}");
        self.vfs.drop_caches();
        if let Err(e) = self.vfs.check_consistency() {
            panic!("after the session: {e}");
        }
    }
}

/// Runs the requests `data` chooses on a fresh server, then the end checks.
pub fn run(data: &[u8], fast: FastPaths) -> (usize, usize) {
    let mut w = Wire::start(fast);
    let mut c = Choices::new(data);
    let mut steps = 0;
    while !c.done() && steps < 400 {
        w.step(&mut c);
        steps += 1;
    }
    let counts = (w.ok, w.failed);
    w.finish();
    counts
}
