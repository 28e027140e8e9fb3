//! Differential test of special files against the host kernel's tmpfs:
//! mknod of every type (and the refusals), their stat (mode, rdev, size),
//! opening device and socket nodes, and a FIFO's non-blocking life —
//! the open rules, reads, writes, the 64 KiB ring of pages and
//! `PIPE_BUF`, `EPIPE`, end of file, `ESPIPE`, `F_GETPIPE_SZ`/
//! `F_SETPIPE_SZ`, packet mode — as one script run on both sides and
//! compared call by call; then unprivileged mknod (a forked child as
//! uid 1000), and blocking opens, reads and writes across threads, each
//! side with the same two-thread program.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use support::host::{TempDir, fork_child};
use support::vfs::{fasts, user};
use uvfs::stat::makedev;
use uvfs::uapi::*;
use uvfs::{Errno, Process, Vfs};

const S_IFIFO: u32 = 0o010000;
const S_IFCHR: u32 = 0o020000;
const S_IFBLK: u32 = 0o060000;
const S_IFSOCK: u32 = 0o140000;
const S_IFREG: u32 = 0o100000;
const S_IFDIR: u32 = 0o040000;

/// One call of the script; fds are slots (indices into the fds opened so
/// far, in order, a failed open taking a slot too).
#[derive(Clone, Debug)]
enum Op {
    Mknod(&'static str, u32, u64),
    Mkfifo(&'static str, u32),
    Stat(&'static str),
    Open(&'static str, i32),
    Close(usize),
    /// `n` bytes of the byte `b`.
    Write(usize, usize, u8),
    Read(usize, usize),
    Lseek(usize, i64, i32),
    Pread(usize),
    Pwrite(usize),
    Ftruncate(usize),
    Truncate(&'static str),
    Fsync(usize),
    Fallocate(usize),
    Fcntl(usize, i32, u64),
    Unlink(&'static str),
    /// The directory's names with their `d_type`, sorted.
    List,
}

/// What a call gave: a number (and for reads, the bytes), or an errno.
type Out = Result<(i64, Vec<u8>), i32>;

fn script() -> Vec<Op> {
    use Op::*;
    let nb = O_NONBLOCK;
    vec![
        Mknod("fifo", S_IFIFO | 0o666, 0),
        Mknod("fifo", S_IFIFO | 0o666, 0),
        Mkfifo("fifo2", 0o600),
        Mkfifo("bad", S_IFREG | 0o600),
        Mknod("reg0", 0o640, 0),
        Mknod("reg", S_IFREG | 0o4755, 0),
        Mknod("dir", S_IFDIR | 0o755, 0),
        Mknod("unknown", 0o170000 | 0o644, 0),
        Mknod("chr", S_IFCHR | 0o644, makedev(42, 7)),
        Mknod("blk", S_IFBLK | 0o600, makedev(300, 70000)),
        Mknod("whiteout", S_IFCHR, 0),
        Mknod("sock", S_IFSOCK | 0o777, 0),
        Mknod("fifodev", S_IFIFO | 0o644, makedev(1, 3)),
        Mknod("huge", S_IFCHR | 0o644, 1 << 32),
        Mknod("nx/a", S_IFIFO | 0o644, 0),
        Mknod("slash/", S_IFIFO | 0o644, 0),
        Mknod("", S_IFIFO | 0o644, 0),
        Stat("fifo"),
        Stat("fifo2"),
        Stat("reg0"),
        Stat("reg"),
        Stat("chr"),
        Stat("blk"),
        Stat("whiteout"),
        Stat("sock"),
        Stat("fifodev"),
        List,
        // Device and socket nodes: no driver, ENXIO; O_PATH opens them.
        Open("chr", O_RDONLY),      // 0
        Open("blk", O_RDWR),        // 1
        Open("sock", O_WRONLY),     // 2
        Open("whiteout", O_RDONLY), // 3
        Open("chr", O_PATH),        // 4
        Close(4),
        Open("chr", O_RDONLY | O_TRUNC), // 5
        // A FIFO's open rules.
        Open("fifo", O_WRONLY | nb), // 6: ENXIO, no reader
        Open("fifo", O_RDONLY | nb), // 7: r
        Read(7, 10),                 // no writer: end of file
        Open("fifo", O_WRONLY | nb), // 8: w
        Read(7, 10),                 // EAGAIN
        Write(8, 0, b'z'),
        Read(7, 0),
        Write(8, 5, b'a'),
        Read(7, 3),
        Read(7, 10),
        Stat("fifo"),
        Fcntl(8, F_GETPIPE_SZ, 0),
        Fcntl(7, F_GETPIPE_SZ, 0),
        // The ring: 16 pages; a write's remainder below a page merges
        // into the last page only if the pipe held data.
        Write(8, 70000, b'b'),
        Write(8, 1, b'c'),
        Read(7, 100),
        Write(8, 1, b'c'),
        Read(7, 4000),
        Write(8, 1, b'd'),
        Write(8, 4096, b'e'),
        Read(7, 100_000),
        Read(7, 10),
        Write(8, 1, b'f'),
        Write(8, 10, b'g'),
        Read(7, 100),
        // Not seekable, no positions.
        Lseek(7, 0, SEEK_SET),
        Lseek(7, 0, SEEK_END),
        Lseek(7, 0, 9),
        Pread(7),
        Pread(8),
        Pwrite(8),
        Pwrite(7),
        Ftruncate(8),
        Truncate("fifo"),
        Fsync(7),
        Fallocate(8),
        // Sizes.
        Fcntl(8, F_SETPIPE_SZ, 4096),
        Write(8, 8192, b'h'),
        Fcntl(7, F_GETPIPE_SZ, 0),
        Fcntl(8, F_SETPIPE_SZ, 100_000),
        Write(8, 5000, b'i'),
        Fcntl(8, F_SETPIPE_SZ, 4096),
        Fcntl(8, F_SETPIPE_SZ, 0),
        Fcntl(8, F_SETPIPE_SZ, 1 << 20),
        Fcntl(8, F_SETPIPE_SZ, (1 << 20) + 1),
        Fcntl(8, F_SETPIPE_SZ, (1 << 31) + 1),
        Read(7, 100_000),
        Fcntl(8, F_SETPIPE_SZ, 0),
        Fcntl(8, F_GETPIPE_SZ, 0),
        Fcntl(8, F_SETPIPE_SZ, 65536),
        // Packet mode (O_DIRECT set by F_SETFL): one write, one read.
        Fcntl(8, F_SETFL, (O_NONBLOCK | O_DIRECT) as u64),
        Write(8, 3, b'j'),
        Write(8, 3, b'k'),
        Read(7, 10),
        Read(7, 1),
        Read(7, 10),
        Fcntl(8, F_SETFL, O_NONBLOCK as u64),
        // The last writer goes: the data stays readable, then EOF.
        Write(8, 7, b'l'),
        Close(8),
        Read(7, 3),
        Read(7, 10),
        Read(7, 10),
        // O_RDWR never waits; the pipe goes with its last open.
        Open("fifo", O_RDWR), // 9
        Write(9, 10, b'm'),
        Close(9),
        Open("fifo", O_RDONLY | nb), // 10: data kept while 7 is open
        Read(10, 100),
        Close(10),
        Close(7),
        Open("fifo", O_RDWR | nb), // 11
        Write(11, 4, b'n'),
        Close(11),
        Open("fifo", O_RDWR | nb), // 12: a new, empty pipe
        Read(12, 10),
        Close(12),
        Open("fifo", O_WRONLY | nb),         // 13: ENXIO again
        Open("fifo", O_RDWR | O_DIRECT),     // 14: EINVAL after the open
        Open("fifo", 3 | nb),                // 15: neither read nor write
        Open("fifo", O_RDWR | nb | O_TRUNC), // 16
        Close(16),
        // A write with no reader left.
        Open("fifo", O_RDONLY | nb), // 17
        Open("fifo", O_WRONLY | nb), // 18
        Close(17),
        Write(18, 1, b'o'),
        Write(18, 0, b'o'),
        Close(18),
        Open("fifo", O_RDONLY | O_DIRECTORY | nb), // 19
        Open("fifo", O_CREAT | O_EXCL | O_RDONLY), // 20
        Open("fifo", O_CREAT | O_RDWR),            // 21
        Close(21),
        Unlink("fifo"),
        Unlink("chr"),
        List,
    ]
}

/// The calls, on one side.
trait Side {
    fn mknod(&mut self, path: &str, mode: u32, dev: u64) -> Result<i64, i32>;
    fn stat(&mut self, path: &str) -> Result<i64, i32>;
    fn open(&mut self, path: &str, flags: i32) -> Result<i64, i32>;
    fn close(&mut self, fd: i32) -> Result<i64, i32>;
    fn write(&mut self, fd: i32, data: &[u8]) -> Result<i64, i32>;
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<i64, i32>;
    fn lseek(&mut self, fd: i32, off: i64, whence: i32) -> Result<i64, i32>;
    fn pread(&mut self, fd: i32) -> Result<i64, i32>;
    fn pwrite(&mut self, fd: i32) -> Result<i64, i32>;
    fn ftruncate(&mut self, fd: i32) -> Result<i64, i32>;
    fn truncate(&mut self, path: &str) -> Result<i64, i32>;
    fn fsync(&mut self, fd: i32) -> Result<i64, i32>;
    fn fallocate(&mut self, fd: i32) -> Result<i64, i32>;
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: u64) -> Result<i64, i32>;
    fn unlink(&mut self, path: &str) -> Result<i64, i32>;
    fn list(&mut self) -> Vec<(String, u8)>;
}

/// Packs the fields of a stat the test compares into one number's worth
/// of text: mode, rdev, size, blocks, nlink.
fn stat_key(mode: u32, rdev: u64, size: i64, blocks: i64, nlink: u64) -> i64 {
    let _ = (size, blocks, nlink);
    // Mode and rdev carry the news; size/blocks/nlink must be 0/0/1.
    assert_eq!((size, blocks, nlink), (0, 0, 1), "mode {mode:o}");
    i64::from(mode) << 40 | rdev as i64 & 0xff_ffff_ffff
}

fn run(side: &mut dyn Side) -> Vec<(String, Out)> {
    let mut fds: Vec<i32> = Vec::new();
    let mut out = Vec::new();
    for op in script() {
        let fd = |i: usize| fds.get(i).copied().unwrap_or(-1);
        let r: Out = match op {
            Op::Mknod(p, m, d) => side.mknod(p, m, d).map(|v| (v, vec![])),
            Op::Mkfifo(p, m) => side.mknod(p, S_IFIFO | m, 0).map(|v| (v, vec![])),
            Op::Stat(p) => side.stat(p).map(|v| (v, vec![])),
            Op::Open(p, f) => {
                let r = side.open(p, f);
                fds.push(r.map_or(-1, |v| v as i32));
                r.map(|_| (0, vec![]))
            }
            Op::Close(i) => side.close(fd(i)).map(|v| (v, vec![])),
            Op::Write(i, n, b) => side.write(fd(i), &vec![b; n]).map(|v| (v, vec![])),
            Op::Read(i, n) => {
                let mut buf = vec![0u8; n];
                side.read(fd(i), &mut buf).map(|v| {
                    buf.truncate(v as usize);
                    (v, buf)
                })
            }
            Op::Lseek(i, o, w) => side.lseek(fd(i), o, w).map(|v| (v, vec![])),
            Op::Pread(i) => side.pread(fd(i)).map(|v| (v, vec![])),
            Op::Pwrite(i) => side.pwrite(fd(i)).map(|v| (v, vec![])),
            Op::Ftruncate(i) => side.ftruncate(fd(i)).map(|v| (v, vec![])),
            Op::Truncate(p) => side.truncate(p).map(|v| (v, vec![])),
            Op::Fsync(i) => side.fsync(fd(i)).map(|v| (v, vec![])),
            Op::Fallocate(i) => side.fallocate(fd(i)).map(|v| (v, vec![])),
            Op::Fcntl(i, c, a) => side.fcntl(fd(i), c, a).map(|v| (v, vec![])),
            Op::Unlink(p) => side.unlink(p).map(|v| (v, vec![])),
            Op::List => Ok((0, format!("{:?}", side.list()).into_bytes())),
        };
        out.push((format!("{op:?}"), r));
    }
    out
}

struct Host {
    dir: String,
}

fn cpath(dir: &str, p: &str) -> CString {
    CString::new(format!("{dir}/{p}")).unwrap()
}

fn ret(r: i64) -> Result<i64, i32> {
    if r < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap())
    } else {
        Ok(r)
    }
}

impl Side for Host {
    fn mknod(&mut self, path: &str, mode: u32, dev: u64) -> Result<i64, i32> {
        let p = if path.is_empty() {
            CString::new("").unwrap()
        } else {
            cpath(&self.dir, path)
        };
        // SAFETY: a valid C string.
        ret(unsafe { libc::mknod(p.as_ptr(), mode, dev) }.into())
    }
    fn stat(&mut self, path: &str) -> Result<i64, i32> {
        let p = cpath(&self.dir, path);
        // SAFETY: all-zero bytes are a valid `struct stat`.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid C string and a writable stat.
        ret(unsafe { libc::stat(p.as_ptr(), &mut st) }.into())?;
        Ok(stat_key(
            st.st_mode,
            st.st_rdev,
            st.st_size,
            st.st_blocks,
            st.st_nlink,
        ))
    }
    fn open(&mut self, path: &str, flags: i32) -> Result<i64, i32> {
        let p = cpath(&self.dir, path);
        // SAFETY: a valid C string.
        ret(unsafe { libc::open(p.as_ptr(), flags, 0o644) }.into())
    }
    fn close(&mut self, fd: i32) -> Result<i64, i32> {
        // SAFETY: closes an fd this test opened (or a bad one: EBADF).
        ret(unsafe { libc::close(fd) }.into())
    }
    fn write(&mut self, fd: i32, data: &[u8]) -> Result<i64, i32> {
        // SAFETY: `data` is readable for its length.
        ret(unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) } as i64)
    }
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<i64, i32> {
        // SAFETY: `buf` is writable for its length.
        ret(unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } as i64)
    }
    fn lseek(&mut self, fd: i32, off: i64, whence: i32) -> Result<i64, i32> {
        // SAFETY: plain syscall.
        ret(unsafe { libc::lseek(fd, off, whence) })
    }
    fn pread(&mut self, fd: i32) -> Result<i64, i32> {
        let mut b = [0u8; 4];
        // SAFETY: `b` is writable.
        ret(unsafe { libc::pread(fd, b.as_mut_ptr().cast(), 4, 0) } as i64)
    }
    fn pwrite(&mut self, fd: i32) -> Result<i64, i32> {
        // SAFETY: a readable literal.
        ret(unsafe { libc::pwrite(fd, b"xy".as_ptr().cast(), 2, 0) } as i64)
    }
    fn ftruncate(&mut self, fd: i32) -> Result<i64, i32> {
        // SAFETY: plain syscall.
        ret(unsafe { libc::ftruncate(fd, 0) }.into())
    }
    fn truncate(&mut self, path: &str) -> Result<i64, i32> {
        let p = cpath(&self.dir, path);
        // SAFETY: a valid C string.
        ret(unsafe { libc::truncate(p.as_ptr(), 0) }.into())
    }
    fn fsync(&mut self, fd: i32) -> Result<i64, i32> {
        // SAFETY: plain syscall.
        ret(unsafe { libc::fsync(fd) }.into())
    }
    fn fallocate(&mut self, fd: i32) -> Result<i64, i32> {
        // SAFETY: plain syscall.
        ret(unsafe { libc::fallocate(fd, 0, 0, 10) }.into())
    }
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: u64) -> Result<i64, i32> {
        // SAFETY: integer-argument commands only.
        ret(unsafe { libc::fcntl(fd, cmd, arg as libc::c_ulong) }.into())
    }
    fn unlink(&mut self, path: &str) -> Result<i64, i32> {
        let p = cpath(&self.dir, path);
        // SAFETY: a valid C string.
        ret(unsafe { libc::unlink(p.as_ptr()) }.into())
    }
    fn list(&mut self) -> Vec<(String, u8)> {
        use std::os::unix::fs::FileTypeExt;
        let mut v: Vec<(String, u8)> = std::fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let t = e.file_type().unwrap();
                let dt = if t.is_fifo() {
                    DT_FIFO
                } else if t.is_char_device() {
                    DT_CHR
                } else if t.is_block_device() {
                    DT_BLK
                } else if t.is_socket() {
                    DT_SOCK
                } else if t.is_dir() {
                    DT_DIR
                } else {
                    DT_REG
                };
                (e.file_name().into_string().unwrap(), dt)
            })
            .collect();
        v.sort();
        v
    }
}

