//! `Process::set_host_mount`: a front end that serves the VFS at a prefix
//! of its own namespace (the LD_PRELOAD shim) has symlinks' absolute
//! targets read as paths of that namespace: under the prefix, inside the
//! VFS with the prefix taken off; elsewhere, out of the VFS (`EXDEV` and
//! the host path reached, `take_escape`). Without it, an absolute target
//! starts at the VFS's root, as in a chroot. Every test runs under both
//! fast-path settings, twice (cold and warm caches).

mod support;

use support::vfs::*;
use uvfs::Errno;
use uvfs::fs::{S_IFDIR, S_IFMT};
use uvfs::uapi::*;

fn setup(p: &mut uvfs::Process) {
    p.mkdir("/d", 0o755).unwrap();
    put(p, "/d/f", b"inside");
    p.symlink("/uvfs/d", "/in").unwrap();
    p.symlink("//uvfs//d/", "/in2").unwrap();
    p.symlink("/uvfs", "/top").unwrap();
    p.symlink("/etc", "/out").unwrap();
    p.symlink("/uvfsx/y", "/near").unwrap();
    p.symlink("out/x", "/rel").unwrap();
    p.symlink("/tmp/host-file", "/dang").unwrap();
}

fn escape(p: &mut uvfs::Process, r: Result<impl std::fmt::Debug, Errno>) -> Option<String> {
    assert_eq!(r.as_ref().err(), Some(&Errno::EXDEV), "{r:?}");
    p.take_escape().map(|v| String::from_utf8(v).unwrap())
}

#[test]
fn absolute_targets_under_the_prefix_stay_inside() {
    each(|_, p| {
        p.set_host_mount(Some(b"/uvfs"));
        setup(p);
        let f = p.stat("/d/f").unwrap().st_ino;
        for _ in 0..2 {
            for path in ["/in/f", "/in2/f", "/top/d/f", "/top/in/f", "/in/../d/f"] {
                assert_eq!(p.stat(path).unwrap().st_ino, f, "{path}");
                assert_eq!(p.take_escape(), None, "{path}");
            }
            assert!(p.stat("/top").unwrap().st_mode & S_IFMT == S_IFDIR);
            assert!(p.stat("/in/").unwrap().st_mode & S_IFMT == S_IFDIR);
        }
        // A create through the link lands inside.
        let fd = p.open("/in/new", O_CREAT | O_WRONLY, 0o644).unwrap();
        p.close(fd).unwrap();
        assert!(p.stat("/d/new").is_ok());
    });
}

#[test]
fn other_absolute_targets_escape_with_the_rest_of_the_path() {
    each(|_, p| {
        p.set_host_mount(Some(b"/uvfs"));
        setup(p);
        for _ in 0..2 {
            let r = p.stat("/out/hostname");
            assert_eq!(escape(p, r).as_deref(), Some("/etc/hostname"));
            let r = p.stat("/out");
            assert_eq!(escape(p, r).as_deref(), Some("/etc"));
            let r = p.stat("/out/");
            assert_eq!(escape(p, r).as_deref(), Some("/etc/"));
            // A prefix spelled as a prefix of the name is not the prefix.
            let r = p.stat("/near/z");
            assert_eq!(escape(p, r).as_deref(), Some("/uvfsx/y/z"));
            // Through a relative link whose walk meets the absolute one.
            let r = p.stat("/rel/y");
            assert_eq!(escape(p, r).as_deref(), Some("/etc/x/y"));
            let r = p.open("/d/../out/passwd", O_RDONLY, 0);
            assert_eq!(escape(p, r).as_deref(), Some("/etc/passwd"));
            // The parent walk of a create.
            let r = p.mkdir("/out/newdir", 0o755);
            assert_eq!(escape(p, r).as_deref(), Some("/etc/newdir"));
            // O_CREAT through a dangling link: the target is created
            // where it points, which is outside.
            let r = p.open("/dang", O_CREAT | O_WRONLY, 0o644);
            assert_eq!(escape(p, r).as_deref(), Some("/tmp/host-file"));
        }
        // Not following the link: no escape; readlink gives it as written.
        assert!(p.lstat("/out").is_ok());
        assert_eq!(p.take_escape(), None);
        let mut buf = [0u8; 64];
        let n = p.readlink("/out", &mut buf).unwrap();
        assert_eq!(&buf[..n], b"/etc");
        // A failure of another kind leaves no escape behind.
        assert_eq!(p.stat("/d/missing").err(), Some(Errno::ENOENT));
        assert_eq!(p.take_escape(), None);
    });
}

#[test]
fn threads_and_forks_inherit_the_host_mount() {
    each(|_, p| {
        p.set_host_mount(Some(b"/uvfs"));
        setup(p);
        let mut t = p.new_thread();
        assert!(t.stat("/in/f").is_ok());
        let r = t.stat("/out/x");
        assert_eq!(escape(&mut t, r).as_deref(), Some("/etc/x"));
        // The escape is the thread's own.
        assert_eq!(p.take_escape(), None);
        let mut c = p.fork().unwrap();
        assert!(c.stat("/in/f").is_ok());
        let r = c.stat("/out/x");
        assert_eq!(escape(&mut c, r).as_deref(), Some("/etc/x"));
    });
}

#[test]
fn without_a_host_mount_absolute_targets_start_at_the_root() {
    each(|_, p| {
        setup(p);
        for _ in 0..2 {
            // As in a chroot at the VFS's root: `/uvfs/d` does not exist.
            assert_eq!(p.stat("/in/f").err(), Some(Errno::ENOENT));
            assert_eq!(p.stat("/out/hostname").err(), Some(Errno::ENOENT));
            assert_eq!(p.take_escape(), None);
        }
        p.mkdir("/etc", 0o755).unwrap();
        put(p, "/etc/hostname", b"h");
        assert!(p.stat("/out/hostname").is_ok());
    });
}
