# A regular file's data and the attributes writes change, through every
# path the kernel may take (FUSE passthrough on a mount, or requests to
# the server): write, pwrite past a hole, O_APPEND, O_DIRECT, fallocate,
# hole punch, truncate, shared mmap, copy_file_range, and set-ID removal
# on write. Prints results and errno names, and how times moved (never
# absolute times), so a run on the host's tmpfs and one on a uvfs mount
# can be compared line by line.
import ctypes
import errno
import mmap
import os
import sys

out = []
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]


def show(label, f):
    try:
        r = f()
        out.append(f"{label}: {r!r}")
    except OSError as e:
        out.append(f"{label}: {errno.errorcode.get(e.errno, e.errno)}")


def fallocate(fd, mode, off, length):
    if libc.fallocate(fd, mode, off, length) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return 0


def times(p):
    s = os.stat(p)
    return s.st_mtime_ns, s.st_ctime_ns


def moved(p, before):
    """(mtime moved, ctime moved, mtime == ctime) since `before`."""
    m, c = times(p)
    return m != before[0], c != before[1], m == c


def sizes(p):
    s = os.stat(p)
    return s.st_size, s.st_blocks


def content(p):
    with open(p, "rb") as f:
        return f.read()


os.umask(0o022)
fd = os.open("f", os.O_CREAT | os.O_RDWR, 0o644)
t = times("f")
show("write", lambda: os.write(fd, b"hello"))
show("times after write", lambda: moved("f", t))
show("size after write", lambda: sizes("f"))
t = times("f")
show("pwrite past a hole", lambda: os.pwrite(fd, b"far", 1 << 20))
show("times after pwrite", lambda: moved("f", t))
show("size after pwrite", lambda: sizes("f"))
show("SEEK_DATA 5", lambda: os.lseek(fd, 5, os.SEEK_DATA))
show("SEEK_HOLE 0", lambda: os.lseek(fd, 0, os.SEEK_HOLE))
show("pread across", lambda: os.pread(fd, 8, (1 << 20) - 4))
show("read by another fd", lambda: content("f")[:5])

# a second writer's data, seen at once by a reader and by a stat
g = os.open("f", os.O_WRONLY)
show("write by a second fd", lambda: os.pwrite(g, b"HE", 0))
show("pread first fd", lambda: os.pread(fd, 5, 0))
os.close(g)

# O_APPEND from two descriptors, and a write extending through O_APPEND
a = os.open("f", os.O_WRONLY | os.O_APPEND)
b = os.open("f", os.O_WRONLY | os.O_APPEND)
show("append a", lambda: os.write(a, b"AA"))
show("append b", lambda: os.write(b, b"BBB"))
show("append pos a", lambda: os.lseek(a, 0, os.SEEK_CUR))
show("append pwrite", lambda: os.pwrite(a, b"p", 0))
show("tail", lambda: content("f")[-8:])
show("size after appends", lambda: sizes("f"))
os.close(a)
os.close(b)

# truncate: shrinking stamps, the same size by truncate(2) of a file with
# data too; ftruncate always
t = times("f")
show("ftruncate shrink", lambda: os.ftruncate(fd, 3))
show("times after ftruncate", lambda: moved("f", t))
show("read after shrink", lambda: os.pread(fd, 10, 0))
t = times("f")
show("truncate same size", lambda: os.truncate("f", 3))
show("times after same-size truncate", lambda: moved("f", t))
show("truncate grow", lambda: os.truncate("f", 10000))
show("size after grow", lambda: sizes("f"))
show("read zeros", lambda: os.pread(fd, 4, 5000))

# fallocate: allocate, keep-size, punch a hole; the data around it stays
os.pwrite(fd, b"x" * 12288, 0)
t = times("f")
show("fallocate extend", lambda: fallocate(fd, 0, 0, 20000))
show("times after fallocate", lambda: moved("f", t))
show("size after fallocate", lambda: sizes("f"))
show("fallocate keep size", lambda: fallocate(fd, 1, 0, 40000))
show("size after keep size", lambda: sizes("f"))
t = times("f")
show("punch hole", lambda: fallocate(fd, 3, 4096, 4096))
show("times after punch", lambda: moved("f", t))
show("read across the hole", lambda: os.pread(fd, 8, 4092))
show("SEEK_HOLE after punch", lambda: os.lseek(fd, 0, os.SEEK_HOLE))
show("SEEK_DATA in the hole", lambda: os.lseek(fd, 4096, os.SEEK_DATA))
show("blocks after punch", lambda: sizes("f"))
show("punch without keep size", lambda: fallocate(fd, 2, 0, 4096))

# an explicit time set after a write sticks; a chmod after a write keeps
# the write's mtime
os.write(fd, b"w")
show("utime after write", lambda: os.utime("f", ns=(5_000_000_000, 7_000_000_000)))
show("mtime after utime", lambda: os.stat("f").st_mtime_ns)
os.pwrite(fd, b"w", 0)
m0 = os.stat("f").st_mtime_ns
show("write moved mtime from the explicit one", lambda: m0 != 7_000_000_000)
show("chmod after write", lambda: os.chmod("f", 0o600))
show("mtime kept by chmod", lambda: os.stat("f").st_mtime_ns == m0)
os.close(fd)

