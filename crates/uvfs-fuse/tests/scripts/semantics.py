# System calls on the current directory, printing each result (a value or
# an errno name) so that a run on the host's tmpfs and one on a uvfs mount
# can be compared line by line. No inode numbers, no absolute times.
import errno
import mmap
import os
import stat
import sys

out = []


def show(label, f):
    try:
        r = f()
        out.append(f"{label}: {r!r}")
    except OSError as e:
        out.append(f"{label}: {errno.errorcode.get(e.errno, e.errno)}")


def mode(p, follow=False):
    s = os.stat(p) if follow else os.lstat(p)
    return oct(s.st_mode), s.st_nlink, s.st_size, s.st_uid, s.st_gid


os.umask(0o022)
show("mkdir d", lambda: os.mkdir("d", 0o755))
show("mkdir d again", lambda: os.mkdir("d", 0o755))
show("stat d", lambda: mode("d"))
fd = os.open("d/f", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o666)
show("write", lambda: os.write(fd, b"hello world"))
os.close(fd)
show("O_EXCL again", lambda: os.open("d/f", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
show("stat f", lambda: mode("d/f"))
show("read f", lambda: open("d/f", "rb").read())
show("ls d", lambda: sorted(os.listdir("d")))
show("stat d after", lambda: mode("d"))

# O_APPEND from two descriptors
a = os.open("d/f", os.O_WRONLY | os.O_APPEND)
b = os.open("d/f", os.O_WRONLY | os.O_APPEND)
os.write(a, b"A")
os.write(b, b"B")
os.write(a, b"C")
os.close(a)
os.close(b)
show("after appends", lambda: open("d/f", "rb").read())

# O_TRUNC, ftruncate, truncate
fd = os.open("d/t", os.O_CREAT | os.O_RDWR, 0o644)
os.write(fd, b"0123456789")
show("ftruncate 4", lambda: os.ftruncate(fd, 4))
show("pread", lambda: os.pread(fd, 100, 0))
show("truncate 20", lambda: os.truncate("d/t", 20))
show("size", lambda: os.fstat(fd).st_size)
show("pread tail", lambda: os.pread(fd, 100, 0))
os.close(fd)
fd = os.open("d/t", os.O_RDWR | os.O_TRUNC)
show("after O_TRUNC", lambda: os.fstat(fd).st_size)
os.close(fd)
# an empty file: an O_TRUNC open (and ftruncate) stamps mtime and ctime,
# truncate(2) to the same size does not
def stamped(f):
    os.utime("d/t", ns=(10**9, 10**9))
    c = os.stat("d/t").st_ctime_ns
    f()
    s = os.stat("d/t")
    return (s.st_size, s.st_mtime_ns != 10**9, s.st_ctime_ns != c)
show("O_TRUNC empty", lambda: stamped(lambda: os.close(os.open("d/t", os.O_WRONLY | os.O_TRUNC))))
show("creat empty", lambda: stamped(lambda: open("d/t", "wb").close()))
show("truncate empty", lambda: stamped(lambda: os.truncate("d/t", 0)))
show("ftruncate empty", lambda: stamped(lambda: os.close((lambda fd: (os.ftruncate(fd, 0), fd)[1])(os.open("d/t", os.O_WRONLY)))))

# pwrite past the end makes a hole; SEEK_DATA / SEEK_HOLE
fd = os.open("d/sparse", os.O_CREAT | os.O_RDWR, 0o644)
os.pwrite(fd, b"x", 1 << 20)
show("size sparse", lambda: os.fstat(fd).st_size)
show("SEEK_DATA 0", lambda: os.lseek(fd, 0, os.SEEK_DATA))
show("SEEK_HOLE 0", lambda: os.lseek(fd, 0, os.SEEK_HOLE))
show("SEEK_DATA past", lambda: os.lseek(fd, (1 << 20) + 10, os.SEEK_DATA))
show("fallocate", lambda: os.posix_fallocate(fd, 0, 8192))
show("size after fallocate", lambda: os.fstat(fd).st_size)
os.close(fd)

# copy_file_range
src = os.open("d/f", os.O_RDONLY)
dst = os.open("d/copy", os.O_CREAT | os.O_RDWR, 0o644)
show("copy_file_range", lambda: os.copy_file_range(src, dst, 5, 0, 2))
show("copy content", lambda: os.pread(dst, 100, 0))
os.close(src)
os.close(dst)

# links, symlinks, rename flavours
show("link", lambda: os.link("d/f", "d/g"))
show("nlink", lambda: os.stat("d/f").st_nlink)
show("link exists", lambda: os.link("d/f", "d/g"))
show("symlink", lambda: os.symlink("f", "d/s"))
show("readlink", lambda: os.readlink("d/s"))
show("stat through symlink", lambda: mode("d/s", True))
show("lstat symlink", lambda: mode("d/s")[0])
show("dangling", lambda: os.symlink("nowhere", "d/dangling"))
show("open dangling", lambda: os.open("d/dangling", os.O_RDONLY))
show("rename", lambda: os.rename("d/g", "d/h"))
show("rename missing", lambda: os.rename("d/g", "d/i"))
show("rename over", lambda: os.rename("d/h", "d/copy"))
show("ls", lambda: sorted(os.listdir("d")))
show("rmdir nonempty", lambda: os.rmdir("d"))
show("unlink dir", lambda: os.unlink("d"))
show("rmdir file", lambda: os.rmdir("d/f"))
os.mkdir("e")
os.mkdir("e/sub")
show("rename dir into itself", lambda: os.rename("e", "e/sub/x"))
show("rename dir over file", lambda: os.rename("e/sub", "d/f"))

import ctypes

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100


def renameat2(a, b, flags):
    r = libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), flags)
    if r != 0:
        raise OSError(ctypes.get_errno(), "renameat2")
    return r


