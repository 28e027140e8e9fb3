//! The tests: will-it-scale's file-system tests, by the same names and with
//! the same loops, plus `openneg` (seed 001's failed open) and `rmdir1`
//! (directory churn: rmdir's prune of a negative entry).
//!
//! Each test has a shared preparation (files every task uses, made once
//! before the tasks start), a per-task setup, the loop body (one iteration =
//! one counted operation, as will-it-scale counts), a per-task teardown and
//! a shared cleanup. All of it runs against a [`Sys`], so the host and uvfs
//! run the very same sequence of calls on paths of the same shape under a
//! work directory `W`:
//!
//! | test | setup | one iteration |
//! |---|---|---|
//! | open1 | `W/willitscale.N` made for each task beforehand | open it `O_RDWR`, close |
//! | open2 | own directory `W/willitscale.N.d` holding `willitscale` | open it `O_RDWR`, close |
//! | open3 | one file `W/willitscale.shared` for all tasks | open it `O_RDWR`, close |
//! | dup1 | own file, kept open | dup the fd, close the copy |
//! | lseek1 | own 4 KiB file, unlinked, kept open | lseek to 0 |
//! | lseek2 | one shared 4 KiB file, each task opens it | lseek to 0 |
//! | read1 | own 1 MiB file, unlinked, kept open | read 4 KiB; at end of file, seek to 0 |
//! | read2 | one shared 1 MiB file, each task opens it read-only | read 4 KiB; at end of file, seek to 0 |
//! | pread1 | own 4 KiB file, unlinked, kept open | pread 4 KiB at offset 0 |
//! | write1 | own empty file, unlinked, kept open | write 4 KiB; after 1 MiB, seek to 0 |
//! | unlink1 | own name `W/willitscale.N` | create it, close, unlink |
//! | unlink2 | own directory `W/willitscale.N.d` | create `willitscale` in it, close, unlink |
//! | openneg | nothing | open `W/nonexistent` read-only, expect `ENOENT` |
//! | stat1 | own file `W/willitscale.N` | `stat` it |
//! | stat12 | own file 12 components below `W`: `W/willitscale.N.d/d1/…/d10/willitscale` | `stat` it (against stat1: what 11 more components cost) |
//! | open12 | the same file as stat12 | open it `O_RDWR`, close (against open1) |
//! | statchurn | stat12's file, and a scratch name in its own directory | `stat` the file (one operation); every 8th also creates, closes and unlinks the scratch file (a build's header stats beside its temporary files) |
//! | seqread | own 64 MiB file `W/willitscale.N`, kept open | read 1 MiB; at end of file, seek to 0 (that read is not counted) |
//! | seqwrite | own empty file `W/willitscale.N`, kept open | write 1 MiB; after 64 MiB, seek to 0 |
//! | bulkwrite | own empty file `W/willitscale.N`, kept open | write 1 MiB into pages the file does not hold; after 64 MiB, reopen it with `O_TRUNC` (not counted) |
//! | rmdir1 | own name `W/willitscale.N.d` | mkdir it, stat `missing` in it (`ENOENT`: a negative entry), rmdir it |
//! | getfl | own file, kept open | `fcntl(fd, F_GETFL)` (seed 003: one fd lookup per call) |
//! | dup100 | own file open, 100 copies with a hole at the 68th | dup the fd (it lands in the hole), close the copy |
//! | fstree | own tree `W/fstree.N/dD/fF`, D × F empty files | stat the next file of the tree, in order, wrapping around |
//! | blogbench | shared `W/blogbench/blog-S/…`, a few blogs made beforehand | one action of the task's role (below); counts the files it read or wrote |
//!
//! ## fstree (seed 002)
//!
//! The seed's benchmark: each task walks its own tree of `--fstree-dirs`
//! directories × `--fstree-files` files (default 40 × 100; the seed used
//! 1000 × 1000 per thread on 20 threads) calling `stat(2)` on every file,
//! over and over. One counted operation is one stat; a task also counts its
//! completed walks and the time they took, so the report gives the time of
//! one full walk of a task's tree (`walk_seconds`, all tasks walking at
//! once: the seed's "total time"). The trees are made in the task's setup
//! and removed in its teardown, neither timed. Cache-busting: on uvfs the
//! VFS is built with dentry and inode cache limits below one task's tree
//! (default a quarter of it, `--cache-limit`), so with LRU eviction every
//! file's lookup misses both caches, as in the seed. The host's tmpfs
//! cannot evict: its dentries and inodes are the file system and stay in
//! memory, so host walks always hit the caches; the host figure is the
//! cached walk.
//!
//! ## blogbench (seed 004)
//!
//! Modelled on blogbench 1.2 (jedisct1/Blogbench): writer, rewriter,
//! commenter and reader threads working in one scratch directory of blogs,
//! `blog-ID/` each, holding `article-K.xml` files.
//!
//! * writer: takes the next blog id from a counter all tasks share (in the
//!   runner's shared block, so forked tasks share it too), makes `blog-ID`
//!   (an existing one is fine, as in blogbench) and writes 1 to
//!   [`BLOG_MAX_ARTICLES`] articles, highest number first, each "atomically":
//!   written under a temporary name, then renamed into place. A blog whose
//!   article 1 exists is complete. Score: one blog written.
//! * rewriter: rewrites article K (random 1..=[`BLOG_MAX_ARTICLES`]) of a
//!   random blog the same way, temp + rename over the old one.
//! * commenter: appends one comment (256 B to 1 KiB) to a random blog's
//!   `comments.xml` (`O_WRONLY | O_CREAT | O_APPEND`, write, close).
//! * reader: picks a random blog; half the time reads its comments first;
//!   then opens, reads whole (16 KiB reads) and closes `article-1`,
//!   `article-2`, … until one is missing. Score: one blog read. The open
//!   and close of every file read is what stresses `alloc_fd` (seed 004).
//!
//! Roles from `--tasks N`: with one task, that task takes every role in
//! turn, one action each, in the order of [`BLOG_ROLES`]; with N ≥ 2, task
//! `i` has role `BLOG_ROLES[i % 8]`: writer, reader, commenter, reader,
//! rewriter, reader, reader, reader (so 2 tasks = 1 writer + 1 reader,
//! 5 tasks add a commenter, a second reader and a rewriter; 8 tasks = 1
//! writer, 1 rewriter, 1 commenter, 5 readers: blogbench's default of 3,
//! 1, 5, 100 is reader-heavy the same way, scaled for a small machine). In
//! threads mode the roles are threads sharing one fd table, as blogbench's
//! pthreads do; in processes mode each its own process.
//!
//! One counted operation (ops_per_sec) = one file written (an article
//! created or rewritten, a comment appended) or read in full (an article
//! or a comments file). The blogbench scores are kept beside it per task:
//! blogs written ("final score for writes") and blogs read ("final score
//! for reads"), and the articles written and read; the report gives their
//! totals over the measured seconds (blogbench's are totals over its whole
//! run, 30 × 10 s by default).
//!
//! Bounds: at most `--blogs` blog directories (default 128): blog id `I`
//! lives in `blog-(I mod blogs)`, so past the limit writers rewrite old
//! blogs in place instead of growing the tree; comments files are emptied
//! (`O_TRUNC`) once past [`BLOG_COMMENTS_CAP`]. The tree is removed at the
//! end. Before the tasks start, [`BLOG_INITIAL`] blogs are made so readers
//! have something to read from the first second (blogbench starts empty).
//!
//! Not modelled: pictures (blogbench writes and reads `picture-K.jpg`,
//! 8-64 KiB, beside the articles; ours would only be bigger articles);
//! comments as separate atomically created `comment-K.xml` files (blogbench
//! 1.2's commenter; here an appended log per blog, which exercises
//! `O_APPEND`); blogbench's sizes (articles 1-32 KiB, here 1-4 KiB, and up
//! to 100 per blog, here [`BLOG_MAX_ARTICLES`]); its pacing sleeps (writers
//! 10 ms, rewriters 1 s between actions; here every role runs flat out, as
//! will-it-scale loops do); its 10 s reporting iterations; and its shared
//! temporary names (`article-K.xml.tmp`, which two tasks can race on; here
//! each task has its own, `….tmp.N`).