struct Uvfs(Process);

fn e(r: Errno) -> i32 {
    r.raw()
}

fn upath(p: &str) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!("/d/{p}")
    }
}

impl Side for Uvfs {
    fn mknod(&mut self, path: &str, mode: u32, dev: u64) -> Result<i64, i32> {
        self.0.mknod(upath(path), mode, dev).map(|_| 0).map_err(e)
    }
    fn stat(&mut self, path: &str) -> Result<i64, i32> {
        let st = self.0.stat(upath(path)).map_err(e)?;
        Ok(stat_key(
            st.st_mode,
            st.st_rdev,
            st.st_size,
            st.st_blocks,
            st.st_nlink,
        ))
    }
    fn open(&mut self, path: &str, flags: i32) -> Result<i64, i32> {
        self.0
            .open(upath(path), flags, 0o644)
            .map(i64::from)
            .map_err(e)
    }
    fn close(&mut self, fd: i32) -> Result<i64, i32> {
        self.0.close(fd).map(|_| 0).map_err(e)
    }
    fn write(&mut self, fd: i32, data: &[u8]) -> Result<i64, i32> {
        self.0.write(fd, data).map(|n| n as i64).map_err(e)
    }
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<i64, i32> {
        self.0.read(fd, buf).map(|n| n as i64).map_err(e)
    }
    fn lseek(&mut self, fd: i32, off: i64, whence: i32) -> Result<i64, i32> {
        self.0.lseek(fd, off, whence).map_err(e)
    }
    fn pread(&mut self, fd: i32) -> Result<i64, i32> {
        let mut b = [0u8; 4];
        self.0.pread(fd, &mut b, 0).map(|n| n as i64).map_err(e)
    }
    fn pwrite(&mut self, fd: i32) -> Result<i64, i32> {
        self.0.pwrite(fd, b"xy", 0).map(|n| n as i64).map_err(e)
    }
    fn ftruncate(&mut self, fd: i32) -> Result<i64, i32> {
        self.0.ftruncate(fd, 0).map(|_| 0).map_err(e)
    }
    fn truncate(&mut self, path: &str) -> Result<i64, i32> {
        self.0.truncate(upath(path), 0).map(|_| 0).map_err(e)
    }
    fn fsync(&mut self, fd: i32) -> Result<i64, i32> {
        self.0.fsync(fd).map(|_| 0).map_err(e)
    }
    fn fallocate(&mut self, fd: i32) -> Result<i64, i32> {
        self.0.fallocate(fd, 0, 0, 10).map(|_| 0).map_err(e)
    }
    fn fcntl(&mut self, fd: i32, cmd: i32, arg: u64) -> Result<i64, i32> {
        self.0.fcntl(fd, cmd, arg).map(i64::from).map_err(e)
    }
    fn unlink(&mut self, path: &str) -> Result<i64, i32> {
        self.0.unlink(upath(path)).map(|_| 0).map_err(e)
    }
    fn list(&mut self) -> Vec<(String, u8)> {
        let fd = self.0.open("/d", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let mut v: Vec<(String, u8)> = self
            .0
            .readdir(fd)
            .map(|r| r.unwrap())
            .filter(|d| d.name != b"." && d.name != b"..")
            .map(|d| (String::from_utf8(d.name).unwrap(), d.d_type))
            .collect();
        self.0.close(fd).unwrap();
        v.sort();
        v
    }
}

fn compare(want: &[(String, Out)], got: &[(String, Out)], what: &str) {
    for ((op, w), (_, g)) in want.iter().zip(got) {
        assert_eq!(w, g, "{what}: {op}: host {w:?}, uvfs {g:?}");
    }
}

/// Whether this process has capability `bit` in its effective set.
fn host_has_cap(bit: u32) -> bool {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let eff = s
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .unwrap();
    eff >> bit & 1 == 1
}

#[test]
fn special_files_match_the_host_tmpfs() {
    // SAFETY: reads this process's effective uid.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: the host side needs root (CAP_MKNOD)");
        return;
    }
    let t = TempDir::new("special");
    // SAFETY: sets this process's umask (the host side's mode bits).
    let old = unsafe { libc::umask(0o022) };
    let want = run(&mut Host {
        dir: t.as_str().to_string(),
    });
    // SAFETY: as above.
    unsafe { libc::umask(old) };
    // The harness saw the host act: the FIFO was made, the 70,000-byte
    // write filled 64 KiB, the writer with no reader got EPIPE.
    assert_eq!(want[0].1, Ok((0, vec![])));
    assert!(
        want.iter()
            .any(|(op, r)| op == "Write(8, 70000, 98)" && *r == Ok((65536, vec![])))
    );
    assert!(want.iter().any(|(_, r)| *r == Err(libc::EPIPE)));
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        // Growing a pipe past 1 MiB needs CAP_SYS_RESOURCE, which a
        // container's root may lack: the uvfs process gets the host's.
        p.set_cap_sys_resource(host_has_cap(24));
        p.mkdir("/d", 0o755).unwrap();
        let got = run(&mut Uvfs(p));
        compare(&want, &got, &format!("{fast}"));
    }
}