show("RENAME_NOREPLACE", lambda: renameat2("d/f", "d/copy", 1))
show("RENAME_EXCHANGE", lambda: renameat2("d/f", "e", 2))
show("after exchange", lambda: (mode("d/f")[0], mode("e")[0]))
show("exchange back", lambda: renameat2("d/f", "e", 2))
show("EXCHANGE missing", lambda: renameat2("d/f", "d/nothing", 2))
show("RENAME_WHITEOUT", lambda: renameat2("d/copy", "d/wo", 4))
show("whiteout", lambda: (oct(os.lstat("d/copy").st_mode), os.lstat("d/copy").st_rdev))
show("moved", lambda: mode("d/wo"))
show("WHITEOUT|EXCHANGE", lambda: renameat2("d/wo", "d/copy", 6))
show("WHITEOUT|NOREPLACE", lambda: renameat2("d/wo", "d/copy", 5))
show("whiteout back", lambda: renameat2("d/wo", "d/copy", 4))
show("whiteouts listed", lambda: sorted(os.listdir("d")))
show("unlink whiteout", lambda: os.unlink("d/wo"))

# chmod, chown, utimes
show("chmod", lambda: os.chmod("d/f", 0o4750))
show("mode", lambda: oct(os.stat("d/f").st_mode))
show("chown", lambda: os.chown("d/f", 1000, 1000))
show("after chown (suid cleared?)", lambda: mode("d/f"))
show("utime", lambda: os.utime("d/f", ns=(1_000_000_123, 2_000_000_456)))
show("times", lambda: (os.stat("d/f").st_atime_ns, os.stat("d/f").st_mtime_ns))
show("utime omit", lambda: os.utime("d/f", ns=(5_000_000_000, 2_000_000_456)))
show("times 2", lambda: (os.stat("d/f").st_atime_ns, os.stat("d/f").st_mtime_ns))

# extended attributes (user.* on a file, trusted.* as root, a symlink's own)
show("setxattr", lambda: os.setxattr("d/f", "user.k", b"v1"))
show("setxattr CREATE again", lambda: os.setxattr("d/f", "user.k", b"v2", os.XATTR_CREATE))
show("setxattr REPLACE", lambda: os.setxattr("d/f", "user.k", b"value-2", os.XATTR_REPLACE))
show("setxattr REPLACE missing", lambda: os.setxattr("d/f", "user.none", b"x", os.XATTR_REPLACE))
show("getxattr", lambda: os.getxattr("d/f", "user.k"))
show("getxattr missing", lambda: os.getxattr("d/f", "user.none"))
show("setxattr trusted", lambda: os.setxattr("d/f", "trusted.t", b"t"))
show("setxattr empty value", lambda: os.setxattr("d/f", "user.e", b""))
show("getxattr empty value", lambda: os.getxattr("d/f", "user.e"))
show("listxattr", lambda: sorted(os.listxattr("d/f")))
show("removexattr", lambda: os.removexattr("d/f", "user.e"))
show("removexattr again", lambda: os.removexattr("d/f", "user.e"))
show("listxattr after", lambda: sorted(os.listxattr("d/f")))
show("setxattr bad namespace", lambda: os.setxattr("d/f", "bogus.x", b"x"))
show("setxattr on a dir", lambda: os.setxattr("d", "user.d", b"dir"))
show("getxattr on a dir", lambda: os.getxattr("d", "user.d"))
os.symlink("f", "d/xl")
show("setxattr user on a symlink", lambda: os.setxattr("d/xl", "user.s", b"s", follow_symlinks=False))
show("getxattr through a symlink", lambda: os.getxattr("d/xl", "user.k"))
show("listxattr of a symlink", lambda: sorted(os.listxattr("d/xl", follow_symlinks=False)))
os.unlink("d/xl")
show("getxattr big value", lambda: (os.setxattr("d/f", "user.big", b"x" * 5000), len(os.getxattr("d/f", "user.big")))[1])

