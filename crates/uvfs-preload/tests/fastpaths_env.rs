//! `UVFS_FASTPATHS`: the shim's uvfs built with the fast paths a spec names
//! (as `uvfs-bench run --fastpaths`), so a real program can A/B a switch.
//! A spec that does not parse ends every process at load, before `main`,
//! with exit status 2 and one line on stderr naming the variable: never a
//! run of the default fast paths passed off as the asked-for ones.

mod support;
use support::cprog::{Scratch, err, out, run};

/// A shell that makes, lists, reads and removes files under the prefix.
fn script(prefix: &str) -> String {
    format!(
        "set -e; mkdir -p {p}/a/b/c; for i in 1 2 3; do echo $i > {p}/a/b/c/f$i; done; \
         rm {p}/a/b/c/f2; ls {p}/a/b/c; cat {p}/a/b/c/f1 {p}/a/b/c/f3; \
         mv {p}/a/b/c/f3 {p}/a/f; stat -c '%s %F' {p}/a/f",
        p = prefix
    )
}

#[test]
fn a_bad_spec_ends_the_program_at_load() {
    for spec in ["bogus", "nope=on", "path_cache=maybe", "seeds,path_cache"] {
        let o = run(&["/bin/true"], true, &[("UVFS_FASTPATHS", spec)]);
        assert_eq!(o.status.code(), Some(2), "{spec}: {o:?}");
        let e = err(&o);
        assert!(
            e.contains("UVFS_FASTPATHS") && e.contains(spec),
            "{spec}: stderr {e:?}"
        );
        assert_eq!(e.lines().count(), 1, "{spec}: stderr {e:?}");
    }
}

#[test]
fn a_good_spec_runs_as_the_default_does() {
    let dir = Scratch::new("fastpaths-env");
    let prefix = dir.join("uvfs");
    let prefix = prefix.to_str().unwrap();
    let sh = script(prefix);
    let default = run(&["/bin/sh", "-c", &sh], true, &[("UVFS_PREFIX", prefix)]);
    assert!(default.status.success(), "{}", err(&default));
    assert_eq!(out(&default), "f1\nf3\n1\n3\n2 regular file\n");
    for spec in [
        "stock",
        "seeds",
        "seeds,path_cache_dir_gen=off",
        "seeds,path_cache_parent=off,path_cache=off",
        " stock , path_cache=on ",
    ] {
        let o = run(
            &["/bin/sh", "-c", &sh],
            true,
            &[("UVFS_PREFIX", prefix), ("UVFS_FASTPATHS", spec)],
        );
        assert!(o.status.success(), "{spec}: {}", err(&o));
        assert_eq!(out(&o), out(&default), "{spec}");
        assert_eq!(err(&o), "", "{spec}");
    }
}
