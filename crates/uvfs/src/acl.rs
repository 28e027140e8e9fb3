//! POSIX ACLs (Linux's `fs/posix_acl.c`, as tmpfs uses them with
//! `CONFIG_TMPFS_POSIX_ACL`): the xattr format of
//! `system.posix_acl_access` and `system.posix_acl_default`, the kernel's
//! validity rules, and the algorithms that tie an ACL to the mode: the
//! access decision, chmod, and inheritance at create.
//!
//! # The xattr value
//!
//! A little-endian header word (the version, 2) followed by 8-byte
//! entries: tag (16 bits), permission bits (16 bits, `rwx` = 4/2/1), id
//! (32 bits; meaningful only for named users and groups, and reported as
//! `u32::MAX` for the other tags). What the kernel refuses when the value
//! is parsed: a value shorter than the header or not a whole number of
//! entries (`EINVAL`), another version (`EOPNOTSUPP`), an unknown tag or a
//! named entry whose id is `u32::MAX` (`EINVAL`). A header with no entries
//! (or an empty value) means "no ACL": setting it removes the ACL.
//!
//! # Validity (`posix_acl_valid`)
//!
//! Entries come in tag order: one owner entry, any named users, one owning
//! group entry, any named groups, a mask, one other entry. A mask is
//! required when there is a named entry and optional otherwise. No other
//! permission bits than `rwx`. Linux does not check that named entries are
//! sorted by id or unique, and neither does this: an ACL naming uid 1000
//! twice is stored and returned as given.
//!
//! # The access decision (`acl_permission_check`, `posix_acl_permission`)
//!
//! The owner is decided by the mode's owner bits, as without an ACL.
//! Otherwise, *only when the mode's group bits are not all clear*, the ACL
//! decides: a matching named user gets its entry's bits limited by the
//! mask; else every group entry (owning group, named groups) that matches
//! the caller's groups is considered, and access is granted if one of them
//! grants all the requested bits and the mask does too; if a group
//! matched but none granted, access is denied; if none matched, the other
//! entry decides. With group bits all clear (a mask of `---`), the kernel
//! skips the ACL and the mode decides: a named user then gets the other
//! class. The capability overrides of [`crate::cred::permission`] apply
//! after a denial, unchanged.

use crate::errno::Errno;

/// The owner's entry (`ACL_USER_OBJ`).
pub const ACL_USER_OBJ: u16 = 0x01;
/// A named user's entry (`ACL_USER`).
pub const ACL_USER: u16 = 0x02;
/// The owning group's entry (`ACL_GROUP_OBJ`).
pub const ACL_GROUP_OBJ: u16 = 0x04;
/// A named group's entry (`ACL_GROUP`).
pub const ACL_GROUP: u16 = 0x08;
/// The mask entry (`ACL_MASK`).
pub const ACL_MASK: u16 = 0x10;
/// Everyone else (`ACL_OTHER`).
pub const ACL_OTHER: u16 = 0x20;
/// The id of entries that name nobody (`ACL_UNDEFINED_ID`).
pub const ACL_UNDEFINED_ID: u32 = u32::MAX;
/// The xattr format's version (`POSIX_ACL_XATTR_VERSION`).
pub const POSIX_ACL_XATTR_VERSION: u32 = 2;
/// The access ACL's xattr name.
pub const XATTR_POSIX_ACL_ACCESS: &[u8] = b"system.posix_acl_access";
/// The default ACL's xattr name.
pub const XATTR_POSIX_ACL_DEFAULT: &[u8] = b"system.posix_acl_default";

/// Which of an inode's two ACLs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AclType {
    /// The access ACL: decides access to the inode.
    Access,
    /// The default ACL (directories only): what new inodes inherit.
    Default,
}

impl AclType {
    /// The type an xattr name stands for (`posix_acl_type`), if it is one
    /// of the two ACL names exactly.
    pub fn from_name(name: &[u8]) -> Option<AclType> {
        match name {
            XATTR_POSIX_ACL_ACCESS => Some(AclType::Access),
            XATTR_POSIX_ACL_DEFAULT => Some(AclType::Default),
            _ => None,
        }
    }

    /// The xattr name.
    pub fn name(self) -> &'static [u8] {
        match self {
            AclType::Access => XATTR_POSIX_ACL_ACCESS,
            AclType::Default => XATTR_POSIX_ACL_DEFAULT,
        }
    }
}