# unlinked but open stays readable and writable
fd = os.open("d/gone", os.O_CREAT | os.O_RDWR, 0o600)
os.write(fd, b"still here")
os.unlink("d/gone")
show("stat gone", lambda: os.stat("d/gone"))
show("read unlinked", lambda: os.pread(fd, 100, 0))
show("fstat unlinked nlink", lambda: os.fstat(fd).st_nlink)
os.write(fd, b"!")
show("read unlinked 2", lambda: os.pread(fd, 100, 0))
os.close(fd)

# mmap shared and private
fd = os.open("d/map", os.O_CREAT | os.O_RDWR, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED)
m[0:5] = b"MMAP!"
m.flush()
m.close()
show("read after shared mmap", lambda: os.pread(fd, 5, 0))
p = mmap.mmap(fd, 8192, mmap.MAP_PRIVATE)
p[0:5] = b"priv!"
show("private view", lambda: p[0:5])
p.close()
show("file after private", lambda: os.pread(fd, 5, 0))
os.close(fd)

# directories: readdir of many entries, with removal during listing
os.mkdir("many")
for i in range(300):
    open(f"many/n{i:03}", "w").close()
show("count", lambda: len(os.listdir("many")))
with os.scandir("many") as it:
    seen = 0
    for e in it:
        if seen == 10:
            for j in range(150, 300):
                os.unlink(f"many/n{j:03}")
        seen += 1
show("after removing during listing", lambda: len(os.listdir("many")))
show("statvfs namemax", lambda: os.statvfs(".").f_namemax)
show("long name", lambda: os.open("x" * 256, os.O_CREAT | os.O_RDONLY, 0o644))
show("O_DIRECTORY on file", lambda: os.open("d/f", os.O_RDONLY | os.O_DIRECTORY))
show("write dir", lambda: os.open("d", os.O_WRONLY))
show("mkfifo", lambda: os.mkfifo("fifo"))
show("mkfifo again", lambda: os.mkfifo("fifo"))
show("fifo stat", lambda: mode("fifo"))


def fifo_io():
    fd = os.open("fifo", os.O_RDWR | os.O_NONBLOCK)
    try:
        return os.write(fd, b"abc"), os.read(fd, 10), os.lseek(fd, 0, 0)
    finally:
        os.close(fd)


show("fifo io", fifo_io)
show("fifo write-only, no reader", lambda: os.open("fifo", os.O_WRONLY | os.O_NONBLOCK))
show("mknod socket", lambda: os.mknod("sock", stat.S_IFSOCK | 0o644))
show("socket stat", lambda: mode("sock"))
show("mknod chr", lambda: os.mknod("chr", stat.S_IFCHR | 0o640, os.makedev(42, 7)))
show("chr rdev", lambda: (oct(os.lstat("chr").st_mode), os.major(os.lstat("chr").st_rdev), os.minor(os.lstat("chr").st_rdev)))
show("mknod dir", lambda: os.mknod("ndir", stat.S_IFDIR | 0o755))
show("mknod regular", lambda: os.mknod("nreg", 0o640))
show("regular stat", lambda: mode("nreg"))
for n in ("sock", "chr", "nreg"):
    if os.path.lexists(n):
        os.unlink(n)
show("access", lambda: os.access("d/f", os.R_OK | os.W_OK))

