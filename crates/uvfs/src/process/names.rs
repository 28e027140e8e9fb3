//! The namespace calls: mkdir, rmdir, unlink, rename, link, symlink,
//! readlink, chdir, fchdir, getcwd. Each takes the parent directories'
//! locks (the `i_rwsem` analogue; a cross-directory rename first takes the
//! superblock's rename lock), looks the last component up under them,
//! checks permissions as `may_create`/`may_delete` do, calls the file
//! system, and then updates the dentry cache (`d_instantiate`, `d_drop`,
//! `d_move`).

use super::Process;
use super::open::{attr_of, mode_is_dir};
use crate::cred::{self, MAY_EXEC, MAY_WRITE, permission};
use crate::dcache::DentryRef;
use crate::errno::Errno;
use crate::fs::{NewInode, RENAME_EXCHANGE, RENAME_NOREPLACE, S_IFDIR, S_IFLNK};
use crate::namei::{self, DIRECTORY, EMPTY, FOLLOW, LastType, Parent};
use crate::primitive::lock;
use crate::task_work;
use crate::uapi::*;
use std::sync::atomic::Ordering;

/// `RENAME_WHITEOUT` (needs a character device: refused with `EINVAL` on a
/// file system without device nodes… as tmpfs in uvfs has none).
const RENAME_WHITEOUT: u32 = 4;

impl Process {
    /// Resolves the parent of `path` relative to `dirfd`.
    fn parent_of(&self, dirfd: i32, path: &[u8]) -> Result<Parent, Errno> {
        let path = namei::getname(path)?;
        if path.is_empty() {
            return Err(Errno::ENOENT);
        }
        let start = self.start(dirfd, path)?;
        self.nd().lookup_parent(start.into_owned(), path)
    }

    /// `filename_create`: resolves the parent of a name to be created,
    /// locks it, and checks the name is a plain one (`EEXIST` for `.`,
    /// `..`, `/`), not taken (`EEXIST`) and, unless a directory is being
    /// made, has no trailing slash (`ENOENT`); then runs `f` with the
    /// directory, the name and its negative dentry, under the lock.
    fn with_new_name<R>(
        &self,
        dirfd: i32,
        path: &[u8],
        is_dir: bool,
        f: impl FnOnce(&DentryRef, &[u8], &DentryRef) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        let p = self.parent_of(dirfd, path)?;
        if p.kind != LastType::Norm {
            return Err(Errno::EEXIST);
        }
        let dir = &p.dir;
        let _g = lock(&dir.dir_lock);
        let d = self.nd().lookup_locked_dir(dir, &p.last)?;
        if !d.is_negative() {
            return Err(Errno::EEXIST);
        }
        if p.trailing && !is_dir {
            return Err(Errno::ENOENT);
        }
        f(dir, &p.last, &d)
    }

    /// `filename_create` and `may_create`: `f` creates the inode and
    /// returns its attributes.
    fn create_node(
        &self,
        dirfd: i32,
        path: &[u8],
        is_dir: bool,
        f: impl FnOnce(&DentryRef, &[u8], NewInode) -> Result<crate::fs::Attr, Errno>,
        mode: u32,
    ) -> Result<(), Errno> {
        self.with_new_name(dirfd, path, is_dir, |dir, name, d| {
            self.make_node(dir, name, d, f, mode)
        })
    }

    fn make_node(
        &self,
        dir: &DentryRef,
        name: &[u8],
        d: &DentryRef,
        f: impl FnOnce(&DentryRef, &[u8], NewInode) -> Result<crate::fs::Attr, Errno>,
        mode: u32,
    ) -> Result<(), Errno> {
        let dattr = attr_of(dir)?;
        self.may_create(dir, &dattr)?;
        let umask = self.fs.umask.load(Ordering::Relaxed);
        let mode = if mode & crate::fs::S_IFMT == S_IFLNK {
            mode
        } else {
            cred::prepare_mode(&self.cred, &dattr, mode, umask)
        };
        let new = NewInode {
            mode,
            uid: self.cred.fsuid,
            gid: self.cred.fsgid,
        };
        let attr = f(dir, name, new)?;
        let inode = namei::iget(&self.vfs, dir.sb(), &attr)?;
        self.vfs.caches().dcache.instantiate(d, inode, &attr);
        self.changed(dir);
        Ok(())
    }

    /// `mkdir(path, mode)`.
    pub fn mkdir<P: AsRef<[u8]>>(&mut self, path: P, mode: u32) -> Result<(), Errno> {
        self.mkdirat(AT_FDCWD, path, mode)
    }

