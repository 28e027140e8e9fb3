//! Temporary files under the prefix (issue 14, item 1): libc's `mkstemp`
//! family, `mkdtemp`, `mktemp` and `tmpfile` from a C program, and the
//! programs that edit files in place through them (`sed -i`, `perl -i`)
//! or through Python's `tempfile`, each compared with the same run on a
//! host directory. An in-place edit is checked by its result: a run that
//! exits 0 having changed nothing is the failure these tests exist for.

use std::path::Path;

mod support;
use support::cprog::{Scratch, compile_c, err, have, host_reference, out, run, shim_matches};

/// Every temp-file call of libc on `argv[1]`, printed with the names
/// reduced to what glibc promises (the template's fixed part, six letters
/// or digits where the `X`s were), plus modes, flags, contents and errno
/// of the failures.
const C_TEMP: &str = r#"
#define _GNU_SOURCE
#define _LARGEFILE64_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *D;
static char t[4096];

/* The template `pre` + XXXXXX + `suf` in D. */
static char *tmpl(const char *pre, const char *suf) {
    snprintf(t, sizeof t, "%s/%sXXXXXX%s", D, pre, suf);
    return t;
}

/* Whether `name` is D/pre + six [A-Za-z0-9] (not all X) + suf. */
static int shaped(const char *name, const char *pre, const char *suf) {
    char want[4096];
    snprintf(want, sizeof want, "%s/%s", D, pre);
    size_t a = strlen(want), n = strlen(name), s = strlen(suf);
    if (n != a + 6 + s || strncmp(name, want, a) || strcmp(name + a + 6, suf)) return 0;
    int xs = 0;
    for (int i = 0; i < 6; i++) {
        if (!isalnum((unsigned char)name[a + i])) return 0;
        xs += name[a + i] == 'X';
    }
    return xs < 6;
}

/* A file made by the family: its shape, type, mode, flags, then data
   written and read back through it; renamed to D/kept-<tag>. */
static void file(const char *tag, int fd, const char *pre, const char *suf) {
    if (fd < 0) { printf("%s: failed errno %d\n", tag, errno); return; }
    struct stat st;
    fstat(fd, &st);
    int fl = fcntl(fd, F_GETFL), fdf = fcntl(fd, F_GETFD);
    char buf[32] = {0};
    int w = write(fd, tag, strlen(tag));
    lseek(fd, 0, SEEK_SET);
    int r = read(fd, buf, sizeof buf - 1);
    printf("%s: shaped %d reg %d mode %o acc %d append %d cloexec %d wrote %d read %d '%s'\n",
           tag, shaped(t, pre, suf), S_ISREG(st.st_mode), st.st_mode & 07777,
           fl & O_ACCMODE, !!(fl & O_APPEND), !!(fdf & FD_CLOEXEC), w, r, buf);
    char kept[4096];
    snprintf(kept, sizeof kept, "%s/kept-%s", D, tag);
    if (rename(t, kept)) printf("%s: rename errno %d\n", tag, errno);
    close(fd);
}

static void fails(const char *tag, int r, const char *before) {
    printf("%s: %d errno %d template %s\n", tag, r, r < 0 ? errno : 0,
           strcmp(before, t) ? "changed" : "unchanged");
}