use crate::backend::{Sys, cpath, remove_tree};
use std::ffi::{CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Instant;
use uvfs::{Errno, uapi};

/// will-it-scale's buffer length.
const BUFLEN: usize = 4096;
/// will-it-scale's file size for the read and write tests.
const FILESIZE: usize = 1024 * 1024;
/// The request size of seqread and seqwrite.
pub const SEQ_REQUEST: usize = 1024 * 1024;
/// The file seqread reads and seqwrite writes, sequentially.
pub const SEQ_FILESIZE: usize = 64 * SEQ_REQUEST;
/// dup100's copies, and which of them is closed to make the hole (the
/// 68th: with the first fds at 3 or so, past the first 64-bit word).
const DUP100_COPIES: usize = 100;
const DUP100_HOLE: usize = 67;
/// stat12/open12: directories between the task's own directory and its
/// file (own directory + 10 + the file = 12 components below `W`).
const DEEP_DIRS: usize = 10;

/// statchurn: stats per create + unlink of the scratch file.
const CHURN_STATS: u64 = 8;

/// A test by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Test {
    /// Separate file open/close.
    Open1,
    /// Separate file open/close in different directories.
    Open2,
    /// Same file open/close.
    Open3,
    /// Separate file dup/close.
    Dup1,
    /// Separate file lseek.
    Lseek1,
    /// Same file lseek.
    Lseek2,
    /// Separate file read.
    Read1,
    /// Same file read.
    Read2,
    /// Separate file pread.
    Pread1,
    /// Separate file write.
    Write1,
    /// Separate file open/close/unlink.
    Unlink1,
    /// Separate file open/close/unlink in different directories.
    Unlink2,
    /// Open of a missing file (ENOENT).
    Openneg,
    /// mkdir, a failed lookup inside, rmdir.
    Rmdir1,
    /// rename of its own file to a second name and back, in one directory.
    Rename1,
    /// rename of its own file between two directories of its own and back.
    Rename2,
    /// fcntl(F_GETFL): an fd lookup and little else.
    Getfl,
    /// dup/close with 100 fds open and a hole among them.
    Dup100,
    /// Stat walk over per-task trees larger than the caches (seed 002).
    Fstree,
    /// stat(2) of its own file.
    Stat1,
    /// stat(2) of its own file 12 components below the work directory.
    Stat12,
    /// open/close of its own file 12 components below the work directory.
    Open12,
    /// stat12's stats, with a create + unlink of a scratch file every 8.
    Statchurn,
    /// Sequential 1 MiB reads through its own 64 MiB file.
    Seqread,
    /// Sequential 1 MiB writes through its own 64 MiB file.
    Seqwrite,
    /// Sequential 1 MiB writes that allocate: the file is truncated every
    /// 64 MiB (dd to a new file).
    Bulkwrite,
    /// blogbench-like writers, rewriters, commenters and readers (seed 004).
    Blogbench,
}

