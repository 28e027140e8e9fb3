//! `UVFS_SEED` and `UVFS_DUMP` carry extended attributes and POSIX ACLs
//! across, as `uvfs mount --seed-from`/`--dump-to` do (the same code,
//! `uvfs_fuse::tree::xattrs_in`/`xattrs_out`): a file seeded with a
//! `user.*` attribute and an access ACL shows both under the shim, one
//! the program sets is in the dump, and the ACL comes back byte for byte;
//! in one process, and in a process tree (the dump then copies from the
//! tree's FUSE mount). On the host's tmpfs, which holds both.

mod support;
use support::cprog::{Scratch, err, have, out, run};

fn get(path: &std::path::Path, name: &str) -> Option<Vec<u8>> {
    let o = run(
        &[
            "/usr/bin/python3",
            "-c",
            "import os, sys; sys.stdout.write(os.getxattr(sys.argv[1], sys.argv[2]).hex())",
            path.to_str().unwrap(),
            name,
        ],
        false,
        &[],
    );
    o.status.success().then(|| {
        out(&o)
            .as_bytes()
            .chunks(2)
            .map(|h| u8::from_str_radix(std::str::from_utf8(h).unwrap(), 16).unwrap())
            .collect()
    })
}

#[test]
fn seed_and_dump_keep_xattrs_and_acls() {
    if !have("/usr/bin/python3") {
        return;
    }
    let dir = Scratch::new("seed-xattrs");
    let seed = dir.join("seed");
    let dump = dir.join("dump");
    std::fs::create_dir(&seed).unwrap();
    std::fs::write(seed.join("f"), "x").unwrap();
    // user_obj rw-, user 1000 r--, group_obj r--, mask r--, other ---.
    let set = "import os, struct, sys\n\
               p = sys.argv[1]\n\
               os.setxattr(p, 'user.k', b'v')\n\
               e = [(1, 6, 0xffffffff), (2, 4, 1000), (4, 4, 0xffffffff), (0x10, 4, 0xffffffff), (0x20, 0, 0xffffffff)]\n\
               os.setxattr(p, 'system.posix_acl_access', struct.pack('<I', 2) + b''.join(struct.pack('<HHI', *t) for t in e))\n";
    let o = run(
        &[
            "/usr/bin/python3",
            "-c",
            set,
            seed.join("f").to_str().unwrap(),
        ],
        false,
        &[],
    );
    if !o.status.success() {
        eprintln!("SKIP: /dev/shm takes no xattrs or ACLs here: {}", err(&o));
        return;
    }
    let prog = "import os\n\
                print(os.getxattr('/uvfs/f', 'user.k'))\n\
                print(len(os.getxattr('/uvfs/f', 'system.posix_acl_access')))\n\
                print(oct(os.stat('/uvfs/f').st_mode & 0o777))\n\
                open('/uvfs/g', 'w').write('y')\n\
                os.setxattr('/uvfs/g', 'user.made', b'under the shim')\n";
    let script = format!("/usr/bin/python3 -c \"{prog}\"");
    for (tree, cmd) in [
        ("0", vec!["/usr/bin/python3", "-c", prog]),
        ("1", vec!["sh", "-c", script.as_str()]),
    ] {
        let dump = dump.join(tree);
        let o = run(
            &cmd,
            true,
            &[
                ("UVFS_PREFIX", "/uvfs"),
                ("UVFS_TREE", tree),
                ("UVFS_SEED", seed.to_str().unwrap()),
                ("UVFS_DUMP", dump.to_str().unwrap()),
            ],
        );
        assert!(o.status.success(), "tree {tree}: {}{}", out(&o), err(&o));
        assert_eq!(out(&o), "b'v'\n44\n0o640\n", "tree {tree}: {}", err(&o));
        assert_eq!(
            get(&dump.join("f"), "user.k").as_deref(),
            Some(&b"v"[..]),
            "tree {tree}"
        );
        assert_eq!(
            get(&dump.join("f"), "system.posix_acl_access"),
            get(&seed.join("f"), "system.posix_acl_access"),
            "tree {tree}"
        );
        assert_eq!(
            get(&dump.join("g"), "user.made").as_deref(),
            Some(&b"under the shim"[..]),
            "tree {tree}"
        );
    }
}