int main(int argc, char **argv) {
    D = argv[1];
    umask(022);
    file("mkstemp", mkstemp(tmpl("ms-", "")), "ms-", "");
    file("mkstemp64", mkstemp64(tmpl("ms64-", "")), "ms64-", "");
    file("mkostemp", mkostemp(tmpl("mo-", ""), O_APPEND | O_CLOEXEC | O_WRONLY), "mo-", "");
    file("mkostemp64", mkostemp64(tmpl("mo64-", ""), O_CLOEXEC), "mo64-", "");
    file("mkstemps", mkstemps(tmpl("mss-", ".txt"), 4), "mss-", ".txt");
    file("mkstemps64", mkstemps64(tmpl("mss64-", ".c"), 2), "mss64-", ".c");
    file("mkostemps", mkostemps(tmpl("mos-", "-end"), 4, O_APPEND), "mos-", "-end");
    file("mkostemps64", mkostemps64(tmpl("mos64-", "x"), 1, 0), "mos64-", "x");
    /* More X's than six: the last six are replaced. */
    snprintf(t, sizeof t, "%s/XXXXXXXXXX", D);
    int fd = mkstemp(t);
    printf("long X run: %d first four kept %d\n", fd >= 0, !strncmp(t + strlen(D) + 1, "XXXX", 4));
    if (fd >= 0) { unlink(t); close(fd); }

    char *dp = mkdtemp(tmpl("dir-", ""));
    struct stat st;
    if (!dp) printf("mkdtemp: failed errno %d\n", errno);
    else {
        stat(dp, &st);
        printf("mkdtemp: same pointer %d shaped %d dir %d mode %o\n", dp == t, shaped(dp, "dir-", ""),
               S_ISDIR(st.st_mode), st.st_mode & 07777);
        char in[4096], kept[4096];
        snprintf(in, sizeof in, "%s/inside", dp);
        close(open(in, O_CREAT | O_WRONLY, 0644));
        snprintf(kept, sizeof kept, "%s/kept-dir", D);
        printf("mkdtemp: rename %d\n", rename(dp, kept));
    }

    char *mp = mktemp(tmpl("mt-", ""));
    errno = 0;
    int ls = lstat(mp, &st);
    printf("mktemp: same pointer %d shaped %d lstat %d errno %d\n", mp == t, shaped(mp, "mt-", ""), ls, errno);

    /* Many names from one template: every one made, all distinct. */
    char names[300][4096];
    int made = 0, distinct = 1;
    for (int i = 0; i < 300; i++) {
        int f = mkstemp(tmpl("many-", ""));
        if (f < 0) break;
        close(f);
        strcpy(names[made++], t);
        for (int j = 0; j < made - 1; j++) distinct &= strcmp(names[j], t) != 0;
    }
    int gone = 0;
    for (int i = 0; i < made; i++) gone += unlink(names[i]) == 0;
    printf("300 from one template: made %d distinct %d unlinked %d\n", made, distinct, gone);

    /* Failures, with glibc's errno and its rule on the template. */
    char before[4096];
    snprintf(t, sizeof t, "%s/noX", D); strcpy(before, t);
    fails("mkstemp no X", mkstemp(t), before);
    snprintf(t, sizeof t, "%s/fiveXXXXX", D); strcpy(before, t);
    fails("mkstemp five X", mkstemp(t), before);
    snprintf(t, sizeof t, "%s/aXXXXXXb", D); strcpy(before, t);
    fails("mkstemp X not last", mkstemp(t), before);
    tmpl("s-", ".txt"); strcpy(before, t);
    fails("mkstemps short suffix", mkstemps(t, 3), before);
    fails("mkstemps long suffix", mkstemps(t, 5), before);
    fails("mkstemps negative suffix", mkstemps(t, -1), before);
    fails("mkstemps huge suffix", mkstemps(t, 100000), before);
    fails("mkostemps negative suffix", mkostemps(t, -2, 0), before);
    snprintf(t, sizeof t, "XXXXXX"); strcpy(before, t);
    fails("mkstemps suffix eats X", mkstemps(t, 1), before);
    snprintf(t, sizeof t, "%s/missing/aXXXXXX", D); strcpy(before, t);
    fails("mkstemp missing dir", mkstemp(t), before);
    snprintf(t, sizeof t, "%s/kept-mkstemp/aXXXXXX", D); strcpy(before, t);
    fails("mkstemp under a file", mkstemp(t), before);
    snprintf(t, sizeof t, "%s/missing/XXXXXX", D); strcpy(before, t);
    errno = 0;
    dp = mkdtemp(t);
    printf("mkdtemp missing dir: %s errno %d\n", dp ? "made" : "NULL", errno);
    snprintf(t, sizeof t, "%s/dnoX", D); strcpy(before, t);
    errno = 0;
    dp = mkdtemp(t);
    printf("mkdtemp no X: %s errno %d template %s\n", dp ? "made" : "NULL", errno,
           strcmp(before, t) ? "changed" : "unchanged");
    snprintf(t, sizeof t, "%s/mnoX", D);
    errno = 0;
    mp = mktemp(t);
    printf("mktemp no X: same pointer %d emptied %d errno %d\n", mp == t, t[0] == 0, errno);

    /* tmpfile: an unnamed file in /tmp's file system. */
    FILE *f = tmpfile();
    if (!f) printf("tmpfile: failed errno %d\n", errno);
    else {
        char line[64] = {0};
        fputs("tmpfile line\n", f);
        rewind(f);
        fgets(line, sizeof line, f);
        struct stat fs, ts;
        fstat(fileno(f), &fs);
        stat("/tmp", &ts);
        printf("tmpfile: read '%.12s' links %d mode %o in /tmp's fs %d\n", line, (int)fs.st_nlink,
               fs.st_mode & 07777, fs.st_dev == ts.st_dev);
        fclose(f);
    }
    FILE *f64 = tmpfile64();
    printf("tmpfile64: %s\n", f64 ? "made" : "failed");
    if (f64) fclose(f64);

    /* What is left in D, sorted. */
    struct dirent **es;
    int n = scandir(D, &es, 0, alphasort);
    printf("left:");
    for (int i = 0; i < n; i++) {
        if (es[i]->d_name[0] != '.') printf(" %s", es[i]->d_name);
        free(es[i]);
    }
    printf("\n");
    return 0;
}
"#;