# O_APPEND through two fds at once: each write lands at the end
fa = os.open("d/app", os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
fb = os.open("d/app", os.O_WRONLY | os.O_APPEND)
for i in range(3):
    os.write(fa, b"a%d" % i)
    os.write(fb, b"B%d" % i)
os.close(fa)
os.close(fb)
show("two O_APPEND fds", lambda: open("d/app", "rb").read())

# one directory read by two openers at once, interleaved
os.mkdir("two")
for i in range(150):
    open(f"two/{i:03}-" + "n" * 40, "w").close()
it1, it2, seen1, seen2 = os.scandir("two"), os.scandir("two"), [], []
for e1 in it1:
    seen1.append(e1.name)
    e2 = next(it2, None)
    if e2 is not None:
        seen2.append(e2.name)
seen2 += [e.name for e in it2]
show("two readers", lambda: (len(seen1), len(seen2), sorted(seen1) == sorted(seen2) == sorted(os.listdir("two"))))

# O_NOATIME: a read or a listing through such an fd leaves atime alone
# where relatime would stamp it (atime set before mtime). On a mount the
# read and the listing must reach the server, which alone stamps atime
# (FUSE inodes are S_NOATIME): the file's cached pages are dropped, and a
# new entry makes the kernel's listing cache stale (in no-open mode the
# kernel caches listings, FOPEN_CACHE_DIR). No-open mode has no per-open
# handle to carry the flag: its server reads and lists through handles
# of its own.
os.mkdir("na")
with open("na/f", "wb") as f:
    f.write(b"x" * 5000)


def atime_kept(path, read):
    open(f"na/t{len(os.listdir('na'))}", "w").close()
    os.utime(path, ns=(1_000_000_000, 2_000_000_000))
    read()
    return os.stat(path).st_atime_ns == 1_000_000_000


def read_noatime():
    fd = os.open("na/f", os.O_RDONLY | os.O_NOATIME)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return os.pread(fd, 100, 0)[:1]
    finally:
        os.close(fd)


def list_noatime():
    fd = os.open("na", os.O_RDONLY | os.O_DIRECTORY | os.O_NOATIME)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)


show("O_NOATIME read keeps atime", lambda: atime_kept("na/f", read_noatime))
show("O_NOATIME listing keeps atime", lambda: atime_kept("na", list_noatime))

# a directory moved to another parent lists ".." as its new parent, also
# after it was listed in its old place. (In no-open mode the kernel caches
# listings; the sequence where a moved directory's cached listing kept its
# old ".." is mount_differential's user no-open seed 101, longer than
# these simple moves, which pass on this kernel with or without the
# server's drop of that cache at the rename.)
class Dirent(ctypes.Structure):
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64),
                ("d_reclen", ctypes.c_ushort), ("d_type", ctypes.c_ubyte),
                ("d_name", ctypes.c_char * 256)]


libc.opendir.restype = ctypes.c_void_p
libc.opendir.argtypes = [ctypes.c_char_p]
libc.readdir.restype = ctypes.POINTER(Dirent)
libc.readdir.argtypes = [ctypes.c_void_p]
libc.closedir.argtypes = [ctypes.c_void_p]


def dotdot_is_parent(path):
    d = libc.opendir(path.encode())
    if not d:
        raise OSError(ctypes.get_errno(), path)
    try:
        while True:
            e = libc.readdir(d)
            if not e:
                return None
            if e.contents.d_name == b"..":
                return e.contents.d_ino == os.stat(path + "/..").st_ino
    finally:
        libc.closedir(d)


os.makedirs("mv1/x")
os.mkdir("mv2")
show("'..' before the move", lambda: dotdot_is_parent("mv1/x"))
os.rename("mv1/x", "mv2/x")
show("'..' after the move", lambda: dotdot_is_parent("mv2/x"))
os.mkdir("mv1/y")
show("'..' after an exchange", lambda: (renameat2("mv1/y", "mv2/x", 2),
                                        dotdot_is_parent("mv1/y"), dotdot_is_parent("mv2/x")))

# a listing continued from a cookie (seekdir) after an entry was added
# sees the entry, as on tmpfs (no-open mode: the kernel's cached listing
# is dropped by the server at the change)
libc.telldir.restype = ctypes.c_long
libc.telldir.argtypes = [ctypes.c_void_p]
libc.seekdir.argtypes = [ctypes.c_void_p, ctypes.c_long]


def names_after_seek():
    os.mkdir("sk")
    open("sk/one", "w").close()
    d = libc.opendir(b"sk")
    try:
        first = libc.readdir(d).contents.d_name
        cookie = libc.telldir(d)
        while libc.readdir(d):
            pass
        open("sk/two", "w").close()
        libc.seekdir(d, cookie)
        rest = []
        while True:
            e = libc.readdir(d)
            if not e:
                break
            rest.append(e.contents.d_name.decode())
        return first.decode(), sorted(rest)
    finally:
        libc.closedir(d)


show("listing after a seek sees a new entry", names_after_seek)