    /// `mkdirat(dirfd, path, mode)`.
    pub fn mkdirat<P: AsRef<[u8]>>(&mut self, dirfd: i32, path: P, mode: u32) -> Result<(), Errno> {
        let _call = task_work::enter();
        self.create_node(
            dirfd,
            path.as_ref(),
            true,
            |dir, name, new| dir.sb().fs.mkdir(dir.ino(), name, new),
            S_IFDIR | (mode & 0o1777),
        )
    }

    /// `symlink(target, linkpath)`.
    pub fn symlink<T: AsRef<[u8]>, P: AsRef<[u8]>>(
        &mut self,
        target: T,
        linkpath: P,
    ) -> Result<(), Errno> {
        self.symlinkat(target, AT_FDCWD, linkpath)
    }

    /// `symlinkat(target, newdirfd, linkpath)`: `ENOENT` for an empty
    /// target.
    pub fn symlinkat<T: AsRef<[u8]>, P: AsRef<[u8]>>(
        &mut self,
        target: T,
        dirfd: i32,
        linkpath: P,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        let target = namei::getname(target.as_ref())?;
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        self.create_node(
            dirfd,
            linkpath.as_ref(),
            false,
            |dir, name, new| dir.sb().fs.symlink(dir.ino(), name, target, new),
            S_IFLNK | 0o777,
        )
    }

    /// `unlink(path)`.
    pub fn unlink<P: AsRef<[u8]>>(&mut self, path: P) -> Result<(), Errno> {
        self.unlinkat(AT_FDCWD, path, 0)
    }

    /// `rmdir(path)`.
    pub fn rmdir<P: AsRef<[u8]>>(&mut self, path: P) -> Result<(), Errno> {
        self.unlinkat(AT_FDCWD, path, AT_REMOVEDIR)
    }