/// The unprivileged rules: devices need CAP_MKNOD (EPERM), a whiteout
/// and FIFOs, sockets, regular files do not; a directory without write
/// permission refuses first (EACCES).
#[test]
fn unprivileged_mknod_matches_the_host() {
    // SAFETY: reads this process's effective uid.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to fork a uid-1000 child");
        return;
    }
    let t = TempDir::new("special-user");
    std::fs::create_dir(t.path().join("w")).unwrap();
    std::fs::create_dir(t.path().join("ro")).unwrap();
    let w = t.path().join("w");
    std::os::unix::fs::chown(&w, Some(1000), Some(1000)).unwrap();
    let calls: [(&str, u32, u64); 7] = [
        ("w/c", S_IFCHR | 0o644, makedev(1, 3)),
        ("w/b", S_IFBLK | 0o644, makedev(7, 0)),
        ("w/wo", S_IFCHR | 0o644, 0),
        ("w/f", S_IFIFO | 0o644, 0),
        ("w/s", S_IFSOCK | 0o644, 0),
        ("w/r", 0o644, 0),
        ("ro/c", S_IFCHR | 0o644, makedev(1, 3)),
    ];
    let paths: Vec<CString> = calls.iter().map(|c| cpath(t.as_str(), c.0)).collect();
    let mut want = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let p = paths[i].as_ptr();
        let (mode, dev) = (c.1, c.2);
        // SAFETY: the child makes system calls only, on C strings built
        // before the fork.
        let (r, _) = unsafe {
            fork_child(|| {
                if libc::setgid(1000) != 0 || libc::setuid(1000) != 0 {
                    return -1000;
                }
                if libc::mknod(p, mode, dev) == 0 {
                    0
                } else {
                    -*libc::__errno_location()
                }
            })
        };
        let r = r.expect("the child reports");
        assert_ne!(r, -1000, "setuid failed");
        want.push(r);
    }
    // The harness saw the rule: a device is EPERM, a whiteout is made.
    assert_eq!((want[0], want[2]), (-libc::EPERM, 0));
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkdir("/w", 0o755).unwrap();
        p.chown("/w", 1000, 1000).unwrap();
        p.mkdir("/ro", 0o755).unwrap();
        p.set_cred(user(1000, 1000));
        for (i, c) in calls.iter().enumerate() {
            let got = match p.mknod(format!("/{}", c.0), c.1, c.2) {
                Ok(()) => 0,
                Err(e) => -e.raw(),
            };
            assert_eq!(want[i], got, "{fast}: {c:?}");
        }
        let st = p.stat("/w/wo").unwrap();
        assert_eq!((st.st_mode & 0o170000, st.st_rdev), (S_IFCHR, 0));
    }
}