/// One entry of the test list.
pub struct Entry {
    /// The name on the command line and in the JSON.
    pub name: &'static str,
    /// The test, or `None` while it is only planned.
    pub test: Option<Test>,
    /// One line: what a task does.
    pub description: &'static str,
}

/// Every test, in `list` order.
pub const TESTS: &[Entry] = &[
    Entry {
        name: "open1",
        test: Some(Test::Open1),
        description: "separate file open/close: each task opens and closes its own file",
    },
    Entry {
        name: "open2",
        test: Some(Test::Open2),
        description: "separate file open/close in different directories: own directory each",
    },
    Entry {
        name: "open3",
        test: Some(Test::Open3),
        description: "same file open/close: every task opens and closes one shared file",
    },
    Entry {
        name: "dup1",
        test: Some(Test::Dup1),
        description: "separate file dup/close: dup an open fd and close the copy",
    },
    Entry {
        name: "lseek1",
        test: Some(Test::Lseek1),
        description: "separate file lseek: lseek(fd, 0, SEEK_SET) on its own 4 KiB file",
    },
    Entry {
        name: "lseek2",
        test: Some(Test::Lseek2),
        description: "same file lseek: each task's own fd on one shared 4 KiB file",
    },
    Entry {
        name: "read1",
        test: Some(Test::Read1),
        description: "separate file read: 4 KiB reads through its own 1 MiB file, rewinding",
    },
    Entry {
        name: "read2",
        test: Some(Test::Read2),
        description: "same file read: 4 KiB reads through one shared 1 MiB file, rewinding",
    },
    Entry {
        name: "pread1",
        test: Some(Test::Pread1),
        description: "separate file pread: pread 4 KiB at offset 0 of its own file",
    },
    Entry {
        name: "write1",
        test: Some(Test::Write1),
        description: "separate file write: 4 KiB writes, rewinding every 1 MiB",
    },
    Entry {
        name: "unlink1",
        test: Some(Test::Unlink1),
        description: "separate file open/close/unlink: create, close, unlink its own file",
    },
    Entry {
        name: "unlink2",
        test: Some(Test::Unlink2),
        description: "as unlink1, each task in its own directory",
    },
    Entry {
        name: "openneg",
        test: Some(Test::Openneg),
        description: "seed 001: open of a missing file, expecting ENOENT",
    },
    Entry {
        name: "stat1",
        test: Some(Test::Stat1),
        description: "stat(2) of its own file: a path walk and the attributes",
    },
    Entry {
        name: "stat12",
        test: Some(Test::Stat12),
        description: "stat(2) of its own file 12 components below W (stat1's is 1): path walk \
            cost by depth (issue 16: the path cache)",
    },
    Entry {
        name: "statchurn",
        test: Some(Test::Statchurn),
        description: "stat(2) of its own file 12 components below W; every 8th stat also \
            creates, closes and unlinks a scratch file in its own directory (issue 16: \
            path_cache_dir_gen)",
    },
    Entry {
        name: "open12",
        test: Some(Test::Open12),
        description: "open/close of its own file 12 components below W (open1's is 1)",
    },
    Entry {
        name: "seqread",
        test: Some(Test::Seqread),
        description: "sequential 1 MiB reads through its own 64 MiB file, rewinding (bandwidth)",
    },
    Entry {
        name: "seqwrite",
        test: Some(Test::Seqwrite),
        description: "sequential 1 MiB writes through its own 64 MiB file, rewinding (bandwidth)",
    },
    Entry {
        name: "bulkwrite",
        test: Some(Test::Bulkwrite),
        description: "1 MiB writes to fresh pages: its own file, truncated every 64 MiB \
            (dd to a new file; bandwidth)",
    },
    Entry {
        name: "rmdir1",
        test: Some(Test::Rmdir1),
        description: "mkdir its own directory, stat a missing name in it (ENOENT), rmdir it",
    },
    Entry {
        name: "rename1",
        test: Some(Test::Rename1),
        description: "rename its own file to a second name in W and back (2 renames a pass)",
    },
    Entry {
        name: "rename2",
        test: Some(Test::Rename2),
        description: "rename its own file between two directories of its own and back \
            (cross-directory: the rename lock; 2 renames a pass)",
    },
    Entry {
        name: "getfl",
        test: Some(Test::Getfl),
        description: "seed 003: fcntl(fd, F_GETFL) on its own open file, one fd lookup per call",
    },
    Entry {
        name: "dup100",
        test: Some(Test::Dup100),
        description: "seed 004: dup/close with 100 copies open and the lowest hole past word 0",
    },
    Entry {
        name: "fstree",
        test: Some(Test::Fstree),
        description: "seed 002: stat every file of its own dirs x files tree, over and over; uvfs \
            caches limited below the tree (the host's tmpfs keeps it all cached)",
    },
    Entry {
        name: "blogbench",
        test: Some(Test::Blogbench),
        description: "seed 004: blogbench-like writers, rewriters, commenters, readers in one \
            shared tree; ops = files written + read",
    },
];

impl Test {
    /// Looks a test up by name: `Err` with a message for an unknown or a
    /// planned one.
    pub fn from_name(name: &str) -> Result<Test, String> {
        match TESTS.iter().find(|e| e.name == name) {
            Some(Entry { test: Some(t), .. }) => Ok(*t),
            Some(_) => Err(format!("test {name} is planned, not implemented yet")),
            None => Err(format!(
                "unknown test {name}; `uvfs-bench list` shows the tests"
            )),
        }
    }

