//! Real programs on a uvfs mount, each run compared with the same run in a
//! directory on the host's tmpfs: git, make -j2 (then the built binary
//! run from the mount), tar, sqlite3 in WAL mode, python's tempfile and
//! shutil, sed -i, a pipeline across processes, two processes writing and
//! reading the same files at once, rsync in and out, and CPython's own
//! test suites for the file-system modules. Outputs avoid
//! what legitimately differs (inode numbers, times of now, random names).
//! A program missing from the machine fails the test (the CI installs
//! them). Each comparison runs twice: on a plain mount and on one with
//! `--no-open`. Skips (passes with a message) without /dev/fuse or root.

mod support;

use support::*;

/// Runs `script` on the host's tmpfs and on a mount, then again on a
/// mount in no-open mode (`--no-open`: no OPEN or OPENDIR requests, I/O
/// through per-inode handles, the kernel alone checking opens), and on a
/// mount with the writeback cache (`--writeback`).
fn same(tag: &str, script: &str) {
    skip_unless_fuse!();
    for (tag, args) in [
        (tag.to_string(), &[][..]),
        (format!("{tag}-noopen"), &["--no-open"]),
        (format!("{tag}-wb"), &["--writeback"]),
    ] {
        let (host, mount) = host_and_mount_with(&tag, args, script);
        assert!(
            host.contains("--- exit 0"),
            "{tag}: the host run failed:\n{host}"
        );
        assert_same(&tag, &host, &mount);
    }
}

#[test]
fn git() {
    same(
        "git",
        r#"set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
  GIT_COMMITTER_EMAIL=t@example.com GIT_AUTHOR_DATE=2020-01-01T00:00:00Z \
  GIT_COMMITTER_DATE=2020-01-01T00:00:00Z GIT_CONFIG_NOSYSTEM=1 HOME=$PWD
git init -q -b main repo && cd repo
for i in $(seq 1 60); do echo "line $i" > f$i.txt; done
mkdir -p sub/deep && echo x > sub/deep/y && ln -s f1.txt link
git add . && git commit -q -m first
echo changed >> f1.txt && git rm -q f2.txt && echo new > new.txt && chmod +x f3.txt
git status --porcelain
git add -A && git commit -q -m second
git log --format='%H %s'
git gc -q --aggressive
git fsck --strict --no-progress
git status --porcelain
git count-objects -v | grep -E '^(count|in-pack|packs)'
git show --stat --format=%s HEAD | tail -3
git checkout -q HEAD~1 -- f2.txt && cat f2.txt && git stash -q && git stash list | wc -l
"#,
    );
}

#[test]
fn make_j2_then_run_the_binary_from_the_mount() {
    same(
        "make",
        r#"set -e
mkdir proj && cd proj
cat > util.h <<'EOF'
int triangle(int n);
EOF
cat > util.c <<'EOF'
#include "util.h"
int triangle(int n) { return n <= 0 ? 0 : n + triangle(n - 1); }
EOF
cat > main.c <<'EOF'
#include <stdio.h>
#include "util.h"
int main(int argc, char **argv) { printf("%d %s\n", triangle(100), argc > 1 ? argv[1] : "-"); return 3; }
EOF
cat > Makefile <<'EOF'
prog: main.o util.o
	cc -o $@ main.o util.o
%.o: %.c util.h
	cc -O1 -c $<
EOF
make -j2 -s
ls
set +e
./prog hello; echo "exit $?"
"$PWD/prog"; echo "exit $?"
make -q; echo "up to date: $?"
touch util.h && make -q; echo "after touch: $?"
make -s -j2 && ./prog again; echo "exit $?"
"#,
    );
}

