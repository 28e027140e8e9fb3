//! A FIFO open as an open file's operations: the pipe's end goes with the
//! file's last reference (Linux's `pipe_release` in `pipefifo_fops`), and
//! the FIFO open behind a file is found from its operations. The pipe
//! itself (`crate::pipe`) knows nothing of files.

use super::{File, FileOps};
use crate::pipe::FifoFile;

impl FileOps for FifoFile {
    fn release(&self, file: &File) {
        if let Some(inode) = file.dentry().and_then(|d| d.inode()) {
            FifoFile::release(self, &inode.pipe);
        }
    }
}

impl FifoFile {
    /// The FIFO open behind `file`, if it is one.
    pub(crate) fn of(file: &File) -> Option<&FifoFile> {
        let ops: &dyn std::any::Any = &**file.ops()?;
        ops.downcast_ref::<FifoFile>()
    }
}
