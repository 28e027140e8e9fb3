//! Linux error numbers as a small `Copy` type, [`Errno`].
//!
//! Values, names and messages follow the kernel's asm-generic errno headers and
//! glibc's `strerror`, so callers see exactly what the real syscalls would report.

use std::fmt;

/// Declares the whole errno table once: the associated consts, the name lookup
/// and the message lookup are all generated from the same rows.
macro_rules! errno_table {
    ($($name:ident = $value:literal => $text:literal;)*) => {
        impl Errno {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($value), "): ", $text, ".")]
                pub const $name: Errno = Errno($value);
            )*

            /// The primary name and glibc message for a known value.
            const fn entry(n: i32) -> Option<(&'static str, &'static str)> {
                match n {
                    $($value => Some((stringify!($name), $text)),)*
                    _ => None,
                }
            }
        }

        #[cfg(test)]
        /// Every row of the table, for the tests.
        const TABLE: &[(Errno, &str, &str)] = &[$((Errno::$name, stringify!($name), $text),)*];
    };
}

/// A Linux error number, as returned (negated) by the kernel's syscalls.
///
/// Any `i32` can be stored; values outside the table are reported as unknown.
///
/// ```
/// use uvfs::{Errno, Process, Vfs};
///
/// let mut p = Process::new(&Vfs::new(uvfs::FastPaths::seeds())).unwrap();
/// let e = p.stat("/missing").unwrap_err();
/// assert_eq!(e, Errno::ENOENT);
/// assert_eq!(e.raw(), 2); // Linux's number
/// assert_eq!(e.name(), Some("ENOENT"));
/// assert_eq!(e.to_string(), "No such file or directory");
/// assert_eq!(Errno::from_raw(9999).name(), None);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Errno(i32);

