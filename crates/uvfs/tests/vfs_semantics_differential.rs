//! Differential tests of the call-level rules a call-by-call comparison with
//! the host kernel (Linux 6.18) found different: the order of fallocate's
//! checks, F_SETFL's refusals, readv/writev's vector limit after the fd,
//! getcwd's PATH_MAX, linkat(AT_EMPTY_PATH) for the opener, the
//! `fs.protected_*` sysctls (the host's values, read from /proc/sys/fs),
//! SEEK_DATA/SEEK_HOLE at the last page below 2^63, and the fcntl commands
//! beyond the fd table's. Each case runs on the host's tmpfs (a directory
//! under /dev/shm, or a private tmpfs in a sandbox thread, forked children
//! for other credentials) and on uvfs under both fast-path presets, and the
//! results (value or errno) must be equal.
#![cfg(target_os = "linux")]

mod support;

use std::ffi::CString;
use support::calls::{Res, c, host, is_root, ours, proc_for};
use support::host::{TempDir, fork_child, in_sandbox_thread};
use support::vfs::{fasts, user};
use uvfs::uapi::*;
use uvfs::{Errno, FsSysctls, Process};

/// The fallocate modes compared on every kind of fd.
const FALLOC_MODES: [i32; 16] = [
    0, 1, 2, 3, 4, 5, 0x8, 0x9, 0x10, 0x11, 0x18, 0x19, 0x20, 0x21, 0x80, 0x81,
];
const FALLOC_MORE: [i32; 6] = [0x40, 0x41, 0x100, 0x13, 0x1a, 0x29];

