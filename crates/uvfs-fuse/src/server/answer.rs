//! One way to turn a handler's `Result` into fuser's reply: the value's
//! form on success, the errno on failure. Each handler computes its
//! answer with the library, then calls [`Answer::answer`] once.

use super::TTL;
use super::convert::ferr;
use fuser::{
    FileAttr, Generation, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty, ReplyEntry,
    ReplyWrite,
};
use uvfs::Errno;

/// A fuser reply that can carry a `T` or an errno.
pub(super) trait Answer<T> {
    /// Sends `r`: its value as this reply's success form, or its errno.
    fn answer(self, r: Result<T, Errno>);
}

/// Replies whose success carries nothing: `ReplyEmpty`, and a listing's
/// end (its entries were added to the reply before).
macro_rules! answer_ok {
    ($($reply:ty),*) => {$(
        impl Answer<()> for $reply {
            fn answer(self, r: Result<(), Errno>) {
                match r {
                    Ok(()) => self.ok(),
                    Err(e) => self.error(ferr(e)),
                }
            }
        }
    )*};
}

answer_ok!(ReplyEmpty, ReplyDirectory, ReplyDirectoryPlus);

/// A new or found entry, with generation 0, as every entry this server
/// gives.
impl Answer<FileAttr> for ReplyEntry {
    fn answer(self, r: Result<FileAttr, Errno>) {
        match r {
            Ok(attr) => self.entry(&TTL, &attr, Generation(0)),
            Err(e) => self.error(ferr(e)),
        }
    }
}

impl Answer<Vec<u8>> for ReplyData {
    fn answer(self, r: Result<Vec<u8>, Errno>) {
        self.answer(r.as_deref().map_err(|e| *e));
    }
}

impl Answer<&[u8]> for ReplyData {
    fn answer(self, r: Result<&[u8], Errno>) {
        match r {
            Ok(b) => self.data(b),
            Err(e) => self.error(ferr(e)),
        }
    }
}

/// The number of bytes written.
impl Answer<usize> for ReplyWrite {
    fn answer(self, r: Result<usize, Errno>) {
        match r {
            Ok(n) => self.written(n as u32),
            Err(e) => self.error(ferr(e)),
        }
    }
}