errno_table! {
    EPERM = 1 => "Operation not permitted";
    ENOENT = 2 => "No such file or directory";
    ESRCH = 3 => "No such process";
    EINTR = 4 => "Interrupted system call";
    EIO = 5 => "Input/output error";
    ENXIO = 6 => "No such device or address";
    E2BIG = 7 => "Argument list too long";
    ENOEXEC = 8 => "Exec format error";
    EBADF = 9 => "Bad file descriptor";
    ECHILD = 10 => "No child processes";
    EAGAIN = 11 => "Resource temporarily unavailable";
    ENOMEM = 12 => "Cannot allocate memory";
    EACCES = 13 => "Permission denied";
    EFAULT = 14 => "Bad address";
    ENOTBLK = 15 => "Block device required";
    EBUSY = 16 => "Device or resource busy";
    EEXIST = 17 => "File exists";
    EXDEV = 18 => "Invalid cross-device link";
    ENODEV = 19 => "No such device";
    ENOTDIR = 20 => "Not a directory";
    EISDIR = 21 => "Is a directory";
    EINVAL = 22 => "Invalid argument";
    ENFILE = 23 => "Too many open files in system";
    EMFILE = 24 => "Too many open files";
    ENOTTY = 25 => "Inappropriate ioctl for device";
    ETXTBSY = 26 => "Text file busy";
    EFBIG = 27 => "File too large";
    ENOSPC = 28 => "No space left on device";
    ESPIPE = 29 => "Illegal seek";
    EROFS = 30 => "Read-only file system";
    EMLINK = 31 => "Too many links";
    EPIPE = 32 => "Broken pipe";
    EDOM = 33 => "Numerical argument out of domain";
    ERANGE = 34 => "Numerical result out of range";
    EDEADLK = 35 => "Resource deadlock avoided";
    ENAMETOOLONG = 36 => "File name too long";
    ENOLCK = 37 => "No locks available";
    ENOSYS = 38 => "Function not implemented";
    ENOTEMPTY = 39 => "Directory not empty";
    ELOOP = 40 => "Too many levels of symbolic links";
    ENOMSG = 42 => "No message of desired type";
    EIDRM = 43 => "Identifier removed";
    ECHRNG = 44 => "Channel number out of range";
    EL2NSYNC = 45 => "Level 2 not synchronized";
    EL3HLT = 46 => "Level 3 halted";
    EL3RST = 47 => "Level 3 reset";
    ELNRNG = 48 => "Link number out of range";
    EUNATCH = 49 => "Protocol driver not attached";
    ENOCSI = 50 => "No CSI structure available";
    EL2HLT = 51 => "Level 2 halted";
    EBADE = 52 => "Invalid exchange";
    EBADR = 53 => "Invalid request descriptor";
    EXFULL = 54 => "Exchange full";
    ENOANO = 55 => "No anode";
    EBADRQC = 56 => "Invalid request code";
    EBADSLT = 57 => "Invalid slot";
    EBFONT = 59 => "Bad font file format";
    ENOSTR = 60 => "Device not a stream";
    ENODATA = 61 => "No data available";
    ETIME = 62 => "Timer expired";
    ENOSR = 63 => "Out of streams resources";
    ENONET = 64 => "Machine is not on the network";
    ENOPKG = 65 => "Package not installed";
    EREMOTE = 66 => "Object is remote";
    ENOLINK = 67 => "Link has been severed";
    EADV = 68 => "Advertise error";
    ESRMNT = 69 => "Srmount error";
    ECOMM = 70 => "Communication error on send";
    EPROTO = 71 => "Protocol error";
    EMULTIHOP = 72 => "Multihop attempted";
    EDOTDOT = 73 => "RFS specific error";
    EBADMSG = 74 => "Bad message";
    EOVERFLOW = 75 => "Value too large for defined data type";
    ENOTUNIQ = 76 => "Name not unique on network";
    EBADFD = 77 => "File descriptor in bad state";
    EREMCHG = 78 => "Remote address changed";
    ELIBACC = 79 => "Can not access a needed shared library";
    ELIBBAD = 80 => "Accessing a corrupted shared library";
    ELIBSCN = 81 => ".lib section in a.out corrupted";
    ELIBMAX = 82 => "Attempting to link in too many shared libraries";
    ELIBEXEC = 83 => "Cannot exec a shared library directly";
    EILSEQ = 84 => "Invalid or incomplete multibyte or wide character";
    ERESTART = 85 => "Interrupted system call should be restarted";
    ESTRPIPE = 86 => "Streams pipe error";
    EUSERS = 87 => "Too many users";
    ENOTSOCK = 88 => "Socket operation on non-socket";
    EDESTADDRREQ = 89 => "Destination address required";
    EMSGSIZE = 90 => "Message too long";
    EPROTOTYPE = 91 => "Protocol wrong type for socket";
    ENOPROTOOPT = 92 => "Protocol not available";
    EPROTONOSUPPORT = 93 => "Protocol not supported";
    ESOCKTNOSUPPORT = 94 => "Socket type not supported";
    EOPNOTSUPP = 95 => "Operation not supported";
    EPFNOSUPPORT = 96 => "Protocol family not supported";
    EAFNOSUPPORT = 97 => "Address family not supported by protocol";
    EADDRINUSE = 98 => "Address already in use";
    EADDRNOTAVAIL = 99 => "Cannot assign requested address";
    ENETDOWN = 100 => "Network is down";
    ENETUNREACH = 101 => "Network is unreachable";
    ENETRESET = 102 => "Network dropped connection on reset";
    ECONNABORTED = 103 => "Software caused connection abort";
    ECONNRESET = 104 => "Connection reset by peer";
    ENOBUFS = 105 => "No buffer space available";
    EISCONN = 106 => "Transport endpoint is already connected";
    ENOTCONN = 107 => "Transport endpoint is not connected";
    ESHUTDOWN = 108 => "Cannot send after transport endpoint shutdown";
    ETOOMANYREFS = 109 => "Too many references: cannot splice";
    ETIMEDOUT = 110 => "Connection timed out";
    ECONNREFUSED = 111 => "Connection refused";
    EHOSTDOWN = 112 => "Host is down";
    EHOSTUNREACH = 113 => "No route to host";
    EALREADY = 114 => "Operation already in progress";
    EINPROGRESS = 115 => "Operation now in progress";
    ESTALE = 116 => "Stale file handle";
    EUCLEAN = 117 => "Structure needs cleaning";
    ENOTNAM = 118 => "Not a XENIX named type file";
    ENAVAIL = 119 => "No XENIX semaphores available";
    EISNAM = 120 => "Is a named type file";
    EREMOTEIO = 121 => "Remote I/O error";
    EDQUOT = 122 => "Disk quota exceeded";
    ENOMEDIUM = 123 => "No medium found";
    EMEDIUMTYPE = 124 => "Wrong medium type";
    ECANCELED = 125 => "Operation canceled";
    ENOKEY = 126 => "Required key not available";
    EKEYEXPIRED = 127 => "Key has expired";
    EKEYREVOKED = 128 => "Key has been revoked";
    EKEYREJECTED = 129 => "Key was rejected by service";
    EOWNERDEAD = 130 => "Owner died";
    ENOTRECOVERABLE = 131 => "State not recoverable";
    ERFKILL = 132 => "Operation not possible due to RF-kill";
    EHWPOISON = 133 => "Memory page has hardware error";
}