    /// The test's name.
    pub fn name(self) -> &'static str {
        TESTS
            .iter()
            .find(|e| e.test == Some(self))
            .map(|e| e.name)
            .expect("every test is listed")
    }

    /// Every implemented test.
    pub fn all() -> impl Iterator<Item = Test> {
        TESTS.iter().filter_map(|e| e.test)
    }
}

/// fstree's default directories per task tree.
pub const FSTREE_DIRS: usize = 40;
/// fstree's default files per directory.
pub const FSTREE_FILES: usize = 100;
/// The largest tree (directories × files) one fstree task may have: the
/// seed's 1000 × 1000.
pub const FSTREE_MAX_FILES: usize = 1_000_000;
/// blogbench's default limit on blog directories.
pub const BLOGS: usize = 128;
/// The largest `--blogs`.
pub const BLOGS_MAX: usize = 100_000;

/// Most articles in one blog (blogbench: 100).
pub const BLOG_MAX_ARTICLES: u64 = 16;
/// Article sizes: from 1 KiB to just under 4 KiB (blogbench: 1 to 32 KiB).
const ARTICLE_MIN: usize = 1024;
const ARTICLE_MAX: usize = 4096;
/// One comment's size: 256 B to just under 1 KiB.
const COMMENT_MIN: usize = 256;
const COMMENT_MAX: usize = 1024;
/// A comments file past this size is emptied by the commenter that
/// crossed it.
pub const BLOG_COMMENTS_CAP: i64 = 16 * 1024;
/// Read size (blogbench: 64 KiB).
const READ_CHUNK: usize = 16 * 1024;
/// Blogs made before the tasks start (at most `--blogs`).
pub const BLOG_INITIAL: u64 = 8;

/// Per-task extra counters the runner keeps beside the operation count.
pub const EXTRA: usize = 4;
/// fstree: completed walks of the task's whole tree.
pub const FSTREE_WALKS: usize = 0;
/// fstree: nanoseconds those walks took.
pub const FSTREE_WALK_NS: usize = 1;
/// blogbench: blogs written (a writer's completed blog).
pub const BLOGS_WRITTEN: usize = 0;
/// blogbench: blogs read (a reader's completed visit).
pub const BLOGS_READ: usize = 1;
/// blogbench: articles written (created by writers, rewritten by
/// rewriters).
pub const ARTICLES_WRITTEN: usize = 2;
/// blogbench: articles read.
pub const ARTICLES_READ: usize = 3;

/// The knobs of the tests that have any (fstree, blogbench; the cache limit
/// applies to every uvfs run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// fstree: directories in each task's tree.
    pub fstree_dirs: usize,
    /// fstree: files in each directory.
    pub fstree_files: usize,
    /// uvfs: dentry and inode cache limits (unused entries kept), or `None`
    /// for the test's default ([`Params::uvfs_cache_limit`]).
    pub cache_limit: Option<usize>,
    /// blogbench: most blog directories (ids past it reuse old ones).
    pub blogs: usize,
    /// Each task bound to one CPU: task `i` to the `i mod n`-th of the `n`
    /// CPUs the harness may run on, as will-it-scale binds task `i` to
    /// core `i mod n` (`--no-pin`: where the scheduler puts it).
    pub pin: bool,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            fstree_dirs: FSTREE_DIRS,
            fstree_files: FSTREE_FILES,
            cache_limit: None,
            blogs: BLOGS,
            pin: true,
        }
    }
}

impl Params {
    /// Files in one fstree task's tree.
    pub fn fstree_size(&self) -> usize {
        self.fstree_dirs.saturating_mul(self.fstree_files)
    }

    /// Refuses values the tests cannot run with, with a message naming
    /// the option.
    pub fn check(&self) -> Result<(), String> {
        if self.fstree_dirs == 0 || self.fstree_files == 0 {
            return Err("--fstree-dirs and --fstree-files must be at least 1".into());
        }
        if self.fstree_size() > FSTREE_MAX_FILES {
            return Err(format!(
                "--fstree-dirs x --fstree-files is {} x {} = {} files per task; at most \
                 {FSTREE_MAX_FILES}",
                self.fstree_dirs,
                self.fstree_files,
                self.fstree_size()
            ));
        }
        if !(1..=BLOGS_MAX).contains(&self.blogs) {
            return Err(format!("--blogs must be from 1 to {BLOGS_MAX}"));
        }
        Ok(())
    }

    /// The cache limit a uvfs run of `test` uses: `--cache-limit` if given;
    /// for fstree otherwise a quarter of one task's tree (so every walk
    /// misses); else none (the VFS's default, 1 Mi entries).
    pub fn uvfs_cache_limit(&self, test: Test) -> Option<usize> {
        self.cache_limit
            .or((test == Test::Fstree).then(|| self.fstree_size() / 4))
    }
}

/// What a task (or the preparation) works in.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    /// The work directory `W`.
    pub workdir: &'a str,
    /// How many tasks run.
    pub tasks: usize,
    /// The tests' knobs.
    pub params: &'a Params,
}

/// Where a task's loop publishes what it did (the runner's shared block).
#[derive(Clone, Copy, Debug)]
pub struct Counters<'a> {
    /// Counted operations so far.
    pub count: &'a AtomicU64,
    /// The test's extra counters ([`FSTREE_WALKS`], [`BLOGS_WRITTEN`], …).
    pub extra: &'a [AtomicU64; EXTRA],
    /// One word all tasks share (blogbench: the next blog id), set from
    /// [`Prepared::shared`] before the tasks start.
    pub shared: &'a AtomicU64,
    /// Set when the tasks are to stop.
    pub stop: &'a AtomicBool,
}