#[test]
fn tar_c_and_x() {
    same(
        "tar",
        r#"set -e
mkdir -p t/a/b t/c
for i in $(seq 1 40); do head -c $((i * 997)) /dev/zero | tr '\0' "x" > t/a/f$i; done
seq 1 5000 > t/c/numbers && ln -s ../../c/numbers t/a/b/link && ln t/c/numbers t/c/hard
chmod 600 t/a/f1 && chmod 755 t/c
touch -d @1000000000 t/a/f2 t/a/b
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf t.tar t
md5sum t.tar
mkdir x && tar -xf t.tar -C x && diff -r t x/t && echo same
find x -printf '%P %y %m %s %n %l\n' | sort
tar -tvf t.tar | awk '{print $1, $3, $6}' | head -5
gzip -c t.tar > t.tgz && mkdir y && tar -xzf t.tgz -C y && diff -r t y/t && echo same again
"#,
    );
}

#[test]
fn sqlite3_wal() {
    same(
        "sqlite",
        r#"set -e
sqlite3 db.sqlite "PRAGMA journal_mode=WAL; CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<20000)
INSERT INTO t SELECT x, 'row' || x FROM c; SELECT count(*), sum(a) FROM t;"
sqlite3 db.sqlite "PRAGMA journal_mode; BEGIN; UPDATE t SET b = 'changed' WHERE a % 7 = 0; COMMIT;
SELECT count(*) FROM t WHERE b = 'changed'; PRAGMA integrity_check;"
# A reader while a writer holds the WAL open.
(sqlite3 db.sqlite "BEGIN IMMEDIATE; INSERT INTO t(b) VALUES ('late'); SELECT count(*) FROM t;"; \
 sqlite3 db.sqlite "SELECT max(a), count(*) FROM t; PRAGMA wal_checkpoint(TRUNCATE);")
sqlite3 db.sqlite "VACUUM; SELECT count(*) FROM t;"
ls
"#,
    );
}

#[test]
fn python_tempfile_and_shutil() {
    same(
        "python",
        r#"set -e
python3 - <<'EOF'
import os, shutil, tempfile
d = tempfile.mkdtemp(dir=".")
with tempfile.NamedTemporaryFile(dir=d, delete=False) as f:
    f.write(b"x" * 100000)
    name = f.name
os.makedirs(os.path.join(d, "a/b/c"))
shutil.copy2(name, os.path.join(d, "a/b/c/copy"))
os.symlink("c/copy", os.path.join(d, "a/b/link"))
shutil.copytree(d, "tree2", symlinks=True)
shutil.move("tree2", "tree3")
files = sorted(
    (os.path.relpath(r, "tree3").count("/"), os.path.getsize(os.path.join(r, f)))
    for r, ds, fs in os.walk("tree3") for f in fs)
print(files)
with tempfile.TemporaryFile(dir=".") as t:
    t.write(b"abc"); t.seek(0); print(t.read())
with tempfile.SpooledTemporaryFile(max_size=10, dir=".") as t:
    t.write(b"0123456789abcdef"); t.seek(4); print(t.read(4))
st1, st2 = os.stat(name), os.stat(os.path.join(d, "a/b/c/copy"))
print(st1.st_mtime_ns == st2.st_mtime_ns, oct(st2.st_mode))
shutil.make_archive("arch", "zip", "tree3")
print(shutil.disk_usage(".").total >= 0)
shutil.rmtree(d); shutil.rmtree("tree3")
print(sorted(os.listdir(".")))
EOF
"#,
    );
}

#[test]
fn sed_i_and_a_pipeline() {
    same(
        "sed",
        r#"set -e
seq 1 3000 > s.txt
sed -i 's/1/one/g; /5$/d' s.txt
md5sum s.txt && ls
sed -i.bak -e '1i header' s.txt && head -2 s.txt && ls
seq 1 200000 > a
sort -rn a | tee b | awk '{s += $1} END {print s}'
head -3 b && wc -l < b
cat a b | sort -n | uniq -c | awk '$1 != 2' | wc -l
grep -c 7 a | xargs -I{} sh -c 'echo {} > count' && cat count
"#,
    );
}