/// One entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AclEntry {
    /// `ACL_USER_OBJ`, `ACL_USER`, …
    pub tag: u16,
    /// `rwx` bits (4/2/1).
    pub perm: u16,
    /// The uid or gid of a named entry; [`ACL_UNDEFINED_ID`] otherwise.
    pub id: u32,
}

/// An ACL: its entries in the order given (validated as the kernel does
/// before it is stored).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PosixAcl {
    /// The entries.
    pub entries: Vec<AclEntry>,
}

const RWX: u16 = 7;
const S_IRWXUGO: u32 = 0o777;

impl PosixAcl {
    /// Parses an xattr value (`posix_acl_from_xattr`): `Ok(None)` for a
    /// value with no entries (see the module docs for the errors). The ids
    /// of unnamed entries are dropped (stored as [`ACL_UNDEFINED_ID`]).
    pub fn from_xattr(v: &[u8]) -> Result<Option<PosixAcl>, Errno> {
        if v.len() < 4 {
            return Err(Errno::EINVAL);
        }
        let version = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
        if version != POSIX_ACL_XATTR_VERSION {
            return Err(Errno::EOPNOTSUPP);
        }
        let body = &v[4..];
        if !body.len().is_multiple_of(8) {
            return Err(Errno::EINVAL);
        }
        if body.is_empty() {
            return Ok(None);
        }
        let mut entries = Vec::with_capacity(body.len() / 8);
        for e in body.chunks_exact(8) {
            let tag = u16::from_le_bytes([e[0], e[1]]);
            let perm = u16::from_le_bytes([e[2], e[3]]);
            let raw = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
            let id = match tag {
                ACL_USER_OBJ | ACL_GROUP_OBJ | ACL_MASK | ACL_OTHER => ACL_UNDEFINED_ID,
                // One user namespace: ids map to themselves; -1 is invalid.
                ACL_USER | ACL_GROUP if raw != ACL_UNDEFINED_ID => raw,
                _ => return Err(Errno::EINVAL),
            };
            entries.push(AclEntry { tag, perm, id });
        }
        Ok(Some(PosixAcl { entries }))
    }

    /// The xattr value (`posix_acl_to_xattr`).
    pub fn to_xattr(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(4 + 8 * self.entries.len());
        v.extend_from_slice(&POSIX_ACL_XATTR_VERSION.to_le_bytes());
        for e in &self.entries {
            v.extend_from_slice(&e.tag.to_le_bytes());
            v.extend_from_slice(&e.perm.to_le_bytes());
            v.extend_from_slice(&e.id.to_le_bytes());
        }
        v
    }

    /// `posix_acl_valid`: `EINVAL` unless the entries are in tag order
    /// with the required ones present (see the module docs).
    pub fn valid(&self) -> Result<(), Errno> {
        // The next tag group expected: 1 owner, 2 named users, 3 named
        // groups, 4 other (after the mask), 0 done.
        let mut state = 1;
        let mut needs_mask = false;
        for e in &self.entries {
            if e.perm & !RWX != 0 {
                return Err(Errno::EINVAL);
            }
            state = match (e.tag, state) {
                (ACL_USER_OBJ, 1) => 2,
                (ACL_USER, 2) | (ACL_GROUP, 3) => {
                    needs_mask = true;
                    state
                }
                (ACL_GROUP_OBJ, 2) => 3,
                (ACL_MASK, 3) => 4,
                (ACL_OTHER, 4) => 0,
                (ACL_OTHER, 3) if !needs_mask => 0,
                _ => return Err(Errno::EINVAL),
            };
        }
        if state == 0 {
            Ok(())
        } else {
            Err(Errno::EINVAL)
        }
    }

    /// `posix_acl_equiv_mode`: the permission bits this ACL stands for
    /// replace those of `mode`; `true` if the ACL says more than the mode
    /// can (a named entry or a mask), so it must be kept.
    pub fn equiv_mode(&self, mode: &mut u32) -> bool {
        let mut m = 0u32;
        let mut not_equiv = false;
        for e in &self.entries {
            let p = u32::from(e.perm & RWX);
            match e.tag {
                ACL_USER_OBJ => m |= p << 6,
                ACL_GROUP_OBJ => m |= p << 3,
                ACL_OTHER => m |= p,
                ACL_MASK => {
                    m = (m & !0o070) | (p << 3);
                    not_equiv = true;
                }
                _ => not_equiv = true,
            }
        }
        *mode = (*mode & !S_IRWXUGO) | m;
        not_equiv
    }

