//! Unit tests of `uvfs::cred`: every permission rule and every errno, for
//! root, the owner, a group member (by fsgid and by supplementary group),
//! others, sticky directories and set-group-ID directories.

use uvfs::Errno;
use uvfs::cred::*;
use uvfs::fs::{Attr, S_IFDIR, S_IFLNK, S_IFREG, S_ISGID, S_ISUID, S_ISVTX, Timespec};

const OWNER: u32 = 1000;
const OTHER: u32 = 1001;
const GRP: u32 = 2000;
const GRP2: u32 = 2001;
const OGRP: u32 = 3000;

fn attr(mode: u32, uid: u32, gid: u32) -> Attr {
    let t = Timespec::default();
    Attr {
        ino: 7,
        mode,
        nlink: 1,
        uid,
        gid,
        size: 0,
        blocks: 0,
        blksize: 4096,
        atime: t,
        mtime: t,
        ctime: t,
        btime: t,
        rdev: 0,
        acl: 0,
    }
}

fn file(perm: u32) -> Attr {
    attr(S_IFREG | perm, OWNER, GRP)
}

fn dir(perm: u32) -> Attr {
    attr(S_IFDIR | perm, OWNER, GRP)
}

/// The owner, not in the file's group.
fn owner() -> Cred {
    Cred::user(OWNER, OGRP, vec![])
}

/// The owner, in the file's group through a supplementary group.
fn owner_in_group() -> Cred {
    Cred::user(OWNER, OGRP, vec![GRP2, GRP])
}

/// A member of the file's group by its (fs) gid.
fn member() -> Cred {
    Cred::user(OTHER, GRP, vec![])
}

/// A member of the file's group by a supplementary group.
fn supp_member() -> Cred {
    Cred::user(OTHER, OGRP, vec![GRP])
}

/// Neither owner nor member.
fn other() -> Cred {
    Cred::user(OTHER, OGRP, vec![GRP2])
}

const EACCES: Result<(), Errno> = Err(Errno::EACCES);
const EPERM: Result<(), Errno> = Err(Errno::EPERM);

#[test]
fn cred_constructors_and_caps() {
    let r = Cred::root();
    assert_eq!(
        r,
        Cred {
            uid: 0,
            gid: 0,
            euid: 0,
            egid: 0,
            fsuid: 0,
            fsgid: 0,
            groups: vec![]
        }
    );
    let u = Cred::user(5, 6, vec![7, 8]);
    assert_eq!((u.uid, u.euid, u.fsuid), (5, 5, 5));
    assert_eq!((u.gid, u.egid, u.fsgid), (6, 6, 6));
    assert_eq!(u.groups, vec![7, 8]);
    let caps = [
        Cap::DacOverride,
        Cap::DacReadSearch,
        Cap::Fowner,
        Cap::Fsetid,
        Cap::Chown,
    ];
    for c in caps {
        assert!(r.capable(c));
        assert!(!u.capable(c));
        // Root's gid does not matter, only the fsuid.
        assert!(Cred::user(0, 100, vec![]).capable(c));
        // fsuid decides, not euid.
        let mut e = Cred::root();
        e.fsuid = 1000;
        assert!(!e.capable(c));
        let mut f = Cred::user(1000, 1000, vec![]);
        f.fsuid = 0;
        assert!(f.capable(c));
    }
}

#[test]
fn in_group_p_uses_fsgid_and_supplementary() {
    let mut c = Cred::user(1, 10, vec![20, 30]);
    assert!(c.in_group_p(10));
    assert!(c.in_group_p(20));
    assert!(c.in_group_p(30));
    assert!(!c.in_group_p(40));
    // Real and effective gids are not consulted, only the fsgid.
    c.fsgid = 50;
    assert!(!c.in_group_p(10));
    assert!(c.in_group_p(50));
}

#[test]
fn permission_owner_class() {
    let a = file(0o640);
    let c = owner();
    assert_eq!(permission(&c, &a, MAY_READ), Ok(()));
    assert_eq!(permission(&c, &a, MAY_WRITE), Ok(()));
    assert_eq!(permission(&c, &a, MAY_READ | MAY_WRITE), Ok(()));
    assert_eq!(permission(&c, &a, MAY_EXEC), EACCES);
    assert_eq!(permission(&c, &a, MAY_READ | MAY_EXEC), EACCES);
    // The owner class decides alone: group/other bits granting more do not
    // help the owner.
    let a = file(0o077);
    assert_eq!(permission(&owner(), &a, MAY_READ), EACCES);
    assert_eq!(permission(&owner_in_group(), &a, MAY_READ), EACCES);
    assert_eq!(permission(&owner(), &a, 0), Ok(()));
}

