//! blogbench's roles and their work (see the parent module's doc): the
//! writer, rewriter, commenter and readers over per-blog directories, the
//! shared tree they start from, and the small PRNG each task draws from.

use super::*;

/// A blogbench role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Creates new blogs.
    Writer,
    /// Rewrites articles of existing blogs.
    Rewriter,
    /// Appends comments.
    Commenter,
    /// Reads blogs.
    Reader,
}

/// The roles tasks take, by task index modulo 8 (see the module doc).
pub const BLOG_ROLES: [Role; 8] = [
    Role::Writer,
    Role::Reader,
    Role::Commenter,
    Role::Reader,
    Role::Rewriter,
    Role::Reader,
    Role::Reader,
    Role::Reader,
];

/// Task `index`'s role out of `tasks`, or `None` for the single task of a
/// 1-task run, which takes every role in turn.
pub fn blog_role(index: usize, tasks: usize) -> Option<Role> {
    (tasks > 1).then(|| BLOG_ROLES[index % BLOG_ROLES.len()])
}

/// `W/blogbench`, the blogs' scratch directory.
pub(super) fn blog_root(workdir: &str) -> CString {
    cpath(format!("{workdir}/blogbench"))
}

/// A small, fast PRNG (xorshift64*), one per task, seeded by its index so
/// runs repeat.
#[derive(Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng((seed.wrapping_add(1)).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(crate) fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform-enough in `lo..hi` (`lo < hi`).
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }

    /// Uniform-enough in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.range(0, n as u64) as usize
    }
}

/// Makes the first blogs (complete, half the most articles each) so
/// readers have something from the start; returns how many.
pub(super) fn prepare_blogs<S: Sys>(
    sys: &mut S,
    workdir: &str,
    params: &Params,
) -> Result<u64, Errno> {
    let n = BLOG_INITIAL.min(params.blogs as u64);
    let mut rng = Rng::new(u64::MAX);
    let data = vec![b'x'; ARTICLE_MAX];
    let root = format!("{workdir}/blogbench");
    for id in 0..n {
        sys.mkdir(&cpath(format!("{root}/blog-{id}")), 0o700)?;
        for k in 1..=BLOG_MAX_ARTICLES / 2 {
            let path = cpath(format!("{root}/blog-{id}/article-{k}.xml"));
            let len = rng.range(ARTICLE_MIN as u64, ARTICLE_MAX as u64) as usize;
            let fd = sys.open(&path, uapi::O_WRONLY | uapi::O_CREAT | uapi::O_EXCL, 0o600)?;
            let w = write_all(sys, fd, &data[..len]);
            sys.close(fd)?;
            w?;
        }
    }
    Ok(n)
}

/// One blogbench task: its role and what its actions reuse.
#[derive(Debug)]
pub(super) struct Blogger {
    /// The fixed role, or `None`: every role in turn ([`BLOG_ROLES`]).
    role: Option<Role>,
    /// Actions done (for the rotation).
    step: usize,
    rng: Rng,
    /// `W/blogbench`.
    root: String,
    /// The task's index, in its temporary names.
    index: usize,
    /// Blog directories at most.
    blogs: u64,
    /// What writes write.
    data: Vec<u8>,
    /// Where reads read.
    buf: Vec<u8>,
    /// Local copies of the extra counters (this task alone writes them).
    scores: [u64; EXTRA],
}

