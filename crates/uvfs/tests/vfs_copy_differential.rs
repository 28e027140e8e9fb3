//! Differential tests of the vector and copy calls: preadv2, pwritev2,
//! sendfile and copy_file_range on every kind of fd, every flag and offset
//! form, compared with the host kernel on tmpfs (both presets).

mod support;

use support::calls::{Res, c, host, ours, proc_for};
use support::host::TempDir;
use support::vfs::fasts;
use uvfs::uapi::*;

/// The calls of the copy and vector comparison.
#[derive(Clone, Copy, Debug)]
enum CopyOp {
    /// preadv2(fd #i, 4 bytes (or none), off, flags).
    Preadv2(usize, bool, i64, u32),
    /// pwritev2(fd #i, "wxyz" (or nothing), off, flags).
    Pwritev2(usize, bool, i64, u32),
    /// lseek(fd #i, 0, SEEK_CUR).
    Tell(usize),
    /// sendfile(out #i, in #j, offset or none, count).
    Sendfile(usize, usize, Option<i64>, usize),
    /// copy_file_range(in #i, off_in, out #j, off_out, len, flags).
    Copy(usize, Option<i64>, usize, Option<i64>, usize, u32),
}

fn copy_ops() -> Vec<CopyOp> {
    use CopyOp::*;
    // fds: 0 f rw, 1 f O_APPEND, 2 f ro, 3 dir, 4 g rw, 5 f O_PATH, 6 bad
    let mut v = Vec::new();
    for fl in [
        0,
        1,
        2,
        4,
        8,
        0x10,
        0x20,
        0x30,
        0x40,
        0x80,
        0x100,
        0x200,
        1 << 31,
    ] {
        v.push(Preadv2(0, true, 0, fl));
        v.push(Pwritev2(4, true, 0, fl));
        v.push(Preadv2(0, false, 0, fl));
        v.push(Pwritev2(4, false, 0, fl));
        v.push(Preadv2(3, true, 0, fl));
    }
    v.extend([
        Preadv2(0, true, -1, 0),
        Tell(0),
        Preadv2(0, true, -2, 0),
        Preadv2(6, true, -2, 0),
        Preadv2(5, true, 0, 0x200),
        Preadv2(6, true, 0, 0),
        Pwritev2(1, true, 0, 0x20),
        Pwritev2(1, true, 0, 0),
        Tell(1),
        Pwritev2(4, true, 0, 0x10),
        Tell(4),
        Pwritev2(4, true, -1, 0x10),
        Tell(4),
        Pwritev2(2, true, 0, 0x200),
        Preadv2(4, true, 0, 0x200),
        Sendfile(4, 0, None, 5),
        Tell(0),
        Tell(4),
        Sendfile(4, 0, Some(2), 3),
        Tell(0),
        Sendfile(4, 3, None, 5),
        Sendfile(3, 0, None, 5),
        Sendfile(1, 0, None, 5),
        Sendfile(4, 2, None, 0),
        Sendfile(2, 0, None, 5),
        Sendfile(4, 5, None, 5),
        Sendfile(4, 6, None, 5),
        Sendfile(6, 0, None, 5),
        Sendfile(4, 0, Some(-1), 5),
        Sendfile(4, 0, Some(100), 5),
        Sendfile(0, 0, None, 5),
        Sendfile(4, 0, Some(0), 1 << 20),
        Copy(0, Some(0), 4, Some(20), 4, 0),
        Copy(0, None, 4, None, 4, 1),
        Copy(0, None, 4, None, 0, 0),
        Copy(3, None, 4, None, 4, 0),
        Copy(0, None, 3, None, 4, 0),
        Copy(0, None, 1, None, 4, 0),
        Copy(2, None, 2, None, 4, 0),
        Copy(4, None, 2, None, 4, 0),
        Copy(0, Some(0), 0, Some(2), 4, 0),
        Copy(0, Some(0), 0, Some(8), 4, 0),
        Copy(0, Some(-1), 4, None, 4, 0),
        Copy(0, Some(0), 4, Some(-5), 4, 0),
        Copy(0, Some(i64::MAX - 15), 4, None, 100, 0),
        Copy(0, Some(4), 4, Some(i64::MAX - 15), 100, 0),
        Copy(0, Some(100), 4, None, 100, 0),
        Copy(5, None, 4, None, 4, 0),
        Copy(6, None, 4, None, 4, 0),
        Copy(0, None, 4, None, 1 << 20, 0),
        Tell(0),
        Tell(4),
    ]);
    v
}

/// Runs the copy ops on the host: each result, with the offsets the
/// calls left.
/// A copy op's result and the offsets it left (input, output).
type CopyRes = (Res, Option<i64>, Option<i64>);