#[test]
fn permission_group_class() {
    let a = file(0o640);
    for c in [member(), supp_member()] {
        assert_eq!(permission(&c, &a, MAY_READ), Ok(()));
        assert_eq!(permission(&c, &a, MAY_WRITE), EACCES);
        assert_eq!(permission(&c, &a, MAY_EXEC), EACCES);
    }
    // The group class decides alone for members: other bits granting more
    // do not help.
    let a = file(0o604);
    assert_eq!(permission(&member(), &a, MAY_READ), EACCES);
    assert_eq!(permission(&supp_member(), &a, MAY_READ), EACCES);
    assert_eq!(permission(&other(), &a, MAY_READ), Ok(()));
    // The group class for non-members is never used.
    let a = file(0o070);
    assert_eq!(permission(&other(), &a, MAY_READ), EACCES);
    assert_eq!(
        permission(&member(), &a, MAY_READ | MAY_WRITE | MAY_EXEC),
        Ok(())
    );
}

#[test]
fn permission_other_class() {
    let a = file(0o604);
    let c = other();
    assert_eq!(permission(&c, &a, MAY_READ), Ok(()));
    assert_eq!(permission(&c, &a, MAY_WRITE), EACCES);
    assert_eq!(permission(&c, &a, MAY_EXEC), EACCES);
    let a = file(0o007);
    assert_eq!(permission(&c, &a, MAY_READ | MAY_WRITE | MAY_EXEC), Ok(()));
    // Mask 0 (F_OK-like) always passes; bits above MAY_READ are ignored.
    assert_eq!(permission(&c, &file(0), 0), Ok(()));
    assert_eq!(permission(&c, &file(0o004), MAY_READ | 0o100), Ok(()));
    assert_eq!(permission(&c, &file(0), 0o100), Ok(()));
}

#[test]
fn permission_root_on_files() {
    let r = Cred::root();
    let a = file(0);
    assert_eq!(permission(&r, &a, MAY_READ), Ok(()));
    assert_eq!(permission(&r, &a, MAY_WRITE), Ok(()));
    assert_eq!(permission(&r, &a, MAY_READ | MAY_WRITE), Ok(()));
    // Execute needs at least one x bit, in any class.
    assert_eq!(permission(&r, &a, MAY_EXEC), EACCES);
    assert_eq!(permission(&r, &a, MAY_READ | MAY_EXEC), EACCES);
    for x in [0o100, 0o010, 0o001] {
        assert_eq!(permission(&r, &file(x), MAY_EXEC), Ok(()));
        assert_eq!(
            permission(&r, &file(x), MAY_READ | MAY_WRITE | MAY_EXEC),
            Ok(())
        );
    }
    // Root owning the file: the owner class passes or the override applies.
    let mine = attr(S_IFREG | 0o644, 0, 0);
    assert_eq!(permission(&r, &mine, MAY_EXEC), EACCES);
    assert_eq!(permission(&r, &mine, MAY_WRITE), Ok(()));
    // Symlinks and other non-directories follow the file rule.
    let l = attr(S_IFLNK, OWNER, GRP);
    assert_eq!(permission(&r, &l, MAY_READ), Ok(()));
    assert_eq!(permission(&r, &l, MAY_EXEC), EACCES);
}

#[test]
fn permission_root_on_directories() {
    let r = Cred::root();
    let d = dir(0);
    for m in 0..8 {
        assert_eq!(permission(&r, &d, m), Ok(()), "mask {m}");
    }
    assert_eq!(permission(&other(), &d, MAY_EXEC), EACCES);
    assert_eq!(permission(&other(), &dir(0o001), MAY_EXEC), Ok(()));
    assert_eq!(permission(&other(), &dir(0o001), MAY_READ), EACCES);
}