#[test]
fn fallocate_judges_the_mode_before_the_fd_write_mode() {
    let t = TempDir::new("falloc");
    let f = c(&format!("{}/f", t.as_str()));
    let dpath = c(t.as_str());
    // SAFETY: valid C strings; the fds are ours and closed below.
    let (ro, rw, dir) = unsafe {
        let rw = libc::open(f.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644);
        let ro = libc::open(f.as_ptr(), libc::O_RDONLY);
        let dir = libc::open(dpath.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
        (ro, rw, dir)
    };
    let mut want = Vec::new();
    for fd in [ro, rw, dir] {
        for mode in FALLOC_MODES.into_iter().chain(FALLOC_MORE) {
            for (off, len) in [(0, 10), (-1, 10), (0, 0)] {
                // SAFETY: plain integer arguments.
                let r = unsafe { libc::fallocate(fd, mode, off, len) };
                want.push(host(r.into()).map(|_| 0));
            }
        }
    }
    // SAFETY: our fds.
    unsafe {
        libc::close(ro);
        libc::close(rw);
        libc::close(dir);
    }
    for fast in fasts() {
        let mut p = proc_for(fast);
        let rw = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        let ro = p.open("/f", O_RDONLY, 0).unwrap();
        let dir = p.open("/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let mut got = Vec::new();
        let mut cases = Vec::new();
        for fd in [ro, rw, dir] {
            for mode in FALLOC_MODES.into_iter().chain(FALLOC_MORE) {
                for (off, len) in [(0, 10), (-1, 10), (0, 0)] {
                    got.push(ours(p.fallocate(fd, mode, off, len).map(|_| 0)));
                    cases.push((fd, mode, off, len));
                }
            }
        }
        for ((w, g), case) in want.iter().zip(&got).zip(&cases) {
            assert_eq!(w, g, "fallocate(fd, mode, off, len) = {case:?} ({fast})");
        }
    }
}

#[test]
fn setfl_o_direct_needs_direct_io_and_o_noatime_ownership() {
    let t = TempDir::new("setfl");
    let f = c(&format!("{}/f", t.as_str()));
    let dpath = c(t.as_str());
    // Host, as root: O_DIRECT on a directory and on a regular file.
    // SAFETY: valid C strings; fds ours.
    let want: Vec<Res> = unsafe {
        let fd = libc::open(f.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644);
        let dir = libc::open(dpath.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
        let v = vec![
            host(libc::fcntl(dir, libc::F_SETFL, libc::O_DIRECT).into()),
            host(libc::fcntl(dir, libc::F_GETFL).into()),
            host(libc::fcntl(fd, libc::F_SETFL, libc::O_DIRECT | libc::O_NOATIME).into()),
            host(libc::fcntl(fd, libc::F_GETFL).into()),
            host(libc::fcntl(dir, libc::F_SETFL, libc::O_NOATIME | libc::O_APPEND).into()),
            host(libc::fcntl(dir, libc::F_GETFL).into()),
        ];
        libc::close(fd);
        libc::close(dir);
        v
    };
    for fast in fasts() {
        let mut p = proc_for(fast);
        let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
        let dir = p.open("/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let got = vec![
            ours(p.fcntl(dir, F_SETFL, O_DIRECT as u64)),
            ours(p.fcntl(dir, F_GETFL, 0)),
            ours(p.fcntl(fd, F_SETFL, (O_DIRECT | O_NOATIME) as u64)),
            ours(p.fcntl(fd, F_GETFL, 0)),
            ours(p.fcntl(dir, F_SETFL, (O_NOATIME | O_APPEND) as u64)),
            ours(p.fcntl(dir, F_GETFL, 0)),
        ];
        assert_eq!(want, got, "{fast}");
    }
    if !is_root() {
        eprintln!("skipped the non-owner half: not root");
        return;
    }
    // Host, as user 1000: O_NOATIME on root's file (EPERM), on its own
    // file, and re-setting a flag the file has already.
    // SAFETY: root; the paths are ours.
    unsafe {
        let own = c(&format!("{}/own", t.as_str()));
        let fd = libc::open(own.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644);
        libc::fchown(fd, 1000, 1000);
        libc::close(fd);
        libc::chmod(f.as_ptr(), 0o644);
        let child = |path: &CString, preset: bool| {
            let path = path.clone();
            move || {
                if libc::setresgid(1000, 1000, 1000) != 0 || libc::setresuid(1000, 1000, 1000) != 0
                {
                    return -1000;
                }
                let fl = if preset { libc::O_NOATIME } else { 0 };
                let fd = libc::open(path.as_ptr(), libc::O_RDONLY | fl);
                if fd < 0 {
                    return -2000 - *libc::__errno_location();
                }
                if libc::fcntl(fd, libc::F_SETFL, libc::O_NOATIME) < 0 {
                    *libc::__errno_location()
                } else {
                    0
                }
            }
        };
        let host_root = fork_child(child(&f, false)).0.unwrap();
        let host_own = fork_child(child(&own, false)).0.unwrap();
        assert_eq!(host_root, libc::EPERM, "host: O_NOATIME on another's file");
        assert_eq!(host_own, 0, "host: O_NOATIME on one's own file");
        for fast in fasts() {
            let mut p = proc_for(fast);
            let fd = p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap();
            p.close(fd).unwrap();
            let fd = p.open("/own", O_CREAT | O_RDWR, 0o644).unwrap();
            p.fchown(fd, 1000, 1000).unwrap();
            p.close(fd).unwrap();
            p.set_cred(user(1000, 1000));
            let a = p.open("/f", O_RDONLY, 0).unwrap();
            let b = p.open("/own", O_RDONLY, 0).unwrap();
            assert_eq!(
                p.fcntl(a, F_SETFL, O_NOATIME as u64)
                    .err()
                    .map_or(0, Errno::raw),
                host_root
            );
            assert_eq!(
                p.fcntl(b, F_SETFL, O_NOATIME as u64)
                    .err()
                    .map_or(0, Errno::raw),
                host_own
            );
        }
    }
}

#[test]
fn readv_writev_check_the_fd_before_the_vector_length() {
    let t = TempDir::new("iov");
    let f = c(&format!("{}/f", t.as_str()));
    let dpath = c(t.as_str());
    let mut bytes = vec![0u8; UIO_MAXIOV + 1];
    let iov: Vec<libc::iovec> = bytes
        .iter_mut()
        .map(|b| libc::iovec {
            iov_base: (b as *mut u8).cast(),
            iov_len: 1,
        })
        .collect();
    let empty: Vec<libc::iovec> = (0..UIO_MAXIOV + 1)
        .map(|_| libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        })
        .collect();
    // Kinds of fd: bad, O_PATH, read-only, write-only, directory.
    // SAFETY: valid C strings and iovec arrays of the given lengths.
    let want: Vec<Res> = unsafe {
        let w = libc::open(f.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o644);
        let r = libc::open(f.as_ptr(), libc::O_RDONLY);
        let path = libc::open(f.as_ptr(), libc::O_PATH);
        let dir = libc::open(dpath.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY);
        let mut v = Vec::new();
        for fd in [999, path, r, w, dir] {
            for n in [UIO_MAXIOV + 1, UIO_MAXIOV] {
                for vec in [&iov, &empty] {
                    v.push(host(libc::readv(fd, vec.as_ptr(), n as i32) as i64));
                    v.push(host(libc::writev(fd, vec.as_ptr(), n as i32) as i64));
                }
            }
        }
        for fd in [w, r, path, dir] {
            libc::close(fd);
        }
        v
    };
    for fast in fasts() {
        let mut p = proc_for(fast);
        let w = p.open("/f", O_CREAT | O_WRONLY, 0o644).unwrap();
        let r = p.open("/f", O_RDONLY, 0).unwrap();
        let path = p.open("/f", O_PATH, 0).unwrap();
        let dir = p.open("/", O_RDONLY | O_DIRECTORY, 0).unwrap();
        let mut got = Vec::new();
        for fd in [999, path, r, w, dir] {
            for n in [UIO_MAXIOV + 1, UIO_MAXIOV] {
                for len in [1, 0] {
                    let mut store = vec![vec![0u8; len]; n];
                    let mut bufs: Vec<&mut [u8]> =
                        store.iter_mut().map(|b| b.as_mut_slice()).collect();
                    got.push(ours(p.readv(fd, &mut bufs).map(|n| n as i64)));
                    let bufs: Vec<&[u8]> = store.iter().map(|b| b.as_slice()).collect();
                    got.push(ours(p.writev(fd, &bufs).map(|n| n as i64)));
                }
            }
        }
        assert_eq!(want, got, "{fast}");
    }
}

/// Creates and enters directories from the cwd until the cwd's absolute
/// path is `len` bytes long (`base` bytes now); `step` makes one directory
/// and enters it.
fn grow_cwd(base: usize, len: usize, mut step: impl FnMut(&[u8])) {
    let mut cur = base;
    while cur < len {
        // "/" plus a name of at most 200 bytes, leaving room for a last
        // name of at least one byte.
        let sep = usize::from(cur > 1);
        let mut n = (len - cur - sep).min(200);
        if len - cur - sep - n != 0 && len - cur - sep - n < 3 {
            n -= 3;
        }
        step(&vec![b'd'; n]);
        cur += sep + n;
    }
}

#[test]
fn getcwd_past_path_max_is_enametoolong() {
    for len in [4094usize, 4095, 4096, 4097, 5000] {
        // Host: a thread with its own cwd (and, as root, its own tmpfs).
        let want = in_sandbox_thread(move |_| {
            let mut buf = vec![0u8; 8192];
            // SAFETY: `buf` is writable for its length.
            let r = unsafe { libc::syscall(libc::SYS_getcwd, buf.as_mut_ptr(), buf.len()) };
            assert!(r > 0);
            let base = buf.iter().position(|&b| b == 0).unwrap();
            grow_cwd(base, len, |name| {
                let n = CString::new(name).unwrap();
                // SAFETY: a valid C string; this thread's own cwd.
                unsafe {
                    assert_eq!(libc::mkdir(n.as_ptr(), 0o755), 0);
                    assert_eq!(libc::chdir(n.as_ptr()), 0);
                }
            });
            // SAFETY: as above.
            let r = unsafe { libc::syscall(libc::SYS_getcwd, buf.as_mut_ptr(), buf.len()) };
            let r = host(r);
            // Leave no deep tree behind in the plain sandbox.
            let _ = std::fs::remove_dir_all(".");
            r.map(|n| n - 1) // the count includes the NUL
        });
        for fast in fasts() {
            let mut p = proc_for(fast);
            grow_cwd(1, len, |name| {
                p.mkdir(name, 0o755).unwrap();
                p.chdir(name).unwrap();
            });
            let got = ours(p.getcwd().map(|v| v.len() as i64));
            if want.is_ok() {
                assert_eq!(got, Ok(len as i64), "length {len} ({fast})");
            }
            assert_eq!(want.map(|_| ()), got.map(|_| ()), "length {len} ({fast})");
        }
    }
}

/// Runs `f` as user 1000 (group 1000) in a forked child: its errno, 0
/// for success, or a negative code if it could not take the ids.
///
/// # Safety
/// As [`fork_child`]: `f` makes system calls only.
unsafe fn as_user(f: impl FnOnce() -> i32) -> i32 {
    // SAFETY: per the contract.
    let (r, status) = unsafe {
        fork_child(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setresgid(1000, 1000, 1000) != 0
                || libc::setresuid(1000, 1000, 1000) != 0
            {
                return -1;
            }
            f()
        })
    };
    let r = r.unwrap_or_else(|| panic!("child wrote nothing (status {status:#x})"));
    assert!(r >= 0, "child could not become user 1000");
    r
}

fn errno_of(r: libc::c_int) -> i32 {
    if r < 0 {
        // SAFETY: reads this thread's errno.
        unsafe { *libc::__errno_location() }
    } else {
        0
    }
}

#[test]
fn linkat_empty_path_for_the_opener_and_protected_hardlinks() {
    if !is_root() {
        eprintln!("skipped: needs root to fork unprivileged children");
        return;
    }
    let sys = FsSysctls::host();
    let t = TempDir::new("linkat");
    let d = format!("{}/w", t.as_str());
    std::fs::create_dir(&d).unwrap();
    // SAFETY: valid C strings.
    unsafe { libc::chmod(c(&d).as_ptr(), 0o777) };
    // Root's files the user links: (name, mode).
    let files = [
        ("ro", 0o644),
        ("rw", 0o666),
        ("suid", 0o4666),
        ("sgidx", 0o2676),
        ("sgid", 0o2666),
    ];
    for (n, m) in files {
        let p = c(&format!("{d}/{n}"));
        // SAFETY: valid C string.
        unsafe {
            let fd = libc::open(p.as_ptr(), libc::O_CREAT | libc::O_WRONLY, 0o600);
            libc::fchmod(fd, m);
            libc::close(fd);
        }
    }
    let root_fd = {
        let p = c(&format!("{d}/rw"));
        // SAFETY: valid C string; kept open across the forks.
        unsafe { libc::open(p.as_ptr(), libc::O_RDWR) }
    };
    let dir_c = c(&d);
    let mut want = Vec::new();
    // 1. O_TMPFILE opened by the user, linked by the user.
    let name = c(&format!("{d}/tmp1"));
    // SAFETY: system calls only, on prepared strings.
    want.push(unsafe {
        as_user(|| {
            let fd = libc::open(dir_c.as_ptr(), libc::O_TMPFILE | libc::O_RDWR, 0o600);
            if fd < 0 {
                return 1000 + errno_of(fd);
            }
            errno_of(libc::linkat(
                fd,
                c"".as_ptr(),
                libc::AT_FDCWD,
                name.as_ptr(),
                libc::AT_EMPTY_PATH,
            ))
        })
    });
    // 2. A file root opened, linked by the user through the inherited fd.
    let name2 = c(&format!("{d}/viaroot"));
    // SAFETY: as above.
    want.push(unsafe {
        as_user(|| {
            errno_of(libc::linkat(
                root_fd,
                c"".as_ptr(),
                libc::AT_FDCWD,
                name2.as_ptr(),
                libc::AT_EMPTY_PATH,
            ))
        })
    });
    // 3. The user's own regular file opened by the user.
    let own = c(&format!("{d}/own"));
    let name3 = c(&format!("{d}/own2"));
    // SAFETY: as above.
    want.push(unsafe {
        as_user(|| {
            let fd = libc::open(own.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600);
            errno_of(libc::linkat(
                fd,
                c"".as_ptr(),
                libc::AT_FDCWD,
                name3.as_ptr(),
                libc::AT_EMPTY_PATH,
            ))
        })
    });
    // 4.. link(2) of each of root's files (fs.protected_hardlinks).
    let pairs: Vec<(CString, CString)> = files
        .iter()
        .map(|(n, _)| (c(&format!("{d}/{n}")), c(&format!("{d}/{n}.ln"))))
        .collect();
    for (from, to) in &pairs {
        // SAFETY: as above.
        want.push(unsafe { as_user(|| errno_of(libc::link(from.as_ptr(), to.as_ptr()))) });
    }
    // Last. fork gives the child new credentials (Linux's copy_creds for
    // a process, not a thread): the child may not link, through
    // AT_EMPTY_PATH, a file its parent opened; the parent still may.
    // Encoded as the child's errno * 256 + the parent's.
    let own3 = c(&format!("{d}/own3"));
    let (from_child, from_parent) = (c(&format!("{d}/fromchild")), c(&format!("{d}/fromparent")));
    // SAFETY: system calls only, on prepared strings; the grandchild
    // `_exit`s.
    want.push(unsafe {
        as_user(|| {
            let fd = libc::open(own3.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o600);
            let pid = libc::fork();
            if pid == 0 {
                libc::_exit(errno_of(libc::linkat(
                    fd,
                    c"".as_ptr(),
                    libc::AT_FDCWD,
                    from_child.as_ptr(),
                    libc::AT_EMPTY_PATH,
                )));
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            let parent = errno_of(libc::linkat(
                fd,
                c"".as_ptr(),
                libc::AT_FDCWD,
                from_parent.as_ptr(),
                libc::AT_EMPTY_PATH,
            ));
            libc::WEXITSTATUS(status) * 256 + parent
        })
    });
    // SAFETY: our fd.
    unsafe { libc::close(root_fd) };
    assert_eq!(
        want.last(),
        Some(&(libc::ENOENT * 256)),
        "host: a fork child's credentials"
    );
    if sys.protected_hardlinks != 0 {
        assert_eq!(want[3], libc::EPERM, "host: protected_hardlinks on 'ro'");
    }
    for fast in fasts() {
        let mut p = proc_for(fast);
        p.mkdir("/w", 0o777).unwrap();
        p.chmod("/w", 0o777).unwrap();
        for (n, m) in files {
            let fd = p
                .open(format!("/w/{n}"), O_CREAT | O_WRONLY, 0o600)
                .unwrap();
            p.fchmod(fd, m).unwrap();
            p.close(fd).unwrap();
        }
        let root_fd = p.open("/w/rw", O_RDWR, 0).unwrap();
        p.set_cred(user(1000, 1000));
        let mut got = Vec::new();
        let code = |r: Result<(), Errno>| r.err().map_or(0, Errno::raw);
        let fd = p.open("/w", O_TMPFILE | O_RDWR, 0o600).unwrap();
        got.push(code(p.linkat(fd, "", AT_FDCWD, "/w/tmp1", AT_EMPTY_PATH)));
        got.push(code(p.linkat(
            root_fd,
            "",
            AT_FDCWD,
            "/w/viaroot",
            AT_EMPTY_PATH,
        )));
        let fd = p.open("/w/own", O_CREAT | O_RDWR, 0o600).unwrap();
        got.push(code(p.linkat(fd, "", AT_FDCWD, "/w/own2", AT_EMPTY_PATH)));
        for (n, _) in files {
            got.push(code(p.link(format!("/w/{n}"), format!("/w/{n}.ln"))));
        }
        let fd = p.open("/w/own3", O_CREAT | O_RDWR, 0o600).unwrap();
        let mut child = p.fork().unwrap();
        let from_child = code(child.linkat(fd, "", AT_FDCWD, "/w/fromchild", AT_EMPTY_PATH));
        let from_parent = code(p.linkat(fd, "", AT_FDCWD, "/w/fromparent", AT_EMPTY_PATH));
        got.push(from_child * 256 + from_parent);
        assert_eq!(want, got, "{fast} (sysctls {sys:?})");
        // A thread shares its process's credentials (clone with
        // CLONE_THREAD keeps the cred), so it may.
        let mut thread = p.new_thread();
        assert_eq!(
            thread.linkat(fd, "", AT_FDCWD, "/w/fromthread", AT_EMPTY_PATH),
            Ok(())
        );
    }
}

#[test]
fn protected_symlinks_and_regular_in_sticky_directories() {
    if !is_root() {
        eprintln!("skipped: needs root to fork unprivileged children");
        return;
    }
    let sys = FsSysctls::host();
    let t = TempDir::new("sticky");
    let d = format!("{}/s", t.as_str());
    std::fs::create_dir(&d).unwrap();
    let dc = c(&d);
    let tgt = c(&format!("{d}/target"));
    let lnk = c(&format!("{d}/lnk"));
    let reg = c(&format!("{d}/reg"));
    // SAFETY: valid C strings.
    unsafe {
        libc::chmod(dc.as_ptr(), 0o1777);
        let fd = libc::open(tgt.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o666);
        libc::close(fd);
        libc::symlink(c"target".as_ptr(), lnk.as_ptr());
        libc::lchown(lnk.as_ptr(), 1001, 1001);
        let fd = libc::open(reg.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o666);
        libc::fchown(fd, 1001, 1001);
        libc::close(fd);
    }
    let want = [
        // Following another user's symlink in a sticky world-writable dir.
        // SAFETY: system calls only.
        unsafe {
            as_user(|| {
                let fd = libc::open(lnk.as_ptr(), libc::O_RDONLY);
                errno_of(fd)
            })
        },
        // O_CREAT of another user's existing regular file there.
        // SAFETY: as above.
        unsafe {
            as_user(|| {
                errno_of(libc::open(
                    reg.as_ptr(),
                    libc::O_CREAT | libc::O_RDWR,
                    0o666,
                ))
            })
        },
        // The symlink again, as root (no capability overrides it).
        errno_of(
            // SAFETY: a valid C string.
            unsafe { libc::open(lnk.as_ptr(), libc::O_RDONLY) },
        ),
    ];
    for fast in fasts() {
        let mut p = proc_for(fast);
        p.mkdir("/s", 0o777).unwrap();
        p.chmod("/s", 0o1777).unwrap();
        let fd = p.open("/s/target", O_CREAT | O_RDWR, 0o666).unwrap();
        p.close(fd).unwrap();
        p.symlink("target", "/s/lnk").unwrap();
        p.lchown("/s/lnk", 1001, 1001).unwrap();
        let fd = p.open("/s/reg", O_CREAT | O_RDWR, 0o666).unwrap();
        p.fchown(fd, 1001, 1001).unwrap();
        p.close(fd).unwrap();
        let code = |r: Result<i32, Errno>| r.err().map_or(0, Errno::raw);
        let root_follow = code(p.open("/s/lnk", O_RDONLY, 0));
        p.set_cred(user(1000, 1000));
        let got = [
            code(p.open("/s/lnk", O_RDONLY, 0)),
            code(p.open("/s/reg", O_CREAT | O_RDWR, 0o666)),
            root_follow,
        ];
        assert_eq!(want, got, "{fast} (sysctls {sys:?})");
    }
}

#[test]
fn seek_data_and_hole_at_the_last_page_below_2_63() {
    const M: i64 = i64::MAX;
    let t = TempDir::new("seek");
    let f = c(&format!("{}/big", t.as_str()));
    // (write offset or -1, seek offset, whence) in sequence.
    let ops: [(i64, i64, i32); 14] = [
        (-1, 0, SEEK_DATA),
        (M - 2, M - 4096, SEEK_DATA),
        (-1, M - 10, SEEK_DATA),
        (-1, 0, SEEK_DATA),
        (-1, 0, SEEK_HOLE),
        (-1, M - 3, SEEK_HOLE),
        (-1, 0, SEEK_CUR),
        (-1, M - 4096 * 2, SEEK_HOLE),
        (M - 4096 * 3, M - 4096 * 4, SEEK_DATA),
        (-1, M - 4096 * 3, SEEK_HOLE),
        (M - 4096 * 2, M - 4096 * 3, SEEK_HOLE),
        (-1, M - 4096 * 2, SEEK_DATA),
        (-1, 0, SEEK_CUR),
        (-1, M - 1, SEEK_HOLE),
    ];
    // SAFETY: a valid C string; one byte written from a live buffer.
    let want: Vec<Res> = unsafe {
        let fd = libc::open(f.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644);
        let v = ops
            .iter()
            .map(|&(w, off, wh)| {
                if w >= 0 {
                    assert_eq!(libc::pwrite(fd, b"x".as_ptr().cast(), 1, w), 1);
                }
                host(libc::lseek(fd, off, wh))
            })
            .collect();
        libc::close(fd);
        v
    };
    assert_eq!(want[5], Ok(i64::MIN), "the host's overflow is as described");
    for fast in fasts() {
        let mut p = proc_for(fast);
        let fd = p.open("/big", O_CREAT | O_RDWR, 0o644).unwrap();
        let got: Vec<Res> = ops
            .iter()
            .map(|&(w, off, wh)| {
                if w >= 0 {
                    assert_eq!(p.pwrite(fd, b"x", w), Ok(1));
                }
                ours(p.lseek(fd, off, wh))
            })
            .collect();
        assert_eq!(want, got, "{fast}");
    }
}

/// The fds of the fcntl comparison, opened the same way on both sides:
/// a file this open created, a second read-write open of it, a read-only
/// one, an `O_PATH` one, the directory, an `O_TMPFILE` file.
const FDS: usize = 6;

fn fcntl_cases(pid: i32, pgrp: i32) -> Vec<(usize, i32, i64)> {
    let mut v = Vec::new();
    for fd in 0..FDS {
        for (cmd, arg) in [
            (F_CREATED_QUERY, 0),
            (F_GET_SEALS, 0),
            (F_ADD_SEALS, 1),
            (F_ADD_SEALS, 8),
            (F_ADD_SEALS, 0x10000),
            (F_GETPIPE_SZ, 0),
            (F_SETPIPE_SZ, 4096),
            (F_GETLEASE, 0),
            (F_SETLEASE, 7),
            (F_SETLEASE, F_UNLCK as i64),
            // A writer stays open, so a lease on the named file meets a
            // conflict on both sides.
            (F_SETLEASE, F_RDLCK as i64),
            (F_SETLEASE, F_WRLCK as i64),
            (F_GETOWN, 0),
            (F_SETOWN, pid as i64),
            (F_GETOWN, 0),
            (F_SETOWN, -pgrp as i64),
            (F_GETOWN, 0),
            (F_SETOWN, 999_999_999),
            (F_SETOWN, -999_999_999),
            (F_SETOWN, i32::MIN as i64),
            (F_GETOWN, 0),
            (F_SETOWN, 0),
            (F_GETOWN, 0),
            (F_GETSIG, 0),
            (F_SETSIG, 65),
            (F_SETSIG, -1),
            (F_SETSIG, 64),
            (F_GETSIG, 0),
            (F_SETSIG, 0),
            (F_GETSIG, 0),
            // dnotify: no events removes nothing, on any fd; events on
            // a non-directory are ENOTDIR (events on a directory are a
            // known difference: uvfs answers EINVAL, as Linux with
            // dnotify off).
            (F_NOTIFY, 0),
            (F_NOTIFY, DN_MULTISHOT as i64),
            (F_NOTIFY, 1),
        ] {
            // The O_TMPFILE file is open once, read-write: a write lease
            // is granted on it, a read lease refused (tests/leases.rs has
            // the grant rules).
            if fd == 4 && cmd == F_NOTIFY && arg == 1 {
                continue;
            }
            v.push((fd, cmd, arg));
        }
    }
    v
}

#[test]
fn fcntl_owner_signal_lease_seal_pipe_and_created_commands() {
    let t = TempDir::new("fcntl");
    let f = c(&format!("{}/f", t.as_str()));
    let dpath = c(t.as_str());
    // SAFETY: no arguments.
    let (pid, pgrp) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let cases = fcntl_cases(pid, pgrp);
    // SAFETY: valid C strings; integer fcntl arguments only.
    let (want, want_ex) = unsafe {
        let fds = [
            libc::open(f.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644),
            libc::open(f.as_ptr(), libc::O_CREAT | libc::O_RDWR, 0o644),
            libc::open(f.as_ptr(), libc::O_RDONLY),
            libc::open(f.as_ptr(), libc::O_PATH),
            libc::open(dpath.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY),
            libc::open(dpath.as_ptr(), libc::O_TMPFILE | libc::O_RDWR, 0o600),
        ];
        let v: Vec<Res> = cases
            .iter()
            .map(|&(i, cmd, arg)| {
                // SAFETY: an fd of ours and an integer argument; errno
                // cleared first, so that F_GETOWN's negative process
                // group (which may look like an errno) is told apart.
                *libc::__errno_location() = 0;
                let r = i64::from(libc::fcntl(fds[i], cmd, arg as libc::c_long));
                match *libc::__errno_location() {
                    e if r < 0 && e != 0 => Err(e),
                    _ => Ok(r),
                }
            })
            .collect();
        // The _EX forms on the second fd.
        let mut ex = Vec::new();
        let mut o = OwnerEx { type_: 0, pid: 0 };
        let g = fds[1];
        ex.push((
            host(libc::fcntl(g, F_GETOWN_EX, &mut o).into()),
            o.type_,
            o.pid,
        ));
        for (ty, id) in [(3, pid), (F_OWNER_PGRP, pgrp), (F_OWNER_PID, 999_999_999)] {
            let mut s = OwnerEx { type_: ty, pid: id };
            ex.push((host(libc::fcntl(g, F_SETOWN_EX, &mut s).into()), 0, 0));
            let mut o = OwnerEx { type_: 0, pid: 0 };
            ex.push((
                host(libc::fcntl(g, F_GETOWN_EX, &mut o).into()),
                o.type_,
                o.pid,
            ));
        }
        for (ty, id) in [(F_OWNER_PID, pid), (F_OWNER_TID, 0)] {
            let mut s = OwnerEx { type_: ty, pid: id };
            ex.push((host(libc::fcntl(g, F_SETOWN_EX, &mut s).into()), 0, 0));
            let mut o = OwnerEx { type_: 0, pid: 0 };
            ex.push((
                host(libc::fcntl(g, F_GETOWN_EX, &mut o).into()),
                o.type_,
                o.pid,
            ));
            ex.push((host(libc::fcntl(g, F_GETOWN).into()), 0, 0));
        }
        ex.push((host(libc::fcntl(fds[3], F_GETOWN_EX, &mut o).into()), 0, 0));
        for fd in fds {
            libc::close(fd);
        }
        (v, ex)
    };
    for fast in fasts() {
        let mut p = proc_for(fast);
        let fds = [
            p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap(),
            p.open("/f", O_CREAT | O_RDWR, 0o644).unwrap(),
            p.open("/f", O_RDONLY, 0).unwrap(),
            p.open("/f", O_PATH, 0).unwrap(),
            p.open("/", O_RDONLY | O_DIRECTORY, 0).unwrap(),
            p.open("/", O_TMPFILE | O_RDWR, 0o600).unwrap(),
        ];
        for ((&(i, cmd, arg), w), n) in cases.iter().zip(&want).zip(0..) {
            let got = ours(p.fcntl(fds[i], cmd, arg as u64));
            assert_eq!(*w, got, "case {n}: fcntl(fd #{i}, {cmd}, {arg}) ({fast})");
        }
        let g = fds[1];
        let mut ex = Vec::new();
        let get = |p: &mut Process| match p.fcntl_getown_ex(g) {
            Ok(o) => (Ok(0), o.kind, o.pid),
            Err(e) => (Err(e.raw()), 0, 0),
        };
        ex.push(get(&mut p));
        for (ty, id) in [(3, pid), (F_OWNER_PGRP, pgrp), (F_OWNER_PID, 999_999_999)] {
            let r = p.fcntl_setown_ex(g, FOwnerEx { kind: ty, pid: id });
            ex.push((ours(r.map(|_| 0)), 0, 0));
            ex.push(get(&mut p));
        }
        for (ty, id) in [(F_OWNER_PID, pid), (F_OWNER_TID, 0)] {
            let r = p.fcntl_setown_ex(g, FOwnerEx { kind: ty, pid: id });
            ex.push((ours(r.map(|_| 0)), 0, 0));
            ex.push(get(&mut p));
            ex.push((ours(p.fcntl(g, F_GETOWN, 0)), 0, 0));
        }
        ex.push((ours(p.fcntl_getown_ex(fds[3]).map(|_| 0)), 0, 0));
        assert_eq!(want_ex, ex, "{fast}");
    }
}

/// `struct f_owner_ex` as the host's fcntl takes it.
#[repr(C)]
struct OwnerEx {
    type_: i32,
    pid: i32,
}

/// The statx fields compared: those that do not name the particular inode
/// or device (numbers and times differ between the two trees), with each
/// time reduced to whether it was filled.
type StatxView = (u32, u64, u64, u32, u32, u32, u32, u64, u64, u32, [bool; 4]);

#[test]
fn statx_fields_and_masks() {
    let t = TempDir::new("statx");
    std::fs::write(t.path().join("f"), b"some data").unwrap();
    std::fs::create_dir(t.path().join("d")).unwrap();
    std::os::unix::fs::symlink("f", t.path().join("l")).unwrap();
    let masks = [
        0,
        STATX_TYPE,
        STATX_MODE | STATX_SIZE,
        STATX_ATIME,
        STATX_MTIME,
        STATX_CTIME,
        STATX_BASIC_STATS,
        STATX_BTIME,
        STATX_BASIC_STATS | STATX_BTIME,
        0xfff,
        0x2000,
        0x4000,
        0x8000,
        0x1_0000,
        0x2_0000,
        0x7fff_ffff,
        STATX_RESERVED,
    ];
    let flags = [
        0,
        AT_SYMLINK_NOFOLLOW,
        0x2000,
        0x4000,
        0x6000,
        0x1,
        AT_NO_AUTOMOUNT,
    ];
    let names = ["f", "d", "l", "nx"];
    let mut want: Vec<Result<StatxView, i32>> = Vec::new();
    for n in names {
        let path = c(&format!("{}/{n}", t.as_str()));
        for fl in flags {
            for m in masks {
                // SAFETY: all zeros is a valid `struct statx`.
                let mut sx: libc::statx = unsafe { std::mem::zeroed() };
                // SAFETY: a valid C string and a writable statx buffer.
                let r = unsafe { libc::statx(libc::AT_FDCWD, path.as_ptr(), fl, m, &mut sx) };
                want.push(host(r.into()).map(|_| {
                    let z = |t: libc::statx_timestamp| t.tv_sec != 0 || t.tv_nsec != 0;
                    (
                        sx.stx_mask,
                        sx.stx_attributes,
                        sx.stx_attributes_mask,
                        u32::from(sx.stx_mode),
                        sx.stx_nlink,
                        sx.stx_uid,
                        sx.stx_gid,
                        sx.stx_size,
                        sx.stx_blocks,
                        sx.stx_blksize,
                        [
                            z(sx.stx_atime),
                            z(sx.stx_btime),
                            z(sx.stx_ctime),
                            z(sx.stx_mtime),
                        ],
                    )
                }));
            }
        }
    }
    for fast in fasts() {
        let mut p = proc_for(fast);
        p.mkdir("/t", 0o755).unwrap();
        p.umask(0o022);
        support::vfs::put(&mut p, "/t/f", b"some data");
        p.mkdir("/t/d", 0o755).unwrap();
        p.symlink("f", "/t/l").unwrap();
        let mut got = Vec::new();
        for n in names {
            for fl in flags {
                for m in masks {
                    let r = p.statx(AT_FDCWD, format!("/t/{n}"), fl, m);
                    got.push(r.map_err(Errno::raw).map(|sx| {
                        let z = |t: uvfs::stat::StatxTimestamp| t.tv_sec != 0 || t.tv_nsec != 0;
                        (
                            sx.stx_mask,
                            sx.stx_attributes,
                            sx.stx_attributes_mask,
                            u32::from(sx.stx_mode),
                            sx.stx_nlink,
                            sx.stx_uid,
                            sx.stx_gid,
                            sx.stx_size,
                            sx.stx_blocks,
                            sx.stx_blksize,
                            [
                                z(sx.stx_atime),
                                z(sx.stx_btime),
                                z(sx.stx_ctime),
                                z(sx.stx_mtime),
                            ],
                        )
                    }));
                }
            }
        }
        let mut i = 0;
        for n in names {
            for fl in flags {
                for m in masks {
                    assert_eq!(
                        want[i], got[i],
                        "statx({n}, flags {fl:#x}, mask {m:#x}) ({fast})"
                    );
                    i += 1;
                }
            }
        }
    }
}