# O_DIRECT: aligned I/O through a page-aligned buffer
show("O_DIRECT open", lambda: os.close(os.open("direct", os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)))
try:
    dfd = os.open("direct", os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, 4096)
    buf.write(b"D" * 4096)
    show("O_DIRECT write", lambda: os.pwritev(dfd, [buf], 0))
    rbuf = mmap.mmap(-1, 4096)
    show("O_DIRECT read", lambda: (os.preadv(dfd, [rbuf], 0), rbuf[:4]))
    show("O_DIRECT unaligned read", lambda: len(os.pread(dfd, 10, 1)))
    os.close(dfd)
except OSError as e:
    out.append(f"O_DIRECT: {errno.errorcode.get(e.errno, e.errno)}")
show("direct content", lambda: content("direct")[:4])

# shared mapping: its stores are the file's data, and writes the mapping's
fd = os.open("m", os.O_CREAT | os.O_RDWR, 0o644)
os.ftruncate(fd, 8192)
mm = mmap.mmap(fd, 8192)
t = times("m")
mm[0:4] = b"MAPD"
show("read sees the mapping", lambda: os.pread(fd, 4, 0))
os.pwrite(fd, b"WRIT", 4096)
show("mapping sees the write", lambda: mm[4096:4100])
show("other reader sees the mapping", lambda: content("m")[:4])
mm.flush()
show("times after msync", lambda: moved("m", t)[:1])
os.ftruncate(fd, 4096)
show("size after truncating a mapped file", lambda: sizes("m"))
mm.close()
os.close(fd)

# copy_file_range into a file
src = os.open("f", os.O_RDONLY)
dst = os.open("copy", os.O_CREAT | os.O_WRONLY, 0o644)
show("copy_file_range", lambda: os.copy_file_range(src, dst, 100, 0, 0))
os.close(src)
os.close(dst)
show("copy content", lambda: content("copy")[:8])
show("copy size", lambda: sizes("copy"))

# set-ID bits and writes: removed by a caller without CAP_FSETID (the
# owner or not), kept by root's writes
for name, m in (("suid", 0o4757), ("sgid", 0o2777), ("sgid-noexec", 0o2767), ("both", 0o6777)):
    with open(name, "wb") as f:
        f.write(b"1")
    os.chmod(name, m)
with open("own", "wb") as f:
    f.write(b"1")
os.chown("own", 1000, 1000)
os.chmod("own", 0o6755)
with open("rootw", "wb") as f:
    f.write(b"1")
os.chmod("rootw", 0o4755)
with open("rootw", "ab") as f:
    f.write(b"2")
show("root write keeps set-ID", lambda: oct(os.stat("rootw").st_mode))

# Reads and atime (relatime, the mount default on both sides): a read
# moves an atime older than mtime and leaves ctime; a second read does
# not move it; a read after a write moves it again; an O_NOATIME read
# never does. With passthrough these reads never reach the server.
OLD = 10**18  # 2001-09-09


def read_all(p, flags=0):
    fd = os.open(p, os.O_RDONLY | flags)
    try:
        return os.read(fd, 100)
    finally:
        os.close(fd)


def atimes(p, c0):
    """(atime moved off OLD, ctime still c0, atime >= mtime)."""
    s = os.stat(p)
    return s.st_atime_ns != OLD, s.st_ctime_ns == c0, s.st_atime_ns >= s.st_mtime_ns


with open("at", "wb") as f:
    f.write(b"abc")
os.utime("at", ns=(OLD, os.stat("at").st_mtime_ns))
c0 = os.stat("at").st_ctime_ns
show("atime before read", lambda: atimes("at", c0))
show("read", lambda: read_all("at"))
show("atime after read", lambda: atimes("at", c0))
a1 = os.stat("at").st_atime_ns
read_all("at")
show("atime after second read", lambda: os.stat("at").st_atime_ns == a1)
with open("at", "ab") as f:
    f.write(b"d")
c1 = os.stat("at").st_ctime_ns
# (Whether the write's mtime passed the read's atime depends on whether
# both fell in one clock tick: not compared.)
show("atime after write", lambda: atimes("at", c1)[:2])
# On a FUSE mount in no-open mode the file keeps its page cache across
# opens; the kernel drops it after a write when the attributes it gets
# back show a change, and now and then (by timing: two coarse-clock
# stamps in one tick, we think) it kept it, so the read was served from
# the cache and reached no server. Dropping the clean pages first makes
# the read reach the server every time (on the host's tmpfs the pages
# are the file, and the hint keeps them).
fd = os.open("at", os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(fd)
read_all("at")
show("atime after write then read", lambda: atimes("at", c1))
os.utime("at", ns=(OLD, os.stat("at").st_mtime_ns))
c2 = os.stat("at").st_ctime_ns
show("O_NOATIME read", lambda: read_all("at", os.O_NOATIME))
show("atime after O_NOATIME read", lambda: atimes("at", c2))
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    os.setgroups([])
    os.setresgid(1000, 1000, 1000)
    os.setresuid(1000, 1000, 1000)
    res = []

    def u(label, f):
        try:
            res.append(f"user {label}: {f()!r}")
        except OSError as e:
            res.append(f"user {label}: {errno.errorcode.get(e.errno, e.errno)}")

    for name in ("suid", "sgid", "sgid-noexec", "both", "own"):
        def w(name=name):
            fd = os.open(name, os.O_WRONLY | os.O_APPEND)
            try:
                return os.write(fd, b"2")
            finally:
                os.close(fd)
        u(f"write {name}", w)
        u(f"mode {name}", lambda name=name: oct(os.stat(name).st_mode))
        u(f"data {name}", lambda name=name: content(name))
    print("\n".join(res))
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
print("\n".join(out))