# permissions as another user
os.chmod("d/f", 0o640)
os.chown("d/f", 0, 0)
os.mkdir("locked", 0o700)
open("locked/x", "w").close()
os.mkdir("sticky", 0o1777)
open("sticky/rootfile", "w").close()
os.chmod("sticky/rootfile", 0o666)
os.mkdir("shared", 0o775)
os.chmod("shared", 0o775)
os.chown("shared", 0, 4242)
with open("d/secret", "wb") as f:
    f.write(b"s")
os.chmod("d/secret", 0o600)
with open("d/xonly", "wb") as f:
    f.write(b"#!/bin/sh\n")
os.chmod("d/xonly", 0o711)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    os.setgroups([4242])
    os.setresgid(1000, 1000, 1000)
    os.setresuid(1000, 1000, 1000)
    res = []

    def u(label, f):
        try:
            res.append(f"user {label}: {f()!r}")
        except OSError as e:
            res.append(f"user {label}: {errno.errorcode.get(e.errno, e.errno)}")

    def opened(path, flags):
        os.close(os.open(path, flags))
        return "opened"

    u("read 0600 root file", lambda: opened("d/secret", os.O_RDONLY))
    u("write 0600 root file", lambda: opened("d/secret", os.O_WRONLY))
    u("O_TRUNC 0600 root file", lambda: opened("d/secret", os.O_RDONLY | os.O_TRUNC))
    u("read 0711 root file", lambda: opened("d/xonly", os.O_RDONLY))
    u("O_PATH 0600 root file", lambda: opened("d/secret", os.O_PATH))
    u("O_NOATIME root file", lambda: opened("d/xonly", os.O_RDONLY | os.O_NOATIME))
    # an open file outlives the permission that let it open
    u("own file", lambda: os.write(os.open("shared/own", os.O_CREAT | os.O_RDWR, 0o600), b"mine"))
    fo = os.open("shared/own", os.O_RDWR)
    u("chmod own 000", lambda: os.chmod("shared/own", 0))
    u("read after chmod 000", lambda: os.pread(fo, 10, 0))
    u("write after chmod 000", lambda: os.pwrite(fo, b"M", 0))
    u("ftruncate after chmod 000", lambda: os.ftruncate(fo, 2))
    u("reopen after chmod 000", lambda: opened("shared/own", os.O_RDONLY))
    u("O_TRUNC after chmod 000", lambda: opened("shared/own", os.O_WRONLY | os.O_TRUNC))
    u("read own", lambda: os.pread(fo, 10, 0))
    os.close(fo)
    u("read 0640 root file", lambda: open("d/f", "rb").read())
    u("write 0640 root file", lambda: os.open("d/f", os.O_WRONLY))
    u("stat in 0700 dir", lambda: os.stat("locked/x").st_size)
    u("create in 0700 dir", lambda: os.open("locked/y", os.O_CREAT | os.O_WRONLY, 0o644))
    u("ls 0700 dir", lambda: os.listdir("locked"))
    u("create in 0755 dir", lambda: os.open("d/mine", os.O_CREAT | os.O_WRONLY, 0o644))
    u("create in group dir", lambda: os.close(os.open("shared/mine", os.O_CREAT | os.O_WRONLY, 0o644)))
    u("owner of group-dir file", lambda: mode("shared/mine")[3:])
    u("unlink in sticky dir", lambda: os.unlink("sticky/rootfile"))
    u("write 0666 in sticky", lambda: os.close(os.open("sticky/rootfile", os.O_WRONLY)))
    u("chmod root file", lambda: os.chmod("d/f", 0o777))
    u("chown own file", lambda: os.chown("shared/mine", 0, -1))
    u("chgrp to supplementary", lambda: os.chown("shared/mine", -1, 4242))
    u("group after", lambda: mode("shared/mine")[4])
    u("utime root file now", lambda: os.utime("d/f"))
    u("utime 0666 root file now", lambda: os.utime("sticky/rootfile"))
    u("utime 0666 explicit", lambda: os.utime("sticky/rootfile", (1, 1)))
    u("truncate root 0666", lambda: os.truncate("sticky/rootfile", 3))
    u("truncate 0640", lambda: os.truncate("d/f", 3))
    u("access R", lambda: os.access("d/f", os.R_OK))
    u("access W", lambda: os.access("d/f", os.W_OK))
    u("rename into 0700", lambda: os.rename("shared/mine", "locked/mine"))
    u("link into shared", lambda: os.link("sticky/rootfile", "shared/hard"))
    u("mkdir in shared", lambda: os.mkdir("shared/sd"))
    u("rmdir d", lambda: os.rmdir("e/sub"))
    print("\n".join(res))
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
print("\n".join(out))