/// What the preparation made for all tasks.
#[derive(Debug, Default)]
pub struct Prepared {
    /// Files to unlink at cleanup.
    files: Vec<CString>,
    /// Directories to remove with everything in them at cleanup.
    trees: Vec<CString>,
    /// The initial value of the tasks' shared word.
    pub shared: u64,
}

/// The file all tasks share in open3, lseek2 and read2.
fn shared_file(workdir: &str) -> CString {
    cpath(format!("{workdir}/willitscale.shared"))
}

/// Task `n`'s own file name.
fn own_file(workdir: &str, n: usize) -> CString {
    cpath(format!("{workdir}/willitscale.{n}"))
}

/// Task `n`'s own directory.
fn own_dir(workdir: &str, n: usize) -> CString {
    cpath(format!("{workdir}/willitscale.{n}.d"))
}

/// Writes all of `buf` to `fd`.
fn write_all<S: Sys>(sys: &mut S, fd: i32, buf: &[u8]) -> Result<(), Errno> {
    let mut done = 0;
    while done < buf.len() {
        match sys.write(fd, &buf[done..])? {
            0 => return Err(Errno::EIO),
            n => done += n,
        }
    }
    Ok(())
}

/// Creates `path` (it must not exist) holding `len` zero bytes; returns
/// the fd, open read-write.
fn create_file<S: Sys>(sys: &mut S, path: &CString, len: usize) -> Result<i32, Errno> {
    let fd = sys.open(path, uapi::O_RDWR | uapi::O_CREAT | uapi::O_EXCL, 0o600)?;
    let chunk = vec![0u8; len.min(SEQ_REQUEST)];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len());
        if let Err(e) = write_all(sys, fd, &chunk[..n]) {
            sys.close(fd)?;
            return Err(e);
        }
        left -= n;
    }
    Ok(fd)
}

/// The shared preparation, run once before the tasks exist.
pub fn prepare<S: Sys>(test: Test, sys: &mut S, env: &Env<'_>) -> Result<Prepared, Errno> {
    let workdir = env.workdir;
    let mut prepared = Prepared::default();
    let size = match test {
        Test::Open1 => {
            for n in 0..env.tasks {
                let path = own_file(workdir, n);
                let fd = create_file(sys, &path, 0)?;
                sys.close(fd)?;
                prepared.files.push(path);
            }
            return Ok(prepared);
        }
        Test::Blogbench => {
            let root = blog_root(workdir);
            sys.mkdir(&root, 0o755)?;
            prepared.trees.push(root);
            prepared.shared = prepare_blogs(sys, workdir, env.params)?;
            return Ok(prepared);
        }
        Test::Open3 => 0,
        Test::Lseek2 => BUFLEN,
        Test::Read2 => FILESIZE,
        _ => return Ok(prepared),
    };
    let path = shared_file(workdir);
    let fd = create_file(sys, &path, size)?;
    sys.close(fd)?;
    prepared.files.push(path);
    Ok(prepared)
}

/// Undoes [`prepare`] (whatever of it was done).
pub fn cleanup<S: Sys>(sys: &mut S, prepared: Prepared) -> Result<(), Errno> {
    for f in &prepared.files {
        sys.unlink(f)?;
    }
    for t in &prepared.trees {
        remove_tree(sys, t)?;
    }
    Ok(())
}

/// One task's state: what its loop works on.
#[derive(Debug)]
pub struct TaskState {
    test: Test,
    /// The fd the loop uses, or -1.
    fd: i32,
    /// The path the loop opens (or creates and unlinks).
    path: CString,
    /// rename1 and rename2: the name `path` is renamed to and back from.
    other: Option<CString>,
    /// The task's own directory, if it has one.
    dir: Option<CString>,
    /// Unlink `path` at teardown (a file the setup made and kept).
    unlink_path: bool,
    buf: Vec<u8>,
    /// Bytes written since the last rewind (write1).
    size: usize,
    /// Extra fds held open for the loop's duration (dup100).
    extra: Vec<i32>,
    /// fstree: the task's tree.
    tree: Option<Tree>,
    /// blogbench: the task's role and its state.
    blog: Option<Box<Blogger>>,
}