/// One thread's calls on a FIFO.
trait Ends: Send + 'static {
    fn open(&mut self, flags: i32) -> Result<i32, i32>;
    fn read(&mut self, fd: i32, buf: &mut [u8]) -> Result<usize, i32>;
    fn write(&mut self, fd: i32, data: &[u8]) -> Result<usize, i32>;
    fn close(&mut self, fd: i32);
}

struct HostEnds(CString);

impl Ends for HostEnds {
    fn open(&mut self, flags: i32) -> Result<i32, i32> {
        // SAFETY: a valid C string.
        ret(unsafe { libc::open(self.0.as_ptr(), flags) }.into()).map(|v| v as i32)
    }
    fn read(&mut self, fd: i32, b: &mut [u8]) -> Result<usize, i32> {
        // SAFETY: `b` is writable for its length.
        ret(unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) } as i64).map(|v| v as usize)
    }
    fn write(&mut self, fd: i32, d: &[u8]) -> Result<usize, i32> {
        // SAFETY: `d` is readable for its length.
        ret(unsafe { libc::write(fd, d.as_ptr().cast(), d.len()) } as i64).map(|v| v as usize)
    }
    fn close(&mut self, fd: i32) {
        // SAFETY: an fd this thread opened.
        unsafe { libc::close(fd) };
    }
}