/// The fd of a file that may be missing (`ENOENT` → `None`): a blog not
/// made yet, an article past a blog's last.
fn open_maybe<S: Sys>(sys: &mut S, path: &CStr, flags: i32) -> Result<Option<i32>, Errno> {
    match sys.open(path, flags, 0o600) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::ENOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

impl Blogger {
    pub(super) fn new(env: &Env<'_>, index: usize) -> Blogger {
        Blogger {
            role: blog_role(index, env.tasks),
            step: 0,
            rng: Rng::new(index as u64),
            root: format!("{}/blogbench", env.workdir),
            index,
            blogs: env.params.blogs as u64,
            data: vec![b'x'; ARTICLE_MAX],
            buf: vec![0; READ_CHUNK],
            scores: [0; EXTRA],
        }
    }

    fn article(&self, slot: u64, k: u64) -> CString {
        cpath(format!("{}/blog-{slot}/article-{k}.xml", self.root))
    }

    fn comments(&self, slot: u64) -> CString {
        cpath(format!("{}/blog-{slot}/comments.xml", self.root))
    }

    /// A random blog among those given out so far (some may still be in
    /// the making, as in blogbench).
    fn random_blog(&mut self, shared: &AtomicU64) -> u64 {
        let known = shared.load(Relaxed).clamp(1, self.blogs);
        self.rng.range(0, known)
    }

    /// One action of the task's role; returns the files read or written.
    pub(super) fn act<S: Sys>(&mut self, sys: &mut S, c: &Counters<'_>) -> Result<u64, Errno> {
        let role = self.role.unwrap_or_else(|| {
            let r = BLOG_ROLES[self.step % BLOG_ROLES.len()];
            self.step += 1;
            r
        });
        let ops = match role {
            Role::Writer => self.write_blog(sys, c.shared)?,
            Role::Rewriter => self.rewrite_article(sys, c.shared)?,
            Role::Commenter => self.comment(sys, c.shared)?,
            Role::Reader => self.read_blog(sys, c.shared)?,
        };
        for (counter, &v) in c.extra.iter().zip(&self.scores) {
            counter.store(v, Relaxed);
        }
        Ok(ops)
    }

    /// Writes `path` atomically: `len` bytes into the task's temporary
    /// name beside it, then renamed over `path`. `Ok(false)` when the blog
    /// directory does not exist (yet).
    fn write_atomic<S: Sys>(&mut self, sys: &mut S, path: &CString) -> Result<bool, Errno> {
        let len = self.rng.range(ARTICLE_MIN as u64, ARTICLE_MAX as u64) as usize;
        let mut tmp = path.clone().into_bytes();
        tmp.extend_from_slice(format!(".tmp.{}", self.index).as_bytes());
        let tmp = cpath(tmp);
        let flags = uapi::O_WRONLY | uapi::O_CREAT | uapi::O_TRUNC;
        let Some(fd) = open_maybe(sys, &tmp, flags)? else {
            return Ok(false);
        };
        let written = write_all(sys, fd, &self.data[..len]);
        let closed = sys.close(fd);
        if let Err(e) = written.and(closed).and_then(|()| sys.rename(&tmp, path)) {
            let _ = sys.unlink(&tmp);
            return Err(e);
        }
        Ok(true)
    }

    /// Writer: a new blog with 1..=[`BLOG_MAX_ARTICLES`] articles, the
    /// highest number first (so `article-1` appearing completes it).
    fn write_blog<S: Sys>(&mut self, sys: &mut S, shared: &AtomicU64) -> Result<u64, Errno> {
        let id = shared.fetch_add(1, Relaxed);
        let slot = id % self.blogs;
        match sys.mkdir(&cpath(format!("{}/blog-{slot}", self.root)), 0o700) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e),
        }
        let n = self.rng.range(1, BLOG_MAX_ARTICLES + 1);
        for k in (1..=n).rev() {
            let path = self.article(slot, k);
            if !self.write_atomic(sys, &path)? {
                return Err(Errno::ENOENT);
            }
            self.scores[ARTICLES_WRITTEN] += 1;
        }
        self.scores[BLOGS_WRITTEN] += 1;
        Ok(n)
    }

    /// Rewriter: article K of a random blog, temp + rename over it.
    fn rewrite_article<S: Sys>(&mut self, sys: &mut S, shared: &AtomicU64) -> Result<u64, Errno> {
        let slot = self.random_blog(shared);
        let k = self.rng.range(1, BLOG_MAX_ARTICLES + 1);
        let path = self.article(slot, k);
        if !self.write_atomic(sys, &path)? {
            return Ok(0);
        }
        self.scores[ARTICLES_WRITTEN] += 1;
        Ok(1)
    }

    /// Commenter: appends a comment to a random blog's comments file,
    /// emptying the file once it is past [`BLOG_COMMENTS_CAP`].
    fn comment<S: Sys>(&mut self, sys: &mut S, shared: &AtomicU64) -> Result<u64, Errno> {
        let slot = self.random_blog(shared);
        let path = self.comments(slot);
        let flags = uapi::O_WRONLY | uapi::O_CREAT | uapi::O_APPEND;
        let Some(fd) = open_maybe(sys, &path, flags)? else {
            return Ok(0);
        };
        let len = self.rng.range(COMMENT_MIN as u64, COMMENT_MAX as u64) as usize;
        let end =
            write_all(sys, fd, &self.data[..len]).and_then(|()| sys.lseek(fd, 0, uapi::SEEK_CUR));
        sys.close(fd)?;
        if end? > BLOG_COMMENTS_CAP
            && let Some(fd) = open_maybe(sys, &path, uapi::O_WRONLY | uapi::O_TRUNC)?
        {
            sys.close(fd)?;
        }
        Ok(1)
    }

    /// Opens, reads whole and closes `path`; `Ok(false)` if it is missing.
    fn read_file<S: Sys>(&mut self, sys: &mut S, path: &CStr) -> Result<bool, Errno> {
        let Some(fd) = open_maybe(sys, path, uapi::O_RDONLY)? else {
            return Ok(false);
        };
        let read = loop {
            match sys.read(fd, &mut self.buf) {
                Ok(0) => break Ok(()),
                Ok(_) => {}
                Err(e) => break Err(e),
            }
        };
        sys.close(fd)?;
        read.map(|()| true)
    }

    /// Reader: a random blog, its comments half the time, then its
    /// articles from 1 up to the first missing one.
    fn read_blog<S: Sys>(&mut self, sys: &mut S, shared: &AtomicU64) -> Result<u64, Errno> {
        let slot = self.random_blog(shared);
        let mut ops = 0;
        if self.rng.next() & 1 == 0 && self.read_file(sys, &self.comments(slot))? {
            ops += 1;
        }
        for k in 1..=BLOG_MAX_ARTICLES {
            if !self.read_file(sys, &self.article(slot, k))? {
                break;
            }
            ops += 1;
            self.scores[ARTICLES_READ] += 1;
        }
        self.scores[BLOGS_READ] += 1;
        Ok(ops)
    }
}