#[test]
fn for_access_uses_real_ids() {
    let secret = attr(S_IFREG | 0o600, 0, 0);
    // Real uid 1000, effective (and fs) 0: open succeeds, access(2) fails,
    // faccessat(AT_EACCESS) succeeds.
    let mut c = Cred::user(1000, 1000, vec![]);
    c.euid = 0;
    c.fsuid = 0;
    assert_eq!(permission(&c, &secret, MAY_READ), Ok(()));
    let a = c.for_access(false);
    assert_eq!((a.fsuid, a.fsgid), (1000, 1000));
    assert!(!a.capable(Cap::DacOverride));
    assert_eq!(permission(&a, &secret, MAY_READ), EACCES);
    assert_eq!(c.for_access(true), c);
    assert_eq!(permission(&c.for_access(true), &secret, MAY_READ), Ok(()));
    // Real uid 0, effective 1000: open fails, access(2) succeeds (caps
    // restored), AT_EACCESS fails.
    let mut c = Cred::root();
    c.euid = 1000;
    c.fsuid = 1000;
    assert_eq!(permission(&c, &secret, MAY_READ), EACCES);
    let a = c.for_access(false);
    assert_eq!(a.fsuid, 0);
    assert!(a.capable(Cap::DacReadSearch));
    assert_eq!(permission(&a, &secret, MAY_READ), Ok(()));
    assert_eq!(permission(&c.for_access(true), &secret, MAY_READ), EACCES);
    // Real gid against effective gid.
    let grp_only = file(0o040);
    let mut c = Cred::user(OTHER, GRP, vec![]);
    c.egid = OGRP;
    c.fsgid = OGRP;
    assert_eq!(permission(&c, &grp_only, MAY_READ), EACCES);
    assert_eq!(
        permission(&c.for_access(false), &grp_only, MAY_READ),
        Ok(())
    );
    assert_eq!(permission(&c.for_access(true), &grp_only, MAY_READ), EACCES);
    // Supplementary groups are kept.
    assert_eq!(Cred::user(1, 2, vec![3]).for_access(false).groups, vec![3]);
}

#[test]
fn may_create_needs_write_and_search() {
    let d = attr(S_IFDIR | 0o755, 0, 0);
    assert_eq!(may_create(&other(), &d), EACCES);
    assert_eq!(may_create(&Cred::root(), &d), Ok(()));
    // Write and search suffice, read is not needed.
    assert_eq!(may_create(&other(), &attr(S_IFDIR | 0o733, 0, 0)), Ok(()));
    // Write without search is not enough.
    assert_eq!(may_create(&other(), &attr(S_IFDIR | 0o766, 0, 0)), EACCES);
    assert_eq!(may_create(&member(), &dir(0o730)), Ok(()));
    assert_eq!(may_create(&owner(), &dir(0o500)), EACCES);
    // Root even in a mode-0 directory.
    assert_eq!(may_create(&Cred::root(), &dir(0)), Ok(()));
}

#[test]
fn may_delete_plain_directory() {
    let victim = attr(S_IFREG | 0o644, OWNER, GRP);
    let d = attr(S_IFDIR | 0o755, 0, 0);
    assert_eq!(may_delete(&other(), &d, &victim), EACCES);
    // Owning the victim does not help without write on the directory.
    assert_eq!(may_delete(&owner(), &d, &victim), EACCES);
    let open = attr(S_IFDIR | 0o777, 0, 0);
    assert_eq!(may_delete(&other(), &open, &victim), Ok(()));
    // The victim's own mode does not matter.
    let ro = attr(S_IFREG, 0, 0);
    assert_eq!(may_delete(&other(), &open, &ro), Ok(()));
    assert_eq!(may_delete(&Cred::root(), &d, &victim), Ok(()));
}