fn host_copy(t: &TempDir) -> (Vec<CopyRes>, Vec<u8>, Vec<u8>) {
    let f = c(&format!("{}/f", t.as_str()));
    let g = c(&format!("{}/g", t.as_str()));
    let d = c(t.as_str());
    // SAFETY: valid C strings; fds ours, closed below; buffers live.
    let out = unsafe {
        let fds = [
            libc::open(
                f.as_ptr(),
                libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC,
                0o644,
            ),
            libc::open(f.as_ptr(), libc::O_RDWR | libc::O_APPEND),
            libc::open(f.as_ptr(), libc::O_RDONLY),
            libc::open(d.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY),
            libc::open(
                g.as_ptr(),
                libc::O_CREAT | libc::O_RDWR | libc::O_TRUNC,
                0o644,
            ),
            libc::open(f.as_ptr(), libc::O_PATH),
            999,
        ];
        libc::write(fds[0], b"hello world".as_ptr().cast(), 11);
        let mut out = Vec::new();
        for op in copy_ops() {
            let mut buf = [0u8; 4];
            let wbuf = *b"wxyz";
            let iov = |full: bool, p: *mut u8| libc::iovec {
                iov_base: p.cast(),
                iov_len: if full { 4 } else { 0 },
            };
            out.push(match op {
                CopyOp::Preadv2(i, full, off, fl) => {
                    let v = iov(full, buf.as_mut_ptr());
                    (
                        host(libc::preadv2(fds[i], &v, 1, off, fl as i32) as i64),
                        None,
                        None,
                    )
                }
                CopyOp::Pwritev2(i, full, off, fl) => {
                    let v = iov(full, wbuf.as_ptr().cast_mut());
                    (
                        host(libc::pwritev2(fds[i], &v, 1, off, fl as i32) as i64),
                        None,
                        None,
                    )
                }
                CopyOp::Tell(i) => (host(libc::lseek(fds[i], 0, libc::SEEK_CUR)), None, None),
                CopyOp::Sendfile(o, i, off, n) => {
                    let mut x = off.unwrap_or(0);
                    let p = if off.is_some() {
                        &mut x as *mut i64
                    } else {
                        std::ptr::null_mut()
                    };
                    let r = host(libc::sendfile(fds[o], fds[i], p, n) as i64);
                    (r, off.map(|_| x), None)
                }
                CopyOp::Copy(i, oi, o, oo, n, fl) => {
                    let (mut a, mut b) = (oi.unwrap_or(0), oo.unwrap_or(0));
                    let pa = if oi.is_some() {
                        &mut a as *mut i64
                    } else {
                        std::ptr::null_mut()
                    };
                    let pb = if oo.is_some() {
                        &mut b as *mut i64
                    } else {
                        std::ptr::null_mut()
                    };
                    let r = host(libc::copy_file_range(fds[i], pa, fds[o], pb, n, fl) as i64);
                    (r, oi.map(|_| a), oo.map(|_| b))
                }
            });
        }
        for fd in &fds[..6] {
            libc::close(*fd);
        }
        out
    };
    // The size and the head (g ends up sparse, near 2^63 bytes).
    let head = |name: &str| {
        use std::io::Read;
        let f = std::fs::File::open(t.path().join(name)).unwrap();
        let size = f.metadata().unwrap().len();
        let mut v = Vec::new();
        f.take(256).read_to_end(&mut v).unwrap();
        v.extend_from_slice(&size.to_le_bytes());
        v
    };
    (out, head("f"), head("g"))
}

#[test]
fn preadv2_pwritev2_sendfile_copy_file_range() {
    let t = TempDir::new("copy");
    let (want, wf, wg) = host_copy(&t);
    let ops = copy_ops();
    for fast in fasts() {
        let mut p = proc_for(fast);
        let fds = [
            p.open("/f", O_CREAT | O_RDWR | O_TRUNC, 0o644).unwrap(),
            p.open("/f", O_RDWR | O_APPEND, 0).unwrap(),
            p.open("/f", O_RDONLY, 0).unwrap(),
            p.open("/", O_RDONLY | O_DIRECTORY, 0).unwrap(),
            p.open("/g", O_CREAT | O_RDWR | O_TRUNC, 0o644).unwrap(),
            p.open("/f", O_PATH, 0).unwrap(),
            999,
        ];
        p.write(fds[0], b"hello world").unwrap();
        for (n, (op, w)) in ops.iter().zip(&want).enumerate() {
            let mut buf = [0u8; 4];
            let got = match *op {
                CopyOp::Preadv2(i, full, off, fl) => {
                    let n = if full { 4 } else { 0 };
                    let r = p.preadv2(fds[i], &mut [&mut buf[..n]], off, fl);
                    (ours(r.map(|n| n as i64)), None, None)
                }
                CopyOp::Pwritev2(i, full, off, fl) => {
                    let data: &[u8] = if full { b"wxyz" } else { b"" };
                    let r = p.pwritev2(fds[i], &[data], off, fl);
                    (ours(r.map(|n| n as i64)), None, None)
                }
                CopyOp::Tell(i) => (ours(p.lseek(fds[i], 0, SEEK_CUR)), None, None),
                CopyOp::Sendfile(o, i, off, n) => {
                    let mut x = off.unwrap_or(0);
                    let r = p.sendfile(fds[o], fds[i], off.map(|_| &mut x), n);
                    (ours(r.map(|n| n as i64)), off.map(|_| x), None)
                }
                CopyOp::Copy(i, oi, o, oo, n, fl) => {
                    let (mut a, mut b) = (oi.unwrap_or(0), oo.unwrap_or(0));
                    let r = p.copy_file_range(
                        fds[i],
                        oi.map(|_| &mut a),
                        fds[o],
                        oo.map(|_| &mut b),
                        n,
                        fl,
                    );
                    (ours(r.map(|n| n as i64)), oi.map(|_| a), oo.map(|_| b))
                }
            };
            assert_eq!(*w, got, "op {n}: {op:?} ({fast})");
        }
        let mut head = |path: &str| {
            let fd = p.open(path, O_RDONLY, 0).unwrap();
            let mut v = vec![0u8; 256];
            let n = p.pread(fd, &mut v, 0).unwrap();
            v.truncate(n);
            v.extend_from_slice(&(p.fstat(fd).unwrap().st_size as u64).to_le_bytes());
            p.close(fd).unwrap();
            v
        };
        assert_eq!(head("/f"), wf, "contents of f ({fast})");
        assert_eq!(head("/g"), wg, "contents of g ({fast})");
    }
}