#[test]
fn two_processes_see_each_others_writes() {
    same(
        "pingpong",
        r#"set -e
cat > pp.py <<'EOF'
import os, sys, time
me, other, n = sys.argv[1], sys.argv[2], 300
fd = os.open(me, os.O_CREAT | os.O_WRONLY | os.O_APPEND, 0o644)
for i in range(n):
    os.write(fd, f"{me} {i}\n".encode())
    # Wait (the test's hang bound ends a wait that never ends) until the
    # other process's line i is visible.
    while True:
        try:
            with open(other) as f:
                k = f.read().count("\n")
        except FileNotFoundError:
            k = 0
        if k >= i + 1:
            break
        time.sleep(0.0002)
os.close(fd)
data = open(other).read().splitlines()
print(me, "saw", len(data), data == [f"{other} {i}" for i in range(n)])
EOF
(python3 pp.py A B > outA &
 python3 pp.py B A > outB
 wait)
cat outA outB
md5sum A B
# A writer through mmap and a reader through read(2), in two processes.
python3 - <<'EOF'
import mmap, os, subprocess, sys
fd = os.open("m", os.O_CREAT | os.O_RDWR, 0o644)
os.ftruncate(fd, 1 << 16)
mm = mmap.mmap(fd, 1 << 16)
mm[100:112] = b"through mmap"
mm.flush()
r = subprocess.run([sys.executable, "-c", "import os; f=os.open('m', os.O_RDONLY); print(os.pread(f, 12, 100))"],
                   capture_output=True, text=True)
print(r.stdout.strip())
with open("m", "r+b") as f:
    f.seek(200); f.write(b"through write")
print(bytes(mm[200:213]))
EOF
"#,
    );
}

#[test]
fn rsync_in_and_out() {
    skip_unless_fuse!();
    let src = TempDir::new_in("/dev/shm", "rsync-src");
    let (code, _, err) = sh(
        src.path(),
        "mkdir -p a/b c && seq 1 9999 > a/n && head -c 123457 /dev/urandom > c/r \
         && ln -s ../a/n c/l && ln a/n a/hard && chmod 640 a/n && chmod 711 c \
         && touch -d @1500000000 a/b c/r && touch -h -d @1400000000 c/l",
    );
    assert_eq!(code, 0, "{err}");
    same(
        "rsync",
        &format!(
            r#"set -e
S={src}
OUT=$(mktemp -d /dev/shm/uvfs-fuse-rsync-out.XXXXXX)
rsync -aH "$S"/ in/
rsync -aH in/ "$OUT"/
diff -r "$S" "$OUT" && echo same
# Directory times are left out: rsync -H links after it set them.
L="find . ( -type d -printf %P_%y_%m\\n ) -o -printf %P_%y_%m_%s_%n_%T@_%l\\n"
(cd "$S" && $L | sort) > want
(cd "$OUT" && $L | sort) > got
(cd in && $L | sort) > mid
cp want want2
diff want got && diff want2 mid && echo attributes kept && wc -l < want
rm -rf "$OUT"
rsync -aH --delete in/ in2/ && rm in/a/n && rsync -aH --delete in/ in2/ && ls in2/a
"#,
            src = src.path().display()
        ),
    );
}

/// CPython's own test suites for the file-system modules (os, shutil,
/// tempfile, posix, glob, fileio, stat, pathlib: over a thousand tests
/// written by others), run in the mount and in the host directory: the
/// same failures (none, where this was written). Needs the distribution
/// interpreter's `test` package (`libpython3.X-testsuite`, which the CI
/// installs).
#[test]
fn cpython_file_system_suites() {
    skip_unless_fuse!();
    let (host, mount) = host_and_mount(
        "cpython",
        r#"/usr/bin/python3 -c 'import test.libregrtest.main, test.test_os' || exit 1
mkdir tmp
TMPDIR=$PWD/tmp /usr/bin/python3 -m test -W --tempdir "$PWD/tmp" test_os test_shutil \
  test_tempfile test_posix test_glob test_fileio test_stat test_pathlib > log 2>&1
echo "regrtest exit $?"
grep -E '^(FAIL|ERROR):|Tests result' log | sort
"#,
    );
    // The host run is the reference: it must have run the suites.
    assert!(
        host.contains("regrtest exit 0") && host.contains("Tests result: SUCCESS"),
        "the host run of CPython's suites failed:\n{host}"
    );
    assert_same("cpython", &host, &mount);
}