struct UvfsEnds(Process);

impl Ends for UvfsEnds {
    fn open(&mut self, flags: i32) -> Result<i32, i32> {
        self.0.open("/f", flags, 0).map_err(e)
    }
    fn read(&mut self, fd: i32, b: &mut [u8]) -> Result<usize, i32> {
        self.0.read(fd, b).map_err(e)
    }
    fn write(&mut self, fd: i32, d: &[u8]) -> Result<usize, i32> {
        self.0.write(fd, d).map_err(e)
    }
    fn close(&mut self, fd: i32) {
        self.0.close(fd).unwrap();
    }
}

/// The two-thread program, on one side: a reader opens first and blocks
/// until the writer opens; the writer's 200 KiB write blocks until the
/// reader drains it; the reader sees end of file once the writer closes.
/// What the reader read (length, checksum) and the write's result.
fn blocking_program(mut r: impl Ends, mut w: impl Ends) -> (usize, u64, Result<usize, i32>) {
    let reader = std::thread::spawn(move || {
        let fd = r.open(O_RDONLY).expect("open for reading");
        let (mut n, mut sum) = (0usize, 0u64);
        let mut buf = vec![0u8; 10_000];
        loop {
            match r.read(fd, &mut buf) {
                Ok(0) => break,
                Ok(k) => {
                    for &b in &buf[..k] {
                        sum = sum.wrapping_mul(31).wrapping_add(u64::from(b));
                    }
                    n += k;
                }
                Err(e) => panic!("read: {e}"),
            }
        }
        r.close(fd);
        (n, sum)
    });
    let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let fd = w.open(O_WRONLY).expect("open for writing");
    let res = w.write(fd, &data);
    w.close(fd);
    let (n, sum) = reader.join().unwrap();
    (n, sum, res)
}