#[test]
fn may_delete_sticky_directory() {
    let tmp = attr(S_IFDIR | S_ISVTX | 0o777, 0, 0);
    let victim = attr(S_IFREG | 0o666, OWNER, GRP);
    // Neither owner of victim nor of directory: EPERM.
    assert_eq!(may_delete(&other(), &tmp, &victim), EPERM);
    assert_eq!(may_delete(&member(), &tmp, &victim), EPERM);
    assert!(check_sticky(&other(), &tmp, &victim));
    // The victim's owner.
    assert_eq!(may_delete(&owner(), &tmp, &victim), Ok(()));
    assert!(!check_sticky(&owner(), &tmp, &victim));
    // The directory's owner.
    let theirs = attr(S_IFDIR | S_ISVTX | 0o777, OTHER, 0);
    assert_eq!(may_delete(&other(), &theirs, &victim), Ok(()));
    // CAP_FOWNER.
    assert_eq!(may_delete(&Cred::root(), &tmp, &victim), Ok(()));
    // The write check comes first: EACCES, not EPERM.
    let closed = attr(S_IFDIR | S_ISVTX | 0o755, 0, 0);
    assert_eq!(may_delete(&other(), &closed, &victim), EACCES);
    // Not sticky: no EPERM.
    let plain = attr(S_IFDIR | 0o777, 0, 0);
    assert!(!check_sticky(&other(), &plain, &victim));
    // A directory victim follows the same rule.
    let sub = attr(S_IFDIR | 0o777, OWNER, GRP);
    assert_eq!(may_delete(&other(), &tmp, &sub), EPERM);
    assert_eq!(may_delete(&owner(), &tmp, &sub), Ok(()));
}

#[test]
fn inode_init_owner_plain_directory() {
    let parent = attr(S_IFDIR | 0o777, 0, 0);
    let mut c = Cred::user(OTHER, OGRP, vec![GRP]);
    c.egid = 4000; // only the fsgid matters
    assert_eq!(
        inode_init_owner(&c, &parent, S_IFREG | 0o644),
        (S_IFREG | 0o644, OTHER, OGRP)
    );
    // Outside set-group-ID directories S_ISGID is never stripped (the file
    // gets the creator's own group).
    assert_eq!(
        inode_init_owner(&c, &parent, S_IFREG | S_ISGID | 0o755),
        (S_IFREG | S_ISGID | 0o755, OTHER, OGRP)
    );
    assert_eq!(
        inode_init_owner(&c, &parent, S_IFDIR | 0o755),
        (S_IFDIR | 0o755, OTHER, OGRP)
    );
    let mut f = c.clone();
    f.fsuid = 4242;
    assert_eq!(inode_init_owner(&f, &parent, S_IFREG).1, 4242);
}

#[test]
fn inode_init_owner_setgid_directory() {
    let parent = attr(S_IFDIR | S_ISGID | 0o777, 0, GRP);
    // New directories inherit the group and S_ISGID.
    assert_eq!(
        inode_init_owner(&other(), &parent, S_IFDIR | 0o755),
        (S_IFDIR | S_ISGID | 0o755, OTHER, GRP)
    );
    // Files inherit the group only.
    assert_eq!(
        inode_init_owner(&other(), &parent, S_IFREG | 0o644),
        (S_IFREG | 0o644, OTHER, GRP)
    );
    // S_ISGID|S_IXGRP by a non-member: stripped.
    assert_eq!(
        inode_init_owner(&other(), &parent, S_IFREG | S_ISGID | 0o775),
        (S_IFREG | 0o775, OTHER, GRP)
    );
    // ... but not without S_IXGRP,
    assert_eq!(
        inode_init_owner(&other(), &parent, S_IFREG | S_ISGID | 0o745).0,
        S_IFREG | S_ISGID | 0o745
    );
    // nor for members (fsgid or supplementary), nor for root.
    for c in [member(), supp_member(), Cred::root()] {
        assert_eq!(
            inode_init_owner(&c, &parent, S_IFREG | S_ISGID | 0o775).0,
            S_IFREG | S_ISGID | 0o775
        );
    }
    // S_ISUID is untouched.
    assert_eq!(
        inode_init_owner(&other(), &parent, S_IFREG | S_ISUID | 0o755).0,
        S_IFREG | S_ISUID | 0o755
    );
    assert_eq!(
        mode_strip_sgid(&other(), &parent, S_IFDIR | S_ISGID | 0o775),
        S_IFDIR | S_ISGID | 0o775
    );
}