/// Task `n`'s setup (in the task's own process or thread, before the start).
pub fn setup<S: Sys>(test: Test, sys: &mut S, env: &Env<'_>, n: usize) -> Result<TaskState, Errno> {
    let workdir = env.workdir;
    let mut st = TaskState {
        test,
        fd: -1,
        path: own_file(workdir, n),
        other: None,
        dir: None,
        unlink_path: false,
        buf: vec![0u8; BUFLEN],
        size: 0,
        extra: Vec::new(),
        tree: None,
        blog: None,
    };
    match test {
        Test::Open1 | Test::Unlink1 => {}
        Test::Open2 | Test::Unlink2 => {
            let dir = own_dir(workdir, n);
            sys.mkdir(&dir, 0o700)?;
            st.path = cpath(format!("{}/willitscale", dir.to_str().expect("UTF-8 path")));
            st.dir = Some(dir);
            if test == Test::Open2 {
                let fd = create_file(sys, &st.path, 0)?;
                sys.close(fd)?;
                st.unlink_path = true;
            }
        }
        Test::Open3 => st.path = shared_file(workdir),
        Test::Stat12 | Test::Open12 | Test::Statchurn => {
            let dir = own_dir(workdir, n);
            let mut at = dir.to_str().expect("UTF-8 path").to_owned();
            sys.mkdir(&dir, 0o700)?;
            for i in 1..=DEEP_DIRS {
                at = format!("{at}/d{i}");
                sys.mkdir(&cpath(at.as_str()), 0o700)?;
            }
            st.path = cpath(format!("{at}/willitscale"));
            let fd = create_file(sys, &st.path, 0)?;
            sys.close(fd)?;
            if test == Test::Statchurn {
                let d = dir.to_str().expect("UTF-8 path");
                st.other = Some(cpath(format!("{d}/scratch")));
            }
            st.dir = Some(dir);
        }
        Test::Openneg => st.path = cpath(format!("{workdir}/nonexistent")),
        Test::Rmdir1 => {
            let dir = own_dir(workdir, n);
            st.path = cpath(format!("{}/missing", dir.to_str().expect("UTF-8 path")));
            st.dir = Some(dir);
        }
        Test::Rename1 => {
            let fd = create_file(sys, &st.path, 0)?;
            sys.close(fd)?;
            st.unlink_path = true;
            st.other = Some(cpath(format!("{workdir}/willitscale.{n}.renamed")));
        }
        Test::Rename2 => {
            let dir = own_dir(workdir, n);
            let d = dir.to_str().expect("UTF-8 path").to_owned();
            sys.mkdir(&dir, 0o700)?;
            st.dir = Some(dir);
            for sub in ["a", "b"] {
                sys.mkdir(&cpath(format!("{d}/{sub}")), 0o700)?;
            }
            st.path = cpath(format!("{d}/a/willitscale"));
            st.other = Some(cpath(format!("{d}/b/willitscale")));
            let fd = create_file(sys, &st.path, 0)?;
            sys.close(fd)?;
        }
        Test::Dup1 | Test::Getfl => {
            st.fd = create_file(sys, &st.path, 0)?;
            st.unlink_path = true;
        }
        Test::Dup100 => {
            st.fd = create_file(sys, &st.path, 0)?;
            st.unlink_path = true;
            for _ in 0..DUP100_COPIES {
                let d = sys.dup(st.fd)?;
                st.extra.push(d);
            }
            // The hole: the loop's dup finds it as the lowest free fd (in
            // processes mode; threads share one table and its holes).
            let hole = st.extra.remove(DUP100_HOLE);
            sys.close(hole)?;
        }
        Test::Lseek1 | Test::Read1 | Test::Pread1 | Test::Write1 => {
            let len = match test {
                Test::Read1 => FILESIZE,
                Test::Write1 => 0,
                _ => BUFLEN,
            };
            st.fd = create_file(sys, &st.path, len)?;
            sys.unlink(&st.path)?;
        }
        Test::Stat1 => {
            let fd = create_file(sys, &st.path, 0)?;
            sys.close(fd)?;
            st.unlink_path = true;
        }
        Test::Seqread | Test::Seqwrite | Test::Bulkwrite => {
            let len = if test == Test::Seqread {
                SEQ_FILESIZE
            } else {
                0
            };
            st.fd = create_file(sys, &st.path, len)?;
            st.unlink_path = true;
            st.buf = vec![0u8; SEQ_REQUEST];
            if test == Test::Seqread {
                sys.lseek(st.fd, 0, uapi::SEEK_SET)?;
            }
        }
        Test::Lseek2 => st.fd = sys.open(&shared_file(workdir), uapi::O_RDWR, 0)?,
        Test::Read2 => st.fd = sys.open(&shared_file(workdir), uapi::O_RDONLY, 0)?,
        Test::Fstree => st.tree = Some(Tree::create(sys, env, n)?),
        Test::Blogbench => st.blog = Some(Box::new(Blogger::new(env, n))),
    }
    Ok(st)
}