    /// `unlinkat(dirfd, path, flags)`, with `AT_REMOVEDIR` for rmdir.
    pub fn unlinkat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !AT_REMOVEDIR != 0 {
            return Err(Errno::EINVAL);
        }
        let rmdir = flags & AT_REMOVEDIR != 0;
        let p = self.parent_of(dirfd, path.as_ref())?;
        match (p.kind, rmdir) {
            (LastType::Norm, _) => {}
            (LastType::DotDot, true) => return Err(Errno::ENOTEMPTY),
            (LastType::Dot, true) => return Err(Errno::EINVAL),
            (LastType::Root, true) => return Err(Errno::EBUSY),
            (_, false) => return Err(Errno::EISDIR),
        }
        let dir = &p.dir;
        let _g = lock(&dir.dir_lock);
        let d = self.nd().lookup_locked_dir(dir, &p.last)?;
        if d.is_negative() {
            return Err(Errno::ENOENT);
        }
        let victim = attr_of(&d)?;
        if !rmdir && p.trailing {
            return Err(if mode_is_dir(victim.mode) {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        self.may_delete(dir, &d, rmdir)?;
        if rmdir {
            dir.sb().fs.rmdir(dir.ino(), &p.last)?;
            d.set_dead_dir();
        } else {
            dir.sb().fs.unlink(dir.ino(), &p.last)?;
        }
        self.refresh_inode(&d);
        self.changed(dir);
        self.changed(&d);
        let dc = &self.vfs.caches().dcache;
        dc.d_drop(&d);
        if rmdir {
            // `shrink_dcache_parent`: the removed directory's cached
            // (negative) children go now, not when the LRU reaches them.
            dc.prune_dead_dir(&d);
        }
        Ok(())
    }

    /// `may_delete`: write and search permission on the directory, the
    /// sticky bit, the type, and mountpoints (`EBUSY`).
    fn may_delete(&self, dir: &DentryRef, victim: &DentryRef, isdir: bool) -> Result<(), Errno> {
        let dattr = attr_of(dir)?;
        let vattr = attr_of(victim)?;
        cred::may_delete(&self.cred, &dattr, &vattr)?;
        if isdir {
            if !mode_is_dir(vattr.mode) {
                return Err(Errno::ENOTDIR);
            }
        } else if mode_is_dir(vattr.mode) {
            return Err(Errno::EISDIR);
        }
        if !victim.mounted_ptr().is_null() {
            return Err(Errno::EBUSY);
        }
        Ok(())
    }

    /// Re-reads an inode's attributes into the inode cache after its link
    /// count changed, so the cache frees it at its last put once unlinked.
    fn refresh_inode(&self, d: &DentryRef) {
        if d.is_negative() {
            return;
        }
        match d.sb().fs.getattr(d.ino()) {
            Ok(a) => self.cache_attr(d, a),
            Err(_) => namei::with_cached_inode(&self.vfs, d, |r| {
                let mut a = r.attr();
                a.nlink = 0;
                r.set_attr(a);
            }),
        }
    }

    /// `rename(old, new)`.
    pub fn rename<P: AsRef<[u8]>, Q: AsRef<[u8]>>(&mut self, old: P, new: Q) -> Result<(), Errno> {
        self.renameat2(AT_FDCWD, old, AT_FDCWD, new, 0)
    }

    /// `renameat(olddirfd, old, newdirfd, new)`.
    pub fn renameat<P: AsRef<[u8]>, Q: AsRef<[u8]>>(
        &mut self,
        od: i32,
        old: P,
        nd: i32,
        new: Q,
    ) -> Result<(), Errno> {
        self.renameat2(od, old, nd, new, 0)
    }

    /// `renameat2(olddirfd, old, newdirfd, new, flags)` with
    /// `RENAME_NOREPLACE` and `RENAME_EXCHANGE`.
    pub fn renameat2<P: AsRef<[u8]>, Q: AsRef<[u8]>>(
        &mut self,
        od: i32,
        old: P,
        nd: i32,
        new: Q,
        flags: u32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & RENAME_NOREPLACE != 0 && flags & (RENAME_EXCHANGE | RENAME_WHITEOUT) != 0 {
            return Err(Errno::EINVAL);
        }
        if flags & RENAME_EXCHANGE != 0 && flags & RENAME_WHITEOUT != 0 {
            return Err(Errno::EINVAL);
        }
        let op = self.parent_of(od, old.as_ref())?;
        let np = self.parent_of(nd, new.as_ref())?;
        if !std::sync::Arc::ptr_eq(op.dir.sb(), np.dir.sb()) {
            return Err(Errno::EXDEV);
        }
        if op.kind != LastType::Norm {
            return Err(Errno::EBUSY);
        }
        if np.kind != LastType::Norm {
            return Err(if flags & RENAME_NOREPLACE != 0 {
                Errno::EEXIST
            } else {
                Errno::EBUSY
            });
        }
        if flags & RENAME_WHITEOUT != 0 {
            return Err(Errno::EINVAL);
        }
        let (odir, ndir) = (&op.dir, &np.dir);
        let same = DentryRef::ptr_eq(odir, ndir);
        let _rl = (!same).then(|| crate::primitive::std_lock(&odir.sb().rename_lock));
        let (first, second) = if odir.as_ptr() < ndir.as_ptr() {
            (odir, ndir)
        } else {
            (ndir, odir)
        };
        let _g1 = lock(&first.dir_lock);
        let _g2 = (!same).then(|| lock(&second.dir_lock));
        let walk = self.nd();
        let od_ = walk.lookup_locked_dir(odir, &op.last)?;
        if od_.is_negative() {
            return Err(Errno::ENOENT);
        }
        let oattr = attr_of(&od_)?;
        let odir_is = mode_is_dir(oattr.mode);
        // Both names are looked up before the trailing-slash rules (Linux's
        // `do_renameat2`): the target's ENOENT/EEXIST/ENAMETOOLONG first.
        let nd_ = walk.lookup_locked_dir(ndir, &np.last)?;
        let exchange = flags & RENAME_EXCHANGE != 0;
        if exchange && nd_.is_negative() {
            return Err(Errno::ENOENT);
        }
        if flags & RENAME_NOREPLACE != 0 && !nd_.is_negative() {
            return Err(Errno::EEXIST);
        }
        let nattr = if nd_.is_negative() {
            None
        } else {
            Some(attr_of(&nd_)?)
        };
        let ndir_is = nattr.is_some_and(|a| mode_is_dir(a.mode));
        // A trailing slash requires a directory: on the source always, on
        // the target only when it is the source that lands there (with
        // RENAME_EXCHANGE each slash constrains its own name).
        if !odir_is && (op.trailing || (np.trailing && !exchange)) {
            return Err(Errno::ENOTDIR);
        }
        if exchange && np.trailing && !ndir_is {
            return Err(Errno::ENOTDIR);
        }
        // Renaming a directory into its own subtree (the `lock_rename`
        // trap), or over one of its ancestors.
        if odir_is && is_ancestor(&od_, ndir) {
            return Err(Errno::EINVAL);
        }
        if let Some(_) = nattr.filter(|_| ndir_is)
            && is_ancestor(&nd_, odir)
        {
            return Err(if exchange {
                Errno::EINVAL
            } else {
                Errno::ENOTEMPTY
            });
        }
        if nattr.is_some_and(|a| a.ino == oattr.ino) {
            return Ok(()); // the same inode: nothing to do
        }
        self.may_delete(odir, &od_, odir_is)?;
        match nattr {
            Some(_) if exchange => self.may_delete(ndir, &nd_, ndir_is)?,
            Some(_) => self.may_delete(ndir, &nd_, odir_is)?,
            None => self.may_create(ndir, &attr_of(ndir)?)?,
        }
        if !same {
            if odir_is {
                permission(&self.cred, &oattr, MAY_WRITE)?;
            }
            if exchange && ndir_is {
                permission(&self.cred, &nattr.unwrap_or(oattr), MAY_WRITE)?;
            }
        }
        if !od_.mounted_ptr().is_null() || !nd_.mounted_ptr().is_null() {
            return Err(Errno::EBUSY);
        }
        odir.sb()
            .fs
            .rename(odir.ino(), &op.last, ndir.ino(), &np.last, flags)?;
        for d in [odir, ndir, &od_, &nd_] {
            self.changed(d);
        }
        let dc = &self.vfs.caches().dcache;
        if exchange {
            dc.d_exchange(&od_, &op.last, &nd_, &np.last, odir, ndir);
        } else {
            if nattr.is_some() {
                self.refresh_inode(&nd_);
                if ndir_is {
                    nd_.set_dead_dir();
                }
            }
            // The target's dentry, positive or negative, leaves the hash:
            // the moved dentry takes its name.
            dc.d_drop(&nd_);
            if ndir_is {
                // A directory renamed over is removed: prune it as rmdir
                // does.
                dc.prune_dead_dir(&nd_);
            }
            dc.d_move(&od_, ndir, &np.last);
        }
        Ok(())
    }

    /// `link(old, new)`.
    pub fn link<P: AsRef<[u8]>, Q: AsRef<[u8]>>(&mut self, old: P, new: Q) -> Result<(), Errno> {
        self.linkat(AT_FDCWD, old, AT_FDCWD, new, 0)
    }

    /// `linkat(olddirfd, old, newdirfd, new, flags)` with
    /// `AT_SYMLINK_FOLLOW` and `AT_EMPTY_PATH` (which needs
    /// `CAP_DAC_READ_SEARCH`, as in Linux).
    pub fn linkat<P: AsRef<[u8]>, Q: AsRef<[u8]>>(
        &mut self,
        od: i32,
        old: P,
        nd: i32,
        new: Q,
        flags: i32,
    ) -> Result<(), Errno> {
        let _call = task_work::enter();
        if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
            return Err(Errno::EINVAL);
        }
        let mut lf = 0;
        if flags & AT_SYMLINK_FOLLOW != 0 {
            lf |= FOLLOW;
        }
        if flags & AT_EMPTY_PATH != 0 {
            if !self.cred.capable(cred::Cap::DacReadSearch) {
                return Err(Errno::ENOENT);
            }
            lf |= EMPTY;
        }
        let src = self.resolve(od, old.as_ref(), lf)?;
        self.with_new_name(nd, new.as_ref(), false, |dir, name, d| {
            self.do_link(&src, dir, name, d)
        })
    }

    /// `vfs_link`, with the new name's directory locked and the name free.
    fn do_link(
        &self,
        src: &DentryRef,
        dir: &DentryRef,
        name: &[u8],
        d: &DentryRef,
    ) -> Result<(), Errno> {
        if !std::sync::Arc::ptr_eq(src.sb(), dir.sb()) {
            return Err(Errno::EXDEV);
        }
        self.may_create(dir, &attr_of(dir)?)?;
        let sattr = attr_of(src)?;
        if mode_is_dir(sattr.mode) {
            return Err(Errno::EPERM);
        }
        if sattr.nlink == 0 && (src.is_unlinkable() || src.is_hashed()) {
            return Err(Errno::ENOENT);
        }
        let _io = src.lock_inode();
        let attr = dir.sb().fs.link(src.ino(), dir.ino(), name)?;
        self.changed(dir);
        self.changed(src);
        let inode = namei::iget(&self.vfs, dir.sb(), &attr)?;
        self.vfs.caches().dcache.instantiate(d, inode, &attr);
        Ok(())
    }

    /// `readlink(path, buf)`: the target's bytes that fit; `EINVAL` for an
    /// empty buffer or a non-symlink.
    pub fn readlink<P: AsRef<[u8]>>(&mut self, path: P, buf: &mut [u8]) -> Result<usize, Errno> {
        self.readlinkat(AT_FDCWD, path, buf)
    }

    /// `readlinkat(dirfd, path, buf)`; an empty path reads the symlink
    /// `dirfd` itself refers to (an `O_PATH | O_NOFOLLOW` fd).
    pub fn readlinkat<P: AsRef<[u8]>>(
        &mut self,
        dirfd: i32,
        path: P,
        buf: &mut [u8],
    ) -> Result<usize, Errno> {
        let _call = task_work::enter();
        if buf.is_empty() {
            return Err(Errno::EINVAL);
        }
        let path = path.as_ref();
        let lf = if path.is_empty() && dirfd != AT_FDCWD {
            EMPTY
        } else {
            0
        };
        let d = self.resolve(dirfd, path, lf)?;
        let a = attr_of(&d)?;
        if a.mode & crate::fs::S_IFMT != S_IFLNK {
            // Linux's do_readlinkat: an empty path naming a non-symlink is
            // ENOENT, any other non-symlink EINVAL (host: readlinkat on a
            // directory fd with "" is ENOENT).
            return Err(if path.is_empty() {
                Errno::ENOENT
            } else {
                Errno::EINVAL
            });
        }
        let t = d.sb().fs.readlink(d.ino())?;
        let n = t.len().min(buf.len());
        buf[..n].copy_from_slice(&t[..n]);
        self.touch_atime(&d, 0);
        Ok(n)
    }

    /// `chdir(path)`: `ENOTDIR`, `EACCES` without search permission.
    pub fn chdir<P: AsRef<[u8]>>(&mut self, path: P) -> Result<(), Errno> {
        let _call = task_work::enter();
        let d = self.resolve(AT_FDCWD, path.as_ref(), FOLLOW | DIRECTORY)?;
        self.set_cwd(d)
    }

    /// `fchdir(fd)`.
    pub fn fchdir(&mut self, fd: i32) -> Result<(), Errno> {
        let _call = task_work::enter();
        let file = self.files.get(fd).ok_or(Errno::EBADF)?;
        let d = file.dentry().ok_or(Errno::ENOTDIR)?.clone();
        if !namei::is_dir(&d) {
            return Err(Errno::ENOTDIR);
        }
        self.set_cwd(d)
    }

    fn set_cwd(&self, d: DentryRef) -> Result<(), Errno> {
        permission(&self.cred, &attr_of(&d)?, MAY_EXEC)?;
        let old = std::mem::replace(&mut *crate::primitive::std_lock(&self.fs.cwd), d);
        drop(old);
        Ok(())
    }

    /// `getcwd()`: the absolute path of the current directory; `ENOENT` if
    /// it was removed.
    pub fn getcwd(&mut self) -> Result<Vec<u8>, Errno> {
        let _call = task_work::enter();
        let cwd = self.cwd();
        d_path(&self.nd(), &cwd, self.vfs.root())
    }
}

/// Whether `anc` is `d` or one of its ancestors (within one file system).
fn is_ancestor(anc: &DentryRef, d: &DentryRef) -> bool {
    let mut cur = Some(d.clone());
    while let Some(c) = cur {
        if DentryRef::ptr_eq(&c, anc) {
            return true;
        }
        cur = c.parent();
    }
    false
}

/// The absolute path of `d` (`d_path`), crossing mounts upwards.
pub(super) fn d_path(
    nd: &namei::Nd<'_>,
    d: &DentryRef,
    root: &DentryRef,
) -> Result<Vec<u8>, Errno> {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let mut cur = d.clone();
    loop {
        if DentryRef::ptr_eq(&cur, root) {
            break;
        }
        if !cur.is_hashed() && cur.parent().is_some() {
            return Err(Errno::ENOENT);
        }
        match cur.parent() {
            Some(p) => {
                parts.push(cur.name());
                cur = p;
            }
            None => {
                let up = nd.dotdot(&cur);
                if DentryRef::ptr_eq(&up, &cur) {
                    break;
                }
                // `dotdot` went to the mountpoint's parent: record the
                // mountpoint's own name.
                let mp = crate::primitive::std_lock(&cur.sb().mountpoint).clone();
                match mp {
                    Some(mp) => cur = mp,
                    None => break,
                }
            }
        }
    }
    let mut out = Vec::new();
    for p in parts.iter().rev() {
        out.push(b'/');
        out.extend_from_slice(p);
    }
    if out.is_empty() {
        out.push(b'/');
    }
    Ok(out)
}