#[test]
fn prepare_mode_orders_strip_before_umask() {
    let sgid_dir = attr(S_IFDIR | S_ISGID | 0o777, 0, GRP);
    let plain = attr(S_IFDIR | 0o777, 0, 0);
    assert_eq!(
        prepare_mode(&other(), &plain, S_IFREG | 0o666, 0o022),
        S_IFREG | 0o644
    );
    // Stripped because the requested mode had S_IXGRP, even though the
    // umask removes it.
    assert_eq!(
        prepare_mode(&other(), &sgid_dir, S_IFREG | S_ISGID | 0o770, 0o010),
        S_IFREG | 0o760
    );
    assert_eq!(
        prepare_mode(&member(), &sgid_dir, S_IFREG | S_ISGID | 0o770, 0o010),
        S_IFREG | S_ISGID | 0o760
    );
    // Set-ID bits survive the umask (it only has permission bits).
    assert_eq!(
        prepare_mode(
            &other(),
            &plain,
            S_IFREG | S_ISUID | S_ISGID | S_ISVTX | 0o777,
            0o7777
        ),
        S_IFREG | S_ISUID | S_ISGID | S_ISVTX
    );
    // mkdir keeps only 0o1777.
    assert_eq!(
        prepare_mode(
            &Cred::root(),
            &plain,
            S_IFDIR | S_ISUID | S_ISGID | S_ISVTX | 0o777,
            0o022
        ),
        S_IFDIR | S_ISVTX | 0o755
    );
    let m = prepare_mode(&other(), &sgid_dir, S_IFDIR | 0o777, 0o022);
    assert_eq!(m, S_IFDIR | 0o755);
    assert_eq!(
        inode_init_owner(&other(), &sgid_dir, m),
        (S_IFDIR | S_ISGID | 0o755, OTHER, GRP)
    );
}

#[test]
fn chmod_rules() {
    let a = file(0o644);
    // Not the owner: EPERM, whatever the mode grants.
    assert_eq!(chmod_mode(&other(), &a, 0o600), Err(Errno::EPERM));
    assert_eq!(
        chmod_mode(&member(), &file(0o777), 0o600),
        Err(Errno::EPERM)
    );
    // The owner: type kept, only 0o7777 taken.
    assert_eq!(chmod_mode(&owner(), &a, 0o600), Ok(S_IFREG | 0o600));
    assert_eq!(
        chmod_mode(&owner(), &a, S_IFDIR | 0o4755),
        Ok(S_IFREG | S_ISUID | 0o755)
    );
    assert_eq!(
        chmod_mode(&owner(), &a, S_ISVTX | 0o777),
        Ok(S_IFREG | S_ISVTX | 0o777)
    );
    // S_ISGID dropped for an owner outside the group ...
    assert_eq!(chmod_mode(&owner(), &a, 0o2755), Ok(S_IFREG | 0o755));
    assert_eq!(
        chmod_mode(&owner(), &a, 0o6755),
        Ok(S_IFREG | S_ISUID | 0o755)
    );
    // ... also on directories,
    assert_eq!(
        chmod_mode(&owner(), &dir(0o755), 0o2755),
        Ok(S_IFDIR | 0o755)
    );
    // kept for an owner in the group,
    assert_eq!(
        chmod_mode(&owner_in_group(), &a, 0o2755),
        Ok(S_IFREG | S_ISGID | 0o755)
    );
    let mut by_fsgid = owner();
    by_fsgid.fsgid = GRP;
    assert_eq!(
        chmod_mode(&by_fsgid, &a, 0o2745),
        Ok(S_IFREG | S_ISGID | 0o745)
    );
    // and for root (CAP_FOWNER for the non-owner, CAP_FSETID for the bit).
    assert_eq!(
        chmod_mode(&Cred::root(), &a, 0o2755),
        Ok(S_IFREG | S_ISGID | 0o755)
    );
    assert_eq!(chmod_mode(&Cred::root(), &a, 0), Ok(S_IFREG));
}

fn effect(uid: Option<u32>, gid: Option<u32>, clear: u32) -> Result<ChownEffect, Errno> {
    Ok(ChownEffect { uid, gid, clear })
}

