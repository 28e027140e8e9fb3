"""Run in the root of an 8 MiB mount (a host `mount -t tmpfs -o size=8M`
or `uvfs mount --size 8M`): fills it until ENOSPC, tries what needs a page
when it is full, frees and fills again, then writes a 16 MiB shared
mapping until the fault past the limit. Prints what a program sees; the
test compares the host's output with the mount's."""
import os, errno, mmap, time

def sfs():
    s = os.statvfs('.')
    return 'bsize %d frsize %d blocks %d bfree %d bavail %d' % (
        s.f_bsize, s.f_frsize, s.f_blocks, s.f_bfree, s.f_bavail)

def st(name):
    s = os.stat(name)
    return 'size %d blocks %d' % (s.st_size, s.st_blocks)

def fill(name, chunk=100000):
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    total, calls = 0, []
    while True:
        try:
            n = os.write(fd, b'x' * chunk)
        except OSError as e:
            os.close(fd)
            return 'wrote %d (last writes %s) then %s' % (
                total, calls[-2:], errno.errorcode[e.errno])
        total += n
        calls.append(n)

def on(name, flags, f):
    fd = os.open(name, flags, 0o644)
    try:
        return f(fd)
    finally:
        os.close(fd)

def err(f):
    try:
        f()
        return 'ok'
    except OSError as e:
        return errno.errorcode[e.errno]

def freed():
    # The space of an unlinked file comes back when the kernel's inode
    # goes (on the mount: its FORGET reaches the server). Waits for the
    # event with a bound; the figures printed decide.
    for _ in range(1000):
        s = os.statvfs('.')
        if s.f_bfree == s.f_blocks:
            return
        time.sleep(0.01)

print('empty:', sfs())
print('fill a:', fill('a'), st('a'))
print('full:', sfs())
print('append 10:', err(lambda: on('a', os.O_WRONLY | os.O_APPEND, lambda fd: os.write(fd, b'y' * 10))))
print('fallocate b:', err(lambda: on('b', os.O_RDWR | os.O_CREAT, lambda fd: os.posix_fallocate(fd, 0, 4096))), st('b'))
print('long symlink:', err(lambda: os.symlink('t' * 200, 'l')))
print('short symlink:', err(lambda: os.symlink('t', 's')))
print('mkdir:', err(lambda: os.mkdir('d')))
os.truncate('a', 4096 * 100)
print('truncated:', st('a'), sfs())
print('fallocate c 8M:', err(lambda: on('c', os.O_RDWR | os.O_CREAT, lambda fd: os.posix_fallocate(fd, 0, 8 << 20))), st('c'), sfs())
print('fallocate c 2M:', err(lambda: on('c', os.O_RDWR | os.O_CREAT, lambda fd: os.posix_fallocate(fd, 0, 2 << 20))), st('c'), sfs())
for n in ('a', 'b', 'c', 's'):
    os.unlink(n)
os.rmdir('d')
freed()
print('deleted:', sfs())
print('fill a again:', fill('a', 1 << 20), st('a'))
os.unlink('a')
freed()
print('deleted again:', sfs())
# A shared mapping of a 16M file on the 8M mount: the fault on the first
# page past the limit is a SIGBUS.
fd = os.open('m', os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 16 << 20)
mm = mmap.mmap(fd, 16 << 20)
pid = os.fork()
if pid == 0:
    for i in range(0, 16 << 20, 4096):
        mm[i] = 1
    os._exit(0)
_, status = os.waitpid(pid, 0)
print('mmap writer:', 'signal %d' % os.WTERMSIG(status) if os.WIFSIGNALED(status) else 'exit %d' % os.WEXITSTATUS(status))
held = os.stat('m').st_blocks // 8
print('mapped file:', st('m'), sfs(), 'first and last page held', mm[0], mm[(held - 1) * 4096])
