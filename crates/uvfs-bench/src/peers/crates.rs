//! The peer crates behind the [`Peer`] trait.

use super::{Peer, e};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::io::ReadBuf;
use vfs::FileSystem as _;
use virtual_fs::FileSystem as _;

/// The `vfs` crate's `MemoryFS`: reads through a reader handle (a
/// snapshot), writes through an append handle (seen on flush).
pub(super) struct VfsMemory {
    fs: vfs::MemoryFS,
    reader: Option<Box<dyn vfs::SeekAndRead + Send>>,
    writer: Option<Box<dyn vfs::SeekAndWrite + Send>>,
}

impl VfsMemory {
    pub(super) fn new() -> VfsMemory {
        VfsMemory {
            fs: vfs::MemoryFS::new(),
            reader: None,
            writer: None,
        }
    }
}

impl Peer for VfsMemory {
    fn mkdir(&mut self, path: &str) -> Result<(), String> {
        self.fs.create_dir(path).map_err(e("mkdir", path))
    }
    fn rmdir(&mut self, path: &str) -> Result<(), String> {
        self.fs.remove_dir(path).map_err(e("rmdir", path))
    }
    fn put(&mut self, path: &str, data: &[u8]) -> Result<(), String> {
        let mut w = self.fs.create_file(path).map_err(e("create", path))?;
        w.write_all(data).map_err(e("write", path))?;
        w.flush().map_err(e("flush", path))
    }
    fn open_close(&mut self, path: &str) -> Result<(), String> {
        self.fs.open_file(path).map(drop).map_err(e("open", path))
    }
    fn open_missing(&mut self, path: &str) -> Result<(), String> {
        match self.fs.open_file(path) {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("{path} exists")),
        }
    }
    fn stat(&mut self, path: &str) -> Result<u64, String> {
        self.fs
            .metadata(path)
            .map(|m| m.len)
            .map_err(e("stat", path))
    }
    fn unlink(&mut self, path: &str) -> Result<(), String> {
        self.fs.remove_file(path).map_err(e("unlink", path))
    }
    fn create(&mut self, path: &str) -> Result<(), String> {
        // MemoryFS's create_file replaces an existing file; O_EXCL
        // would need an exists() first, which Linux's create does in
        // its one lookup: not charged here.
        let mut w = self.fs.create_file(path).map_err(e("create", path))?;
        w.write_all(&[]).map_err(e("write", path))
    }
    fn io_open(&mut self, path: &str) -> Result<(), String> {
        self.reader = Some(self.fs.open_file(path).map_err(e("open", path))?);
        self.writer = Some(self.fs.append_file(path).map_err(e("open", path))?);
        Ok(())
    }
    fn pread(&mut self, buf: &mut [u8]) -> Result<usize, String> {
        let r = self.reader.as_mut().ok_or("no open file")?;
        r.seek(SeekFrom::Start(0))
            .and_then(|_| r.read(buf))
            .map_err(|e| format!("pread: {e}"))
    }
    fn pwrite(&mut self, buf: &[u8]) -> Result<usize, String> {
        let w = self.writer.as_mut().ok_or("no open file")?;
        w.seek(SeekFrom::Start(0))
            .and_then(|_| w.write(buf))
            .map_err(|e| format!("pwrite: {e}"))
    }
    fn io_close(&mut self) {
        self.reader = None;
        self.writer = None;
    }
    fn list(&mut self, path: &str) -> Result<usize, String> {
        Ok(self.fs.read_dir(path).map_err(e("readdir", path))?.count())
    }
}

type VFile = Box<dyn virtual_fs::VirtualFile + Send + Sync + 'static>;

/// wasmer's `virtual-fs` `mem_fs`. Its files are asynchronous; an
/// in-memory file is always ready, so each call is polled once with a
/// no-op waker (a `Pending` is reported as an error).
pub(super) struct VirtualFs {
    fs: virtual_fs::mem_fs::FileSystem,
    io: Option<VFile>,
}

impl VirtualFs {
    pub(super) fn new() -> VirtualFs {
        VirtualFs {
            fs: virtual_fs::mem_fs::FileSystem::default(),
            io: None,
        }
    }
}