#[test]
fn chown_owner_and_group_rules() {
    let a = file(0o644);
    // New owner: only CAP_CHOWN, or the owner "changing" to itself.
    assert_eq!(
        chown_check(&other(), &a, Some(OTHER), None),
        Err(Errno::EPERM)
    );
    assert_eq!(
        chown_check(&owner(), &a, Some(OTHER), None),
        Err(Errno::EPERM)
    );
    assert_eq!(
        chown_check(&owner(), &a, Some(OWNER), None),
        effect(Some(OWNER), None, 0)
    );
    assert_eq!(
        chown_check(&other(), &a, Some(OWNER), None),
        Err(Errno::EPERM)
    );
    assert_eq!(
        chown_check(&Cred::root(), &a, Some(5), Some(6)),
        effect(Some(5), Some(6), 0)
    );
    // New group: the owner, to the current group or one of its own.
    assert_eq!(
        chown_check(&owner(), &a, None, Some(GRP)),
        effect(None, Some(GRP), 0)
    );
    assert_eq!(
        chown_check(&owner(), &a, None, Some(OGRP)),
        effect(None, Some(OGRP), 0)
    );
    assert_eq!(
        chown_check(&owner_in_group(), &a, None, Some(GRP2)),
        effect(None, Some(GRP2), 0)
    );
    assert_eq!(
        chown_check(&owner(), &a, None, Some(GRP2)),
        Err(Errno::EPERM)
    );
    // A member who does not own the file cannot chgrp, even to its group.
    assert_eq!(
        chown_check(&member(), &a, None, Some(GRP)),
        Err(Errno::EPERM)
    );
    assert_eq!(
        chown_check(&other(), &a, None, Some(OGRP)),
        Err(Errno::EPERM)
    );
    // Both at once: both rules.
    assert_eq!(
        chown_check(&owner(), &a, Some(OWNER), Some(OGRP)),
        effect(Some(OWNER), Some(OGRP), 0)
    );
    assert_eq!(
        chown_check(&owner(), &a, Some(OWNER), Some(GRP2)),
        Err(Errno::EPERM)
    );
    // -1 is "no change".
    assert_eq!(
        chown_check(&other(), &a, Some(u32::MAX), Some(u32::MAX)),
        effect(None, None, 0)
    );
}

#[test]
fn chown_no_change_by_non_owner() {
    // chown(-1, -1) on a file without set-ID bits succeeds for anyone.
    assert_eq!(
        chown_check(&other(), &file(0o644), None, None),
        effect(None, None, 0)
    );
    assert_eq!(
        chown_check(&other(), &dir(0o6755), None, None),
        effect(None, None, 0)
    );
    // With bits to clear it becomes a mode change: EPERM for non-owners.
    assert_eq!(
        chown_check(&other(), &file(0o4755), None, None),
        Err(Errno::EPERM)
    );
    assert_eq!(
        chown_check(&member(), &file(0o2755), None, None),
        Err(Errno::EPERM)
    );
    // S_ISGID without S_IXGRP: a member keeps it (nothing to do) ...
    assert_eq!(
        chown_check(&member(), &file(0o2745), None, None),
        effect(None, None, 0)
    );
    // ... a non-member would have to clear it: EPERM.
    assert_eq!(
        chown_check(&other(), &file(0o2745), None, None),
        Err(Errno::EPERM)
    );
}

#[test]
fn chown_clears_set_id_bits() {
    let r = Cred::root();
    // Root too loses S_ISUID, and S_ISGID when group-executable.
    let e = chown_check(&r, &file(0o6755), Some(0), None).unwrap();
    assert_eq!(e.clear, S_ISUID | S_ISGID);
    assert_eq!(e.new_mode(&file(0o6755)), Some(S_IFREG | 0o755));
    assert_eq!(
        chown_check(&r, &file(0o6745), None, None),
        effect(None, None, S_ISUID)
    );
    assert_eq!(
        chown_check(&r, &file(0o2745), None, Some(9)),
        effect(None, Some(9), 0)
    );
    // Only bits that are set are reported.
    assert_eq!(
        chown_check(&r, &file(0o755), None, None),
        effect(None, None, 0)
    );
    assert_eq!(
        chown_check(&r, &file(0o755), None, None)
            .unwrap()
            .new_mode(&file(0o755)),
        None
    );
    // Directories keep them.
    assert_eq!(
        chown_check(&r, &dir(0o6755), Some(1), Some(2)),
        effect(Some(1), Some(2), 0)
    );
    // Symlinks are non-directories.
    let l = attr(S_IFLNK | 0o777, OWNER, GRP);
    assert_eq!(chown_check(&r, &l, Some(1), None), effect(Some(1), None, 0));
    // The owner, chown(-1,-1): S_ISUID goes.
    assert_eq!(
        chown_check(&owner(), &file(0o4755), None, None),
        effect(None, None, S_ISUID)
    );
    // The owner outside the old group: S_ISGID goes even without S_IXGRP,
    // also when moving into a group it is in.
    assert_eq!(
        chown_check(
            &owner_in_group(),
            &attr(S_IFREG | 0o2745, OWNER, OGRP + 1),
            None,
            Some(GRP)
        ),
        effect(None, Some(GRP), S_ISGID)
    );
    // The owner in the old group moving to another of its groups keeps a
    // non-executable S_ISGID, loses S_ISUID.
    assert_eq!(
        chown_check(&owner_in_group(), &file(0o6745), None, Some(GRP2)),
        effect(None, Some(GRP2), S_ISUID)
    );
}