impl Errno {
    /// Same as [`Errno::EAGAIN`].
    pub const EWOULDBLOCK: Errno = Errno::EAGAIN;
    /// Same as [`Errno::EDEADLK`].
    pub const EDEADLOCK: Errno = Errno::EDEADLK;
    /// Same as [`Errno::EOPNOTSUPP`].
    pub const ENOTSUP: Errno = Errno::EOPNOTSUPP;

    /// Wraps a raw error number; any value is kept as is.
    #[inline]
    #[must_use]
    pub const fn from_raw(n: i32) -> Errno {
        Errno(n)
    }

    /// The raw error number.
    #[inline]
    #[must_use]
    pub const fn raw(self) -> i32 {
        self.0
    }

    /// The symbolic name, e.g. `Some("EBADF")`; aliases give their primary
    /// name (`EAGAIN`, `EDEADLK`, `EOPNOTSUPP`). `None` for unknown values.
    #[must_use]
    pub fn name(self) -> Option<&'static str> {
        match Self::entry(self.0) {
            Some((name, _)) => Some(name),
            None => None,
        }
    }

    /// glibc's `strerror` text for this value, or `"Unknown error"`.
    #[must_use]
    pub fn description(self) -> &'static str {
        match Self::entry(self.0) {
            Some((_, text)) => text,
            None => "Unknown error",
        }
    }

    /// The calling thread's current OS error (`errno`), or 0 if there is none.
    #[must_use]
    pub fn last_os_error() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match Self::entry(self.0) {
            Some((_, text)) => f.write_str(text),
            None => write!(f, "Unknown error {}", self.0),
        }
    }
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "Errno({})", self.0),
        }
    }
}

impl std::error::Error for Errno {}