fn ready<T>(p: Poll<std::io::Result<T>>, what: &str) -> Result<T, String> {
    match p {
        Poll::Ready(r) => r.map_err(|e| format!("{what}: {e}")),
        Poll::Pending => Err(format!("{what}: pending on an in-memory file")),
    }
}

fn seek0(f: &mut VFile, cx: &mut Context<'_>, what: &str) -> Result<(), String> {
    Pin::new(&mut **f)
        .start_seek(SeekFrom::Start(0))
        .map_err(|e| format!("{what}: {e}"))?;
    ready(Pin::new(&mut **f).poll_complete(cx), what).map(drop)
}

impl Peer for VirtualFs {
    fn mkdir(&mut self, path: &str) -> Result<(), String> {
        self.fs
            .create_dir(Path::new(path))
            .map_err(e("mkdir", path))
    }
    fn rmdir(&mut self, path: &str) -> Result<(), String> {
        self.fs
            .remove_dir(Path::new(path))
            .map_err(e("rmdir", path))
    }
    fn put(&mut self, path: &str, data: &[u8]) -> Result<(), String> {
        let mut f = self
            .fs
            .new_open_options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(e("create", path))?;
        let mut cx = Context::from_waker(Waker::noop());
        let n = ready(Pin::new(&mut *f).poll_write(&mut cx, data), "write")?;
        if n != data.len() {
            return Err(format!("write {path}: short write"));
        }
        Ok(())
    }
    fn open_close(&mut self, path: &str) -> Result<(), String> {
        self.fs
            .new_open_options()
            .read(true)
            .open(path)
            .map(drop)
            .map_err(e("open", path))
    }
    fn open_missing(&mut self, path: &str) -> Result<(), String> {
        match self.fs.new_open_options().read(true).open(path) {
            Err(_) => Ok(()),
            Ok(_) => Err(format!("{path} exists")),
        }
    }
    fn stat(&mut self, path: &str) -> Result<u64, String> {
        self.fs
            .metadata(Path::new(path))
            .map(|m| m.len)
            .map_err(e("stat", path))
    }
    fn unlink(&mut self, path: &str) -> Result<(), String> {
        self.fs
            .remove_file(Path::new(path))
            .map_err(e("unlink", path))
    }
    fn create(&mut self, path: &str) -> Result<(), String> {
        let mut f = self
            .fs
            .new_open_options()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(e("create", path))?;
        let mut cx = Context::from_waker(Waker::noop());
        ready(Pin::new(&mut *f).poll_write(&mut cx, &[]), "write").map(drop)
    }
    fn io_open(&mut self, path: &str) -> Result<(), String> {
        let f = self
            .fs
            .new_open_options()
            .read(true)
            .write(true)
            .open(path)
            .map_err(e("open", path))?;
        self.io = Some(f);
        Ok(())
    }
    fn pread(&mut self, buf: &mut [u8]) -> Result<usize, String> {
        let f = self.io.as_mut().ok_or("no open file")?;
        let mut cx = Context::from_waker(Waker::noop());
        seek0(f, &mut cx, "pread")?;
        let mut rb = ReadBuf::new(buf);
        ready(Pin::new(&mut **f).poll_read(&mut cx, &mut rb), "pread")?;
        Ok(rb.filled().len())
    }
    fn pwrite(&mut self, buf: &[u8]) -> Result<usize, String> {
        let f = self.io.as_mut().ok_or("no open file")?;
        let mut cx = Context::from_waker(Waker::noop());
        seek0(f, &mut cx, "pwrite")?;
        ready(Pin::new(&mut **f).poll_write(&mut cx, buf), "pwrite")
    }
    fn io_close(&mut self) {
        self.io = None;
    }
    fn list(&mut self, path: &str) -> Result<usize, String> {
        let mut n = 0;
        for ent in self
            .fs
            .read_dir(Path::new(path))
            .map_err(e("readdir", path))?
        {
            ent.map_err(e("readdir", path))?;
            n += 1;
        }
        Ok(n)
    }
}