    /// `posix_acl_chmod_masq`: the ACL after a chmod to `mode`: the owner
    /// and other entries take the mode's owner and other bits, the mask
    /// (or, without one, the owning group's entry) its group bits.
    pub fn chmod(&self, mode: u32) -> PosixAcl {
        let mut acl = self.clone();
        let has_mask = acl.entries.iter().any(|e| e.tag == ACL_MASK);
        let group_tag = if has_mask { ACL_MASK } else { ACL_GROUP_OBJ };
        for e in &mut acl.entries {
            match e.tag {
                ACL_USER_OBJ => e.perm = ((mode >> 6) & 7) as u16,
                ACL_OTHER => e.perm = (mode & 7) as u16,
                t if t == group_tag => e.perm = ((mode >> 3) & 7) as u16,
                _ => {}
            }
        }
        acl
    }

    /// `posix_acl_create_masq`: inheriting this (default) ACL for a new
    /// inode requested with `mode`: each of the owner, other and mask (or
    /// owning group) entries keeps only the bits the requested mode has,
    /// and the mode keeps only the bits the entries have. Returns whether
    /// the result must be stored as an access ACL (it has a named entry or
    /// a mask).
    pub fn create_masq(&mut self, mode: &mut u32) -> bool {
        let mut m = *mode;
        let mut not_equiv = false;
        let has_mask = self.entries.iter().any(|e| e.tag == ACL_MASK);
        for e in &mut self.entries {
            match e.tag {
                ACL_USER_OBJ => {
                    e.perm &= ((m >> 6) & 7) as u16 | !RWX;
                    m &= (u32::from(e.perm & RWX) << 6) | !0o700;
                }
                ACL_USER | ACL_GROUP => not_equiv = true,
                ACL_OTHER => {
                    e.perm &= (m & 7) as u16 | !RWX;
                    m &= u32::from(e.perm & RWX) | !0o007;
                }
                ACL_MASK => not_equiv = true,
                _ => {}
            }
        }
        let group_tag = if has_mask { ACL_MASK } else { ACL_GROUP_OBJ };
        if let Some(e) = self.entries.iter_mut().find(|e| e.tag == group_tag) {
            e.perm &= ((m >> 3) & 7) as u16 | !RWX;
            m &= (u32::from(e.perm & RWX) << 3) | !0o070;
        }
        *mode &= m | !S_IRWXUGO;
        not_equiv
    }

    /// `posix_acl_permission` for a caller that does not own the inode
    /// (its fsuid `fsuid`, its groups as `in_group` says): whether the ACL
    /// grants `want` (`MAY_READ` | `MAY_WRITE` | `MAY_EXEC`, which are the
    /// `rwx` bits 4, 2 and 1).
    fn permits(
        &self,
        fsuid: u32,
        in_group: &dyn Fn(u32) -> bool,
        (uid, gid): (u32, u32),
        want: u32,
    ) -> bool {
        let want = (want & 0o7) as u16;
        let mask_ok = || {
            self.entries
                .iter()
                .find(|e| e.tag == ACL_MASK)
                .is_none_or(|m| m.perm & want == want)
        };
        let mut found = false;
        for e in &self.entries {
            match e.tag {
                ACL_USER_OBJ => {
                    if uid == fsuid {
                        return e.perm & want == want;
                    }
                }
                ACL_USER => {
                    if e.id == fsuid {
                        return mask_ok() && e.perm & want == want;
                    }
                }
                ACL_GROUP_OBJ | ACL_GROUP => {
                    let gid = if e.tag == ACL_GROUP { e.id } else { gid };
                    if in_group(gid) {
                        found = true;
                        if e.perm & want == want {
                            return mask_ok();
                        }
                    }
                }
                ACL_MASK => {}
                ACL_OTHER => return !found && e.perm & want == want,
                _ => return false,
            }
        }
        false
    }
}

/// `acl_permission_check` with an ACL, for a caller with fsuid `fsuid`
/// whose groups `in_group` tells (the VFS passes the credentials' own
/// test, so that this module needs no credentials) and an inode owned by
/// `uid` and `gid` with permission bits `mode`: `Some(decision)` when the
/// ACL decides (the caller is not the owner and the mode's group bits are
/// not all clear), `None` when the mode bits do.
pub(crate) fn acl_decides(
    fsuid: u32,
    in_group: &dyn Fn(u32) -> bool,
    (uid, gid, mode): (u32, u32, u32),
    acl: &PosixAcl,
    mask: u32,
) -> Option<bool> {
    if uid == fsuid || mode & 0o070 == 0 {
        return None;
    }
    Some(acl.permits(fsuid, in_group, (uid, gid), mask))
}