impl From<Errno> for std::io::Error {
    fn from(e: Errno) -> std::io::Error {
        std::io::Error::from_raw_os_error(e.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every number from 1 to 133 prints exactly what glibc's `strerror` does,
    /// including the two unused numbers (41 and 58).
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    #[test]
    fn display_matches_glibc_strerror() {
        for n in 1..=133 {
            // SAFETY: `strerror` returns a pointer to a NUL-terminated string that is
            // either static or in a thread-local buffer; it stays valid until the next
            // `strerror` call on this thread, and we copy it out before that. No other
            // test calls `strerror`, and this loop runs on a single thread.
            let expected = unsafe { std::ffi::CStr::from_ptr(libc::strerror(n)) }
                .to_str()
                .expect("strerror text is UTF-8")
                .to_owned();
            assert_eq!(Errno::from_raw(n).to_string(), expected, "errno {n}");
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn numbers_match_libc() {
        assert_eq!(Errno::EPERM.raw(), libc::EPERM);
        assert_eq!(Errno::ENOENT.raw(), libc::ENOENT);
        assert_eq!(Errno::ESRCH.raw(), libc::ESRCH);
        assert_eq!(Errno::EINTR.raw(), libc::EINTR);
        assert_eq!(Errno::EIO.raw(), libc::EIO);
        assert_eq!(Errno::ENXIO.raw(), libc::ENXIO);
        assert_eq!(Errno::E2BIG.raw(), libc::E2BIG);
        assert_eq!(Errno::ENOEXEC.raw(), libc::ENOEXEC);
        assert_eq!(Errno::EBADF.raw(), libc::EBADF);
        assert_eq!(Errno::ECHILD.raw(), libc::ECHILD);
        assert_eq!(Errno::EAGAIN.raw(), libc::EAGAIN);
        assert_eq!(Errno::ENOMEM.raw(), libc::ENOMEM);
        assert_eq!(Errno::EACCES.raw(), libc::EACCES);
        assert_eq!(Errno::EFAULT.raw(), libc::EFAULT);
        assert_eq!(Errno::ENOTBLK.raw(), libc::ENOTBLK);
        assert_eq!(Errno::EBUSY.raw(), libc::EBUSY);
        assert_eq!(Errno::EEXIST.raw(), libc::EEXIST);
        assert_eq!(Errno::EXDEV.raw(), libc::EXDEV);
        assert_eq!(Errno::ENODEV.raw(), libc::ENODEV);
        assert_eq!(Errno::ENOTDIR.raw(), libc::ENOTDIR);
        assert_eq!(Errno::EISDIR.raw(), libc::EISDIR);
        assert_eq!(Errno::EINVAL.raw(), libc::EINVAL);
        assert_eq!(Errno::ENFILE.raw(), libc::ENFILE);
        assert_eq!(Errno::EMFILE.raw(), libc::EMFILE);
        assert_eq!(Errno::ENOTTY.raw(), libc::ENOTTY);
        assert_eq!(Errno::ETXTBSY.raw(), libc::ETXTBSY);
        assert_eq!(Errno::EFBIG.raw(), libc::EFBIG);
        assert_eq!(Errno::ENOSPC.raw(), libc::ENOSPC);
        assert_eq!(Errno::ESPIPE.raw(), libc::ESPIPE);
        assert_eq!(Errno::EROFS.raw(), libc::EROFS);
        assert_eq!(Errno::EMLINK.raw(), libc::EMLINK);
        assert_eq!(Errno::EPIPE.raw(), libc::EPIPE);
        assert_eq!(Errno::EDOM.raw(), libc::EDOM);
        assert_eq!(Errno::ERANGE.raw(), libc::ERANGE);
        assert_eq!(Errno::EDEADLK.raw(), libc::EDEADLK);
        assert_eq!(Errno::ENAMETOOLONG.raw(), libc::ENAMETOOLONG);
        assert_eq!(Errno::ENOLCK.raw(), libc::ENOLCK);
        assert_eq!(Errno::ENOSYS.raw(), libc::ENOSYS);
        assert_eq!(Errno::ENOTEMPTY.raw(), libc::ENOTEMPTY);
        assert_eq!(Errno::ELOOP.raw(), libc::ELOOP);
        assert_eq!(Errno::ENOMSG.raw(), libc::ENOMSG);
        assert_eq!(Errno::EIDRM.raw(), libc::EIDRM);
        assert_eq!(Errno::ECHRNG.raw(), libc::ECHRNG);
        assert_eq!(Errno::EL2NSYNC.raw(), libc::EL2NSYNC);
        assert_eq!(Errno::EL3HLT.raw(), libc::EL3HLT);
        assert_eq!(Errno::EL3RST.raw(), libc::EL3RST);
        assert_eq!(Errno::ELNRNG.raw(), libc::ELNRNG);
        assert_eq!(Errno::EUNATCH.raw(), libc::EUNATCH);
        assert_eq!(Errno::ENOCSI.raw(), libc::ENOCSI);
        assert_eq!(Errno::EL2HLT.raw(), libc::EL2HLT);
        assert_eq!(Errno::EBADE.raw(), libc::EBADE);
        assert_eq!(Errno::EBADR.raw(), libc::EBADR);
        assert_eq!(Errno::EXFULL.raw(), libc::EXFULL);
        assert_eq!(Errno::ENOANO.raw(), libc::ENOANO);
        assert_eq!(Errno::EBADRQC.raw(), libc::EBADRQC);
        assert_eq!(Errno::EBADSLT.raw(), libc::EBADSLT);
        assert_eq!(Errno::EBFONT.raw(), libc::EBFONT);
        assert_eq!(Errno::ENOSTR.raw(), libc::ENOSTR);
        assert_eq!(Errno::ENODATA.raw(), libc::ENODATA);
        assert_eq!(Errno::ETIME.raw(), libc::ETIME);
        assert_eq!(Errno::ENOSR.raw(), libc::ENOSR);
        assert_eq!(Errno::ENONET.raw(), libc::ENONET);
        assert_eq!(Errno::ENOPKG.raw(), libc::ENOPKG);
        assert_eq!(Errno::EREMOTE.raw(), libc::EREMOTE);
        assert_eq!(Errno::ENOLINK.raw(), libc::ENOLINK);
        assert_eq!(Errno::EADV.raw(), libc::EADV);
        assert_eq!(Errno::ESRMNT.raw(), libc::ESRMNT);
        assert_eq!(Errno::ECOMM.raw(), libc::ECOMM);
        assert_eq!(Errno::EPROTO.raw(), libc::EPROTO);
        assert_eq!(Errno::EMULTIHOP.raw(), libc::EMULTIHOP);
        assert_eq!(Errno::EDOTDOT.raw(), libc::EDOTDOT);
        assert_eq!(Errno::EBADMSG.raw(), libc::EBADMSG);
        assert_eq!(Errno::EOVERFLOW.raw(), libc::EOVERFLOW);
        assert_eq!(Errno::ENOTUNIQ.raw(), libc::ENOTUNIQ);
        assert_eq!(Errno::EBADFD.raw(), libc::EBADFD);
        assert_eq!(Errno::EREMCHG.raw(), libc::EREMCHG);
        assert_eq!(Errno::ELIBACC.raw(), libc::ELIBACC);
        assert_eq!(Errno::ELIBBAD.raw(), libc::ELIBBAD);
        assert_eq!(Errno::ELIBSCN.raw(), libc::ELIBSCN);
        assert_eq!(Errno::ELIBMAX.raw(), libc::ELIBMAX);
        assert_eq!(Errno::ELIBEXEC.raw(), libc::ELIBEXEC);
        assert_eq!(Errno::EILSEQ.raw(), libc::EILSEQ);
        assert_eq!(Errno::ERESTART.raw(), libc::ERESTART);
        assert_eq!(Errno::ESTRPIPE.raw(), libc::ESTRPIPE);
        assert_eq!(Errno::EUSERS.raw(), libc::EUSERS);
        assert_eq!(Errno::ENOTSOCK.raw(), libc::ENOTSOCK);
        assert_eq!(Errno::EDESTADDRREQ.raw(), libc::EDESTADDRREQ);
        assert_eq!(Errno::EMSGSIZE.raw(), libc::EMSGSIZE);
        assert_eq!(Errno::EPROTOTYPE.raw(), libc::EPROTOTYPE);
        assert_eq!(Errno::ENOPROTOOPT.raw(), libc::ENOPROTOOPT);
        assert_eq!(Errno::EPROTONOSUPPORT.raw(), libc::EPROTONOSUPPORT);
        assert_eq!(Errno::ESOCKTNOSUPPORT.raw(), libc::ESOCKTNOSUPPORT);
        assert_eq!(Errno::EOPNOTSUPP.raw(), libc::EOPNOTSUPP);
        assert_eq!(Errno::EPFNOSUPPORT.raw(), libc::EPFNOSUPPORT);
        assert_eq!(Errno::EAFNOSUPPORT.raw(), libc::EAFNOSUPPORT);
        assert_eq!(Errno::EADDRINUSE.raw(), libc::EADDRINUSE);
        assert_eq!(Errno::EADDRNOTAVAIL.raw(), libc::EADDRNOTAVAIL);
        assert_eq!(Errno::ENETDOWN.raw(), libc::ENETDOWN);
        assert_eq!(Errno::ENETUNREACH.raw(), libc::ENETUNREACH);
        assert_eq!(Errno::ENETRESET.raw(), libc::ENETRESET);
        assert_eq!(Errno::ECONNABORTED.raw(), libc::ECONNABORTED);
        assert_eq!(Errno::ECONNRESET.raw(), libc::ECONNRESET);
        assert_eq!(Errno::ENOBUFS.raw(), libc::ENOBUFS);
        assert_eq!(Errno::EISCONN.raw(), libc::EISCONN);
        assert_eq!(Errno::ENOTCONN.raw(), libc::ENOTCONN);
        assert_eq!(Errno::ESHUTDOWN.raw(), libc::ESHUTDOWN);
        assert_eq!(Errno::ETOOMANYREFS.raw(), libc::ETOOMANYREFS);
        assert_eq!(Errno::ETIMEDOUT.raw(), libc::ETIMEDOUT);
        assert_eq!(Errno::ECONNREFUSED.raw(), libc::ECONNREFUSED);
        assert_eq!(Errno::EHOSTDOWN.raw(), libc::EHOSTDOWN);
        assert_eq!(Errno::EHOSTUNREACH.raw(), libc::EHOSTUNREACH);
        assert_eq!(Errno::EALREADY.raw(), libc::EALREADY);
        assert_eq!(Errno::EINPROGRESS.raw(), libc::EINPROGRESS);
        assert_eq!(Errno::ESTALE.raw(), libc::ESTALE);
        assert_eq!(Errno::EUCLEAN.raw(), libc::EUCLEAN);
        assert_eq!(Errno::ENOTNAM.raw(), libc::ENOTNAM);
        assert_eq!(Errno::ENAVAIL.raw(), libc::ENAVAIL);
        assert_eq!(Errno::EISNAM.raw(), libc::EISNAM);
        assert_eq!(Errno::EREMOTEIO.raw(), libc::EREMOTEIO);
        assert_eq!(Errno::EDQUOT.raw(), libc::EDQUOT);
        assert_eq!(Errno::ENOMEDIUM.raw(), libc::ENOMEDIUM);
        assert_eq!(Errno::EMEDIUMTYPE.raw(), libc::EMEDIUMTYPE);
        assert_eq!(Errno::ECANCELED.raw(), libc::ECANCELED);
        assert_eq!(Errno::ENOKEY.raw(), libc::ENOKEY);
        assert_eq!(Errno::EKEYEXPIRED.raw(), libc::EKEYEXPIRED);
        assert_eq!(Errno::EKEYREVOKED.raw(), libc::EKEYREVOKED);
        assert_eq!(Errno::EKEYREJECTED.raw(), libc::EKEYREJECTED);
        assert_eq!(Errno::EOWNERDEAD.raw(), libc::EOWNERDEAD);
        assert_eq!(Errno::ENOTRECOVERABLE.raw(), libc::ENOTRECOVERABLE);
        assert_eq!(Errno::ERFKILL.raw(), libc::ERFKILL);
        assert_eq!(Errno::EHWPOISON.raw(), libc::EHWPOISON);
        assert_eq!(Errno::EWOULDBLOCK.raw(), libc::EWOULDBLOCK);
        assert_eq!(Errno::EDEADLOCK.raw(), libc::EDEADLOCK);
        assert_eq!(Errno::ENOTSUP.raw(), libc::ENOTSUP);
    }

    #[test]
    fn table_is_consistent() {
        // 1..=133 minus the two numbers Linux leaves unused (41, 58).
        assert_eq!(TABLE.len(), 131);
        for (i, &(e, name, text)) in TABLE.iter().enumerate() {
            if i > 0 {
                assert!(TABLE[i - 1].0.raw() < e.raw(), "{name} out of order");
            }
            assert_eq!(e.name(), Some(name));
            assert_eq!(e.description(), text);
            assert_eq!(format!("{e:?}"), name);
            assert_eq!(e.to_string(), text);
        }
        assert_eq!(Errno::EBADF.description(), "Bad file descriptor");
        assert_eq!(Errno::EMFILE.description(), "Too many open files");
    }

    #[test]
    fn unknown_values() {
        for n in [0, 41, 58, 134, 4096, -1, i32::MIN] {
            let e = Errno::from_raw(n);
            assert_eq!(e.raw(), n);
            assert_eq!(e.name(), None);
            assert_eq!(e.description(), "Unknown error");
            assert_eq!(e.to_string(), format!("Unknown error {n}"));
            assert_eq!(format!("{e:?}"), format!("Errno({n})"));
        }
        assert_eq!(Errno::from_raw(200).to_string(), "Unknown error 200");
        assert_eq!(format!("{:?}", Errno::from_raw(-3)), "Errno(-3)");
    }

    #[test]
    fn aliases() {
        assert_eq!(Errno::EWOULDBLOCK, Errno::EAGAIN);
        assert_eq!(Errno::EDEADLOCK, Errno::EDEADLK);
        assert_eq!(Errno::ENOTSUP, Errno::EOPNOTSUPP);
        assert_eq!(Errno::EWOULDBLOCK.name(), Some("EAGAIN"));
        assert_eq!(Errno::EDEADLOCK.name(), Some("EDEADLK"));
        assert_eq!(Errno::ENOTSUP.name(), Some("EOPNOTSUPP"));
        assert_eq!(format!("{:?}", Errno::ENOTSUP), "EOPNOTSUPP");
        assert_eq!(
            Errno::EWOULDBLOCK.to_string(),
            "Resource temporarily unavailable"
        );
        assert_eq!(Errno::ENOTSUP.to_string(), "Operation not supported");
        assert_eq!(Errno::EDEADLOCK.to_string(), "Resource deadlock avoided");
    }

    #[test]
    fn io_error_round_trip() {
        for n in (-2..=140).chain([i32::MAX]) {
            let e = Errno::from_raw(n);
            let io: std::io::Error = e.into();
            assert_eq!(io.raw_os_error(), Some(n));
            assert_eq!(Errno::from_raw(io.raw_os_error().unwrap()), e);
        }
        let io = std::io::Error::from(Errno::ENOENT);
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        let io = std::io::Error::from(Errno::EAGAIN);
        assert_eq!(io.kind(), std::io::ErrorKind::WouldBlock);
        // The boxed trait object works too.
        let boxed: Box<dyn std::error::Error> = Box::new(Errno::EBADF);
        assert_eq!(boxed.to_string(), "Bad file descriptor");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn last_os_error_reads_errno() {
        // A failed open of a path that cannot exist sets errno to ENOENT.
        let err = std::fs::File::open("/nonexistent-uvfs-errno-check/x").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(Errno::last_os_error(), Errno::ENOENT);
    }
}
