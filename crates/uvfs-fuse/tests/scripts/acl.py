# POSIX ACLs on the mount against the host's tmpfs: set/get/list/remove
# (binary values built with struct), the mode an ACL sets, chmod,
# inheritance under a umask, and a second user's access through named
# entries. Runs in the directory it is given (cwd), as root.
import errno, os, struct, sys

A, DF = "system.posix_acl_access", "system.posix_acl_default"
X = 0xFFFFFFFF


def blob(entries, ver=2):
    return struct.pack("<I", ver) + b"".join(struct.pack("<HHI", *e) for e in entries)


def t(what, fn, *a, **k):
    try:
        r = fn(*a, **k)
        if isinstance(r, bytes):
            r = r.hex()
        print(what, sorted(r) if isinstance(r, list) else r)
    except OSError as e:
        print(what, errno.errorcode[e.errno])


def mode(p):
    return oct(os.stat(p).st_mode)


open("f", "w").close()
os.chmod("f", 0o640)
t("get-none", os.getxattr, "f", A)
t("set-equiv", os.setxattr, "f", A, blob([(1, 7, X), (4, 5, X), (0x20, 1, X)]))
t("mode", mode, "f")
t("get-equiv", os.getxattr, "f", A)
t("set-named", os.setxattr, "f", A,
  blob([(1, 6, X), (2, 6, 1001), (4, 4, X), (0x10, 6, X), (0x20, 0, X)]))
t("mode", mode, "f")
t("get", os.getxattr, "f", A)
t("list", os.listxattr, "f")
t("bad-version", os.setxattr, "f", A, blob([(1, 6, X), (4, 4, X), (0x20, 4, X)], 1))
t("no-mask", os.setxattr, "f", A, blob([(1, 6, X), (2, 6, 1001), (4, 4, X), (0x20, 0, X)]))
t("default-on-file", os.setxattr, "f", DF, blob([(1, 6, X), (4, 4, X), (0x20, 4, X)]))
open("g", "w").close()
os.chmod("g", 0o604)
t("set-g", os.setxattr, "g", A,
  blob([(1, 6, X), (2, 6, 1001), (4, 4, X), (0x10, 6, X), (0x20, 4, X)]))
t("chmod-g", os.chmod, "g", 0o604)
t("get-g", os.getxattr, "g", A)
os.mkdir("d", 0o755)
open("d/in", "w").close()
t("set-d", os.setxattr, "d", A,
  blob([(1, 7, X), (2, 0, 1001), (4, 5, X), (0x10, 5, X), (0x20, 5, X)]))
os.mkdir("inh", 0o777)
t("set-default", os.setxattr, "inh", DF,
  blob([(1, 7, X), (2, 5, 1001), (4, 5, X), (0x10, 7, X), (0x20, 0, X)]))
t("list-inh", os.listxattr, "inh")
os.umask(0o077)
open("inh/new", "w").close()
t("inherited-mode", mode, "inh/new")
t("inherited", os.getxattr, "inh/new", A)
os.mkdir("inh/sub", 0o777)
t("sub-mode", mode, "inh/sub")
t("sub-list", os.listxattr, "inh/sub")
os.mkdir("plain", 0o777)
open("plain/p", "w").close()
t("plain-mode", mode, "plain/p")
os.umask(0o022)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    os.setgroups([])
    os.setresgid(1001, 1001, 1001)
    os.setresuid(1001, 1001, 1001)
    res = []

    def u(label, f):
        try:
            res.append(f"user {label}: {f()!r}")
        except OSError as e:
            res.append(f"user {label}: {errno.errorcode.get(e.errno, e.errno)}")

    u("read named rw", lambda: open("f", "rb").read())
    u("write named rw", lambda: os.close(os.open("f", os.O_WRONLY)))
    u("access X named rw", lambda: os.access("f", os.X_OK))
    u("read mask --- other r", lambda: open("g", "rb").read())
    u("write mask --- other r", lambda: os.close(os.open("g", os.O_WRONLY)))
    u("stat through u:1001:---", lambda: os.stat("d/in").st_size)
    u("read inherited", lambda: open("inh/new", "rb").read())
    u("write inherited", lambda: os.close(os.open("inh/new", os.O_WRONLY)))
    u("set ACL not owner", lambda: os.setxattr("f", A, blob([(1, 6, X), (4, 4, X), (0x20, 4, X)])))
    u("remove ACL not owner", lambda: os.removexattr("f", A))
    print("\n".join(res))
    sys.stdout.flush()
    os._exit(0)
os.waitpid(pid, 0)
t("chmod", os.chmod, "f", 0o600)
t("get-after-chmod", os.getxattr, "f", A)
t("remove", os.removexattr, "f", A)
t("remove-again", os.removexattr, "f", A)
t("mode", mode, "f")
t("remove-d", os.removexattr, "d", A)
print("done")