/// The C program on a host directory, then under the shim on the uvfs root
/// (`/uvfs`) and, with `UVFS_PREFIX=/tmp`, on a uvfs that `tmpfile` itself
/// reaches: the same output each time, and the uvfs tree left is the host's.
#[test]
fn libc_temp_family() {
    let dir = Scratch::new("temp-family");
    let Some(bin) = compile_c(&dir, C_TEMP) else {
        return;
    };
    let host_d = dir.join("host");
    std::fs::create_dir(&host_d).unwrap();
    // No path is printed: the outputs compare as they are.
    let host_out = host_reference(
        &[&bin, host_d.to_str().unwrap()],
        &[
            "mkstemp: shaped 1 reg 1 mode 600 acc 2 append 0 cloexec 0 wrote 7 read 7 'mkstemp'",
            "mkostemp: shaped 1 reg 1 mode 600 acc 2 append 1 cloexec 1",
            "mkstemps: shaped 1",
            "mkdtemp: same pointer 1 shaped 1 dir 1 mode 700",
            "300 from one template: made 300 distinct 1 unlinked 300",
            "mkstemp no X: -1 errno 22 template unchanged",
            "mkstemp missing dir: -1 errno 2",
            "tmpfile: read 'tmpfile line' links 0 mode 600 in /tmp's fs 1",
        ],
    );
    for (prefix, d) in [("/uvfs", "/uvfs"), ("/tmp", "/tmp")] {
        let dump = dir.join(&format!("dump{}", prefix.replace('/', "-")));
        shim_matches(
            &[&bin, d],
            &[
                ("UVFS_PREFIX", prefix),
                ("UVFS_DUMP", dump.to_str().unwrap()),
            ],
            &host_out,
            &format!("prefix {prefix}"),
        );
        // The files the program kept are in uvfs with their contents.
        for tag in ["mkstemp", "mkostemps", "mkstemps64"] {
            assert_eq!(
                std::fs::read_to_string(dump.join(format!("kept-{tag}"))).unwrap(),
                tag
            );
        }
        assert!(dump.join("kept-dir/inside").is_file());
    }
}