/// Undoes [`setup`].
pub fn teardown<S: Sys>(sys: &mut S, st: TaskState) -> Result<(), Errno> {
    for &fd in &st.extra {
        sys.close(fd)?;
    }
    if st.fd >= 0 {
        sys.close(st.fd)?;
    }
    if st.unlink_path {
        sys.unlink(&st.path)?;
    }
    if let (Test::Stat12 | Test::Open12 | Test::Statchurn | Test::Rename2, Some(dir)) =
        (st.test, &st.dir)
    {
        return crate::backend::remove_tree(sys, dir);
    }
    if let Some(dir) = &st.dir {
        // unlink2 may have been stopped by an error between its create and
        // its unlink.
        if st.test == Test::Unlink2 {
            match sys.unlink(&st.path) {
                Ok(()) | Err(Errno::ENOENT) => {}
                Err(e) => return Err(e),
            }
        }
        match sys.rmdir(dir) {
            Ok(()) => {}
            // rmdir1's loop removes its directory each time.
            Err(Errno::ENOENT) if st.test == Test::Rmdir1 => {}
            Err(e) => return Err(e),
        }
    }
    if st.test == Test::Unlink1 {
        match sys.unlink(&st.path) {
            Ok(()) | Err(Errno::ENOENT) => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(tree) = st.tree {
        tree.remove(sys)?;
    }
    Ok(())
}

/// Runs `body` until `stop` is set, publishing the count of operations in
/// `count` after each iteration (will-it-scale bumps a counter in shared
/// memory the same way); `body` returns how many operations it did.
#[inline(always)]
fn iterate_by(
    count: &AtomicU64,
    stop: &AtomicBool,
    mut body: impl FnMut() -> Result<u64, Errno>,
) -> Result<(), Errno> {
    let mut n = 0u64;
    while !stop.load(Relaxed) {
        n += body()?;
        count.store(n, Relaxed);
    }
    Ok(())
}

/// [`iterate_by`] for a body that is one operation.
#[inline(always)]
fn iterate(
    count: &AtomicU64,
    stop: &AtomicBool,
    mut body: impl FnMut() -> Result<(), Errno>,
) -> Result<(), Errno> {
    iterate_by(count, stop, || body().map(|()| 1))
}

impl Test {
    /// The extra counters the test moves as it runs ([`FSTREE_WALKS`],
    /// [`BLOGS_WRITTEN`], …); none for the one-call tests.
    pub fn extra_counters(self) -> &'static [usize] {
        match self {
            Test::Fstree => &[FSTREE_WALKS, FSTREE_WALK_NS],
            Test::Blogbench => &[BLOGS_WRITTEN, BLOGS_READ, ARTICLES_WRITTEN, ARTICLES_READ],
            _ => &[],
        }
    }
}

/// The test's loop, until `c.stop`; an unexpected result ends it with that
/// error (`EIO` for a short pread, `EEXIST` when openneg's file exists).
pub fn run<S: Sys>(sys: &mut S, st: &mut TaskState, c: &Counters<'_>) -> Result<(), Errno> {
    let (count, stop) = (c.count, c.stop);
    let fd = st.fd;
    let path = st.path.as_c_str();
    let buf = &mut st.buf[..];
    match st.test {
        Test::Open1 | Test::Open2 | Test::Open3 | Test::Open12 => iterate(count, stop, || {
            let fd = sys.open(path, uapi::O_RDWR, 0)?;
            sys.close(fd)
        }),
        Test::Dup1 | Test::Dup100 => iterate(count, stop, || {
            let fd2 = sys.dup(fd)?;
            sys.close(fd2)
        }),
        Test::Lseek1 | Test::Lseek2 => {
            iterate(count, stop, || sys.lseek(fd, 0, uapi::SEEK_SET).map(drop))
        }
        Test::Read1 | Test::Read2 => iterate(count, stop, || {
            if sys.read(fd, buf)? == 0 {
                sys.lseek(fd, 0, uapi::SEEK_SET)?;
            }
            Ok(())
        }),
        Test::Stat1 | Test::Stat12 => iterate(count, stop, || sys.stat(path).map(drop)),
        Test::Statchurn => {
            let scratch = st
                .other
                .as_deref()
                .expect("statchurn's setup named its scratch file");
            iterate_by(count, stop, || {
                for _ in 0..CHURN_STATS {
                    sys.stat(path)?;
                }
                let fd = sys.open(scratch, uapi::O_RDWR | uapi::O_CREAT | uapi::O_EXCL, 0o600)?;
                sys.close(fd)?;
                sys.unlink(scratch)?;
                Ok(CHURN_STATS)
            })
        }
        // A short read or write ends the test (EIO): every counted
        // operation moved exactly SEQ_REQUEST bytes, so bandwidth is
        // ops/s x 1 MiB.
        Test::Seqread => iterate_by(count, stop, || match sys.read(fd, buf)? {
            0 => sys.lseek(fd, 0, uapi::SEEK_SET).map(|_| 0),
            SEQ_REQUEST => Ok(1),
            _ => Err(Errno::EIO),
        }),
        Test::Seqwrite => {
            let size = &mut st.size;
            iterate(count, stop, || {
                if sys.write(fd, buf)? != SEQ_REQUEST {
                    return Err(Errno::EIO);
                }
                *size += SEQ_REQUEST;
                if *size >= SEQ_FILESIZE {
                    *size = 0;
                    sys.lseek(fd, 0, uapi::SEEK_SET)?;
                }
                Ok(())
            })
        }
        Test::Bulkwrite => {
            let (size, fd_slot) = (&mut st.size, &mut st.fd);
            iterate(count, stop, || {
                if sys.write(*fd_slot, buf)? != SEQ_REQUEST {
                    return Err(Errno::EIO);
                }
                *size += SEQ_REQUEST;
                if *size >= SEQ_FILESIZE {
                    *size = 0;
                    // A fresh open with O_TRUNC frees the pages (as dd's
                    // does); the old fd closes after, so the file stays.
                    let fd2 = sys.open(path, uapi::O_WRONLY | uapi::O_TRUNC, 0)?;
                    sys.close(*fd_slot)?;
                    *fd_slot = fd2;
                }
                Ok(())
            })
        }
        Test::Pread1 => iterate(count, stop, || {
            if sys.pread(fd, buf, 0)? != BUFLEN {
                return Err(Errno::EIO);
            }
            Ok(())
        }),
        Test::Write1 => {
            let size = &mut st.size;
            iterate(count, stop, || {
                *size += sys.write(fd, buf)?;
                if *size >= FILESIZE {
                    *size = 0;
                    sys.lseek(fd, 0, uapi::SEEK_SET)?;
                }
                Ok(())
            })
        }
        Test::Unlink1 | Test::Unlink2 => iterate(count, stop, || {
            let fd = sys.open(path, uapi::O_RDWR | uapi::O_CREAT, 0o600)?;
            sys.close(fd)?;
            sys.unlink(path)
        }),
        Test::Rmdir1 => {
            let dir = st
                .dir
                .as_deref()
                .expect("rmdir1's setup named its directory");
            iterate(count, stop, || {
                sys.mkdir(dir, 0o700)?;
                match sys.stat(path) {
                    Err(Errno::ENOENT) => {}
                    Err(e) => return Err(e),
                    Ok(_) => return Err(Errno::EEXIST),
                }
                sys.rmdir(dir)
            })
        }
        Test::Rename1 | Test::Rename2 => {
            let other = st
                .other
                .as_deref()
                .expect("the setup named the second name");
            iterate_by(count, stop, || {
                sys.rename(path, other)?;
                sys.rename(other, path)?;
                Ok(2)
            })
        }
        Test::Getfl => iterate(count, stop, || sys.fcntl(fd, uapi::F_GETFL, 0).map(drop)),
        Test::Openneg => iterate(count, stop, || match sys.open(path, uapi::O_RDONLY, 0) {
            Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(e),
            Ok(fd) => {
                sys.close(fd)?;
                Err(Errno::EEXIST)
            }
        }),
        Test::Fstree => {
            let tree = st.tree.as_ref().expect("fstree's setup made its tree");
            let files = &tree.files[..];
            let (walks, walk_ns) = (&c.extra[FSTREE_WALKS], &c.extra[FSTREE_WALK_NS]);
            let (mut i, mut done, mut ns) = (0, 0u64, 0u64);
            let mut start = Instant::now();
            iterate(count, stop, || {
                sys.stat(&files[i])?;
                i += 1;
                if i == files.len() {
                    i = 0;
                    let now = Instant::now();
                    ns += (now - start).as_nanos() as u64;
                    done += 1;
                    start = now;
                    // The time first: a reader that sees the walk sees
                    // its time (both only grow).
                    walk_ns.store(ns, Relaxed);
                    walks.store(done, Relaxed);
                }
                Ok(())
            })
        }
        Test::Blogbench => {
            let b = st.blog.as_mut().expect("blogbench's setup made its state");
            iterate_by(count, stop, || b.act(sys, c))
        }
    }
}

/// One fstree task's tree: `W/fstree.N/dD/fF`.
#[derive(Debug)]
struct Tree {
    root: CString,
    dirs: Vec<CString>,
    /// Every file, in walk order (directory by directory).
    files: Vec<CString>,
}

impl Tree {
    /// Makes task `n`'s tree; on an error, removes what it made.
    fn create<S: Sys>(sys: &mut S, env: &Env<'_>, n: usize) -> Result<Tree, Errno> {
        let root = format!("{}/fstree.{n}", env.workdir);
        let (nd, nf) = (env.params.fstree_dirs, env.params.fstree_files);
        let mut tree = Tree {
            root: cpath(root.clone()),
            dirs: Vec::with_capacity(nd),
            files: Vec::with_capacity(nd * nf),
        };
        sys.mkdir(&tree.root, 0o755)?;
        let made = (|| {
            for d in 0..nd {
                let dir = format!("{root}/d{d}");
                tree.dirs.push(cpath(dir.clone()));
                sys.mkdir(tree.dirs.last().expect("just pushed"), 0o755)?;
                for f in 0..nf {
                    let file = cpath(format!("{dir}/f{f}"));
                    let fd =
                        sys.open(&file, uapi::O_WRONLY | uapi::O_CREAT | uapi::O_EXCL, 0o644)?;
                    sys.close(fd)?;
                    tree.files.push(file);
                }
            }
            Ok(())
        })();
        match made {
            Ok(()) => Ok(tree),
            Err(e) => {
                let _ = remove_tree(sys, &tree.root);
                Err(e)
            }
        }
    }

    /// Removes the tree.
    fn remove<S: Sys>(self, sys: &mut S) -> Result<(), Errno> {
        for f in &self.files {
            sys.unlink(f)?;
        }
        for d in &self.dirs {
            sys.rmdir(d)?;
        }
        sys.rmdir(&self.root)
    }
}

mod blogbench;
pub(crate) use blogbench::Rng;
pub use blogbench::{BLOG_ROLES, Role, blog_role};
use blogbench::{Blogger, blog_root, prepare_blogs};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_cover_writer_and_reader_from_two_tasks() {
        assert_eq!(blog_role(0, 1), None);
        assert_eq!(blog_role(0, 2), Some(Role::Writer));
        assert_eq!(blog_role(1, 2), Some(Role::Reader));
        let five: Vec<_> = (0..5).map(|i| blog_role(i, 5).unwrap()).collect();
        for r in [Role::Writer, Role::Rewriter, Role::Commenter, Role::Reader] {
            assert!(five.contains(&r), "{r:?} missing from {five:?}");
        }
        assert_eq!(blog_role(8, 9), Some(Role::Writer));
    }

    #[test]
    fn params_are_checked() {
        let ok = Params::default();
        assert!(ok.check().is_ok());
        assert_eq!(ok.uvfs_cache_limit(Test::Fstree), Some(1000));
        assert_eq!(ok.uvfs_cache_limit(Test::Open1), None);
        let limited = Params {
            cache_limit: Some(7),
            ..ok
        };
        assert_eq!(limited.uvfs_cache_limit(Test::Open1), Some(7));
        for bad in [
            Params {
                fstree_dirs: 0,
                ..ok
            },
            Params {
                fstree_files: 0,
                ..ok
            },
            Params {
                fstree_dirs: 1001,
                fstree_files: 1000,
                ..ok
            },
            Params {
                fstree_dirs: usize::MAX,
                fstree_files: usize::MAX,
                ..ok
            },
            Params { blogs: 0, ..ok },
            Params {
                blogs: BLOGS_MAX + 1,
                ..ok
            },
        ] {
            assert!(bad.check().is_err(), "{bad:?}");
        }
    }
}
