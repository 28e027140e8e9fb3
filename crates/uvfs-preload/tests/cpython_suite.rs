//! CPython's own test suite for the file-system modules, run under the
//! shim and compared with the same run on the host's tmpfs: over a
//! thousand tests written by others (os, shutil, tempfile, posix, glob,
//! io, fileio, stat, pathlib, fcntl, mmap, tarfile, zipfile, dbm,
//! mailbox, shelve, zipimport, ...), each
//! of them a check of POSIX behaviour that real programs rely on. The
//! interpreter is the distribution's (`/usr/bin/python3` with its `test`
//! package, `libpython3.X-testsuite` on Debian; `.ci/run` installs it);
//! without it the test is skipped with a message.
//!
//! Two runs under the shim: the interpreter as the first process of a
//! tree (uvfs in its own memory until its first child, then the tree's
//! FUSE mount), every module; and with `UVFS_TREE=0` (uvfs in the
//! process's memory throughout) the modules whose tests make no child
//! that must see the parent's files. Each must fail exactly the tests the
//! host run fails (none, on the machines this was written on).
//!
//! It found: absolute symlinks in uvfs read from uvfs's root instead of
//! the host's (test_os's walk tests), and `ttyname`/`tcgetpgrp` on a
//! closed fd answering ENOTTY (the placeholder cache's `/dev/null`) and
//! `F_NOTIFY` refused (test_os, test_fcntl).

mod support;
use support::cprog::{Scratch, err, out, run};

use std::collections::BTreeSet;

const PY: &str = "/usr/bin/python3";

/// Every module; those that also run with `UVFS_TREE=0`.
const ALL: &[&str] = &[
    "test_os",
    "test_shutil",
    "test_tempfile",
    "test_posix",
    "test_glob",
    "test_fileio",
    "test_stat",
    "test_pathlib",
    "test_fcntl",
    "test_mmap",
    "test_genericpath",
    "test_posixpath",
    "test_filecmp",
    "test_tarfile",
    "test_zipfile",
    "test_io",
    "test_dbm",
    "test_mailbox",
    "test_shelve",
    "test_zipimport",
    "test_fileinput",
    "test_linecache",
    "test_py_compile",
    "test_gzip",
    "test_csv",
];
const IN_PROCESS: &[&str] = &[
    "test_fileio",
    "test_stat",
    "test_mmap",
    "test_genericpath",
    "test_posixpath",
    "test_filecmp",
    "test_glob",
    "test_io",
    "test_fcntl",
    "test_dbm",
    "test_shelve",
    "test_zipimport",
    "test_fileinput",
    "test_linecache",
    "test_csv",
];

/// Runs regrtest in `dir` (made by the wrapper, so that it may lie under
/// the prefix) on `mods`: the failed and erred test ids, and whether the
/// summary says SUCCESS. A hang fails through `timeout`.
fn regrtest(
    dir: &str,
    mods: &[&str],
    shim: bool,
    env: &[(&str, &str)],
) -> (BTreeSet<String>, bool) {
    let wrapper = "import os, sys\n\
                   d = sys.argv[1]\n\
                   os.makedirs(d + '/tmp')\n\
                   os.chdir(d)\n\
                   os.environ['TMPDIR'] = d + '/tmp'\n\
                   from test.libregrtest.main import main\n\
                   sys.argv = ['regrtest', '-W', '--tempdir', d + '/tmp'] + sys.argv[2:]\n\
                   main()\n";
    let mut args = vec!["timeout", "1500", PY, "-c", wrapper, dir];
    args.extend_from_slice(mods);
    let o = run(&args, shim, env);
    assert_ne!(o.status.code(), Some(124), "regrtest hung ({dir})");
    let text = format!("{}{}", out(&o), err(&o));
    let failed: BTreeSet<String> = text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("FAIL: ")
                .or_else(|| l.strip_prefix("ERROR: "))
                .or_else(|| l.strip_prefix("test ").filter(|r| r.contains(" crashed")))
        })
        .map(str::to_owned)
        .collect();
    let success = text.contains("Tests result: SUCCESS") || text.contains("Result: SUCCESS");
    assert!(
        success || !failed.is_empty(),
        "regrtest in {dir} neither passed nor named a failure:\n{text}"
    );
    (failed, success)
}

fn have_suite() -> bool {
    let o = run(
        &[PY, "-c", "import test.libregrtest.main, test.test_os"],
        false,
        &[],
    );
    if !o.status.success() {
        eprintln!("SKIP: {PY} has no `test` package (libpython3.X-testsuite)");
        return false;
    }
    true
}

#[test]
fn cpython_file_system_suites_match_the_host() {
    if !have_suite() {
        return;
    }
    let dir = Scratch::new("cpython");
    let host_dir = format!("{}/host", dir.as_str());
    let (host_failed, host_ok) = regrtest(&host_dir, ALL, false, &[]);
    let (shim_failed, shim_ok) = regrtest("/uvfs/cpython", ALL, true, &[("UVFS_PREFIX", "/uvfs")]);
    assert_eq!(shim_failed, host_failed, "under the shim (a process tree)");
    assert_eq!(shim_ok, host_ok);
    let (host_failed, _) = regrtest(&format!("{}/host1", dir.as_str()), IN_PROCESS, false, &[]);
    let (one_failed, _) = regrtest(
        "/uvfs/cpython",
        IN_PROCESS,
        true,
        &[("UVFS_PREFIX", "/uvfs"), ("UVFS_TREE", "0")],
    );
    assert_eq!(one_failed, host_failed, "under the shim (one process)");
    assert!(
        !std::path::Path::new("/uvfs/cpython").exists(),
        "reached the host"
    );
}