#[test]
fn remove_privs_on_write_rules() {
    // Regular files only.
    assert_eq!(remove_privs_on_write(&other(), &dir(0o6777)), None);
    assert_eq!(
        remove_privs_on_write(&other(), &attr(S_IFLNK | 0o6777, 1, 1)),
        None
    );
    // CAP_FSETID keeps everything.
    assert_eq!(remove_privs_on_write(&Cred::root(), &file(0o6777)), None);
    // S_ISUID always goes.
    assert_eq!(
        remove_privs_on_write(&owner(), &file(0o4755)),
        Some(S_IFREG | 0o755)
    );
    assert_eq!(
        remove_privs_on_write(&owner_in_group(), &file(0o4700)),
        Some(S_IFREG | 0o700)
    );
    // S_ISGID with S_IXGRP goes, even for members.
    assert_eq!(
        remove_privs_on_write(&member(), &file(0o2775)),
        Some(S_IFREG | 0o775)
    );
    assert_eq!(
        remove_privs_on_write(&owner_in_group(), &file(0o6775)),
        Some(S_IFREG | 0o775)
    );
    // S_ISGID without S_IXGRP: kept by members, cleared for non-members.
    assert_eq!(remove_privs_on_write(&member(), &file(0o2766)), None);
    assert_eq!(
        remove_privs_on_write(&supp_member(), &file(0o6766)),
        Some(S_IFREG | S_ISGID | 0o766)
    );
    assert_eq!(
        remove_privs_on_write(&other(), &file(0o2766)),
        Some(S_IFREG | 0o766)
    );
    assert_eq!(
        remove_privs_on_write(&owner(), &file(0o2766)),
        Some(S_IFREG | 0o766)
    );
    // Nothing to do.
    assert_eq!(remove_privs_on_write(&other(), &file(0o777)), None);
    assert_eq!(
        remove_privs_on_write(&other(), &file(S_ISVTX | 0o777)),
        None
    );
}

#[test]
fn utimens_classification() {
    assert_eq!(utimens_explicit(None), Some(false));
    assert_eq!(utimens_explicit(Some([UTIME_NOW, UTIME_NOW])), Some(false));
    assert_eq!(utimens_explicit(Some([UTIME_OMIT, UTIME_OMIT])), None);
    assert_eq!(utimens_explicit(Some([UTIME_NOW, UTIME_OMIT])), Some(true));
    assert_eq!(utimens_explicit(Some([UTIME_OMIT, UTIME_NOW])), Some(true));
    assert_eq!(utimens_explicit(Some([0, UTIME_NOW])), Some(true));
    assert_eq!(utimens_explicit(Some([5, 6])), Some(true));
}

#[test]
fn utimes_rules() {
    let writable = file(0o666);
    let ro = file(0o644);
    // The owner: everything, whatever the mode.
    assert_eq!(utimes_check(&owner(), &file(0), false), Ok(()));
    assert_eq!(utimes_check(&owner(), &file(0), true), Ok(()));
    // Root: everything.
    assert_eq!(utimes_check(&Cred::root(), &file(0), false), Ok(()));
    assert_eq!(utimes_check(&Cred::root(), &file(0), true), Ok(()));
    // Others with write permission: touch only.
    assert_eq!(utimes_check(&other(), &writable, false), Ok(()));
    assert_eq!(utimes_check(&other(), &writable, true), EPERM);
    assert_eq!(utimes_check(&member(), &file(0o620), false), Ok(()));
    assert_eq!(utimes_check(&member(), &file(0o602), false), EACCES);
    // Others without: EACCES for touch, EPERM for explicit times.
    assert_eq!(utimes_check(&other(), &ro, false), EACCES);
    assert_eq!(utimes_check(&other(), &ro, true), EPERM);
}