#[test]
fn blocking_fifo_matches_the_host() {
    let t = TempDir::new("special-block");
    let path = cpath(t.as_str(), "f");
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    let want = blocking_program(HostEnds(path.clone()), HostEnds(path));
    assert_eq!((want.0, want.2), (200_000, Ok(200_000)));
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkfifo("/f", 0o644).unwrap();
        let r = UvfsEnds(p.new_thread());
        let got = blocking_program(r, UvfsEnds(p));
        assert_eq!(want, got, "{fast}");
    }
}

/// `O_ASYNC` on a FIFO: Linux's pipes have a `fasync` operation, so
/// `F_SETFL` records the flag (`F_GETFL` shows it) and a change of the
/// pipe sends the owner `SIGIO`; uvfs has no `fasync` (the library sends no
/// host signals), so the flag is ignored on every file, as Linux ignores it
/// on a tmpfs regular file. Kept: docs/semantics.md, "Known differences
/// kept".
#[test]
#[ignore = "known difference: O_ASYNC is not recorded on a uvfs FIFO (no fasync, no SIGIO); docs/semantics.md"]
fn known_difference_o_async_on_a_fifo() {
    let t = TempDir::new("special-async");
    let path = cpath(t.as_str(), "f");
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    // SAFETY: a valid C string; the fd is ours and closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK) };
    assert!(fd >= 0);
    // SAFETY: plain fcntl calls on our fd.
    let host = unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, fl | libc::O_ASYNC), 0);
        let shown = libc::fcntl(fd, libc::F_GETFL) & libc::O_ASYNC != 0;
        libc::close(fd);
        shown
    };
    for fast in fasts() {
        let vfs = Vfs::new(fast);
        let mut p = Process::new(&vfs).unwrap();
        p.mkfifo("/f", 0o644).unwrap();
        let fd = p.open("/f", O_RDWR | O_NONBLOCK, 0).unwrap();
        let fl = p.fcntl(fd, F_GETFL, 0).unwrap();
        p.fcntl(fd, F_SETFL, (fl | libc::O_ASYNC) as u64).unwrap();
        let shown = p.fcntl(fd, F_GETFL, 0).unwrap() & libc::O_ASYNC != 0;
        assert_eq!(host, shown, "{fast}: F_GETFL shows O_ASYNC on a FIFO");
    }
}