/// Runs `cmd` (`{D}` standing for the directory) on a host directory and
/// under the shim on a uvfs seeded with the same file `name` holding
/// `input`: both exit 0, leave `name` holding `want`, and leave nothing
/// else behind.
fn edit_in_place(tag: &str, cmd: &[&str], name: &str, input: &str, want: &str) {
    if !have(cmd[0]) {
        return;
    }
    let dir = Scratch::new(tag);
    let seed = dir.join("seed");
    std::fs::create_dir(&seed).unwrap();
    std::fs::write(seed.join(name), input).unwrap();
    let host_d = dir.join("host");
    std::fs::create_dir(&host_d).unwrap();
    std::fs::write(host_d.join(name), input).unwrap();
    let dump = dir.join("dump");
    let with = |d: &str| -> Vec<String> { cmd.iter().map(|a| a.replace("{D}", d)).collect() };
    let host_cmd = with(host_d.to_str().unwrap());
    let host_args: Vec<&str> = host_cmd.iter().map(String::as_str).collect();
    let host = run(&host_args, false, &[]);
    let shim_cmd = with("/uvfs");
    let shim_args: Vec<&str> = shim_cmd.iter().map(String::as_str).collect();
    let shim = run(
        &shim_args,
        true,
        &[
            ("UVFS_PREFIX", "/uvfs"),
            ("UVFS_SEED", seed.to_str().unwrap()),
            ("UVFS_DUMP", dump.to_str().unwrap()),
        ],
    );
    let listing = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    assert!(host.status.success(), "{tag} on the host: {}", err(&host));
    assert_eq!(
        std::fs::read_to_string(host_d.join(name)).unwrap(),
        want,
        "{tag} on the host"
    );
    assert!(
        shim.status.success(),
        "{tag} under the shim: {}",
        err(&shim)
    );
    assert_eq!(
        out(&shim).replace("/uvfs", "{D}"),
        out(&host).replace(host_d.to_str().unwrap(), "{D}")
    );
    assert_eq!(
        std::fs::read_to_string(dump.join(name)).unwrap(),
        want,
        "{tag} under the shim left the file unedited; stderr:\n{}",
        err(&shim)
    );
    assert_eq!(listing(&dump), listing(&host_d), "{tag}: files left");
    eprintln!("ok: {tag}");
}

#[test]
fn sed_in_place() {
    edit_in_place(
        "sed-i",
        &["sed", "-i", "s/apple/APPLE/", "{D}/fruit"],
        "fruit",
        "pear\napple\nfig\n",
        "pear\nAPPLE\nfig\n",
    );
    // With a backup suffix: the original is kept beside the edit.
    edit_in_place(
        "sed-i-bak",
        &["sed", "-i.bak", "-e", "1d", "{D}/fruit"],
        "fruit",
        "pear\napple\n",
        "apple\n",
    );
}

#[test]
fn perl_in_place() {
    edit_in_place(
        "perl-i",
        &["perl", "-i", "-pe", "s/(\\d+)/$1*2/e", "{D}/nums"],
        "nums",
        "1\n21\n300\n",
        "2\n42\n600\n",
    );
}

#[test]
fn python_tempfile_mkstemp() {
    let py = "import os, sys, tempfile\n\
              d = sys.argv[1]\n\
              fd, n = tempfile.mkstemp(dir=d, prefix='p-', suffix='.tmp')\n\
              os.write(fd, b'from python\\n')\n\
              os.close(fd)\n\
              print(os.path.dirname(n) == d, os.path.basename(n).startswith('p-'), n.endswith('.tmp'))\n\
              os.replace(n, os.path.join(d, 'out'))\n";
    if !have("python3") {
        return;
    }
    // The interpreter itself, not a wrapper script (pyenv's is a shell
    // script, which would only waste the preload).
    let exe = out(&run(
        &["python3", "-c", "import sys; print(sys.executable)"],
        false,
        &[],
    ));
    edit_in_place(
        "python-mkstemp",
        &[exe.trim(), "-c", py, "{D}"],
        "out",
        "old\n",
        "from python\n",
    );
}
