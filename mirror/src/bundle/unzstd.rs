//! Decompressing a `.tar.zst` so that a file that was cut short or damaged
//! in transit is reported as exactly that — "damaged or incomplete, copy it
//! again" — and never in the decoder's words ("incomplete frame",
//! "Unknown frame descriptor"), which tell an operator nothing.
//!
//! Invariant: an error of the file itself (the disk, a pipe) passes through
//! unchanged; every other error of the decoder becomes a [`Damaged`].

use std::io::{self, Read};

/// The compressed stream stops decoding: the file is incomplete or damaged.
#[derive(Debug)]
pub struct Damaged;

impl std::fmt::Display for Damaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the .tar.zst file is damaged or incomplete (its compressed data stops decoding \
             here, as when a copy was cut short); copy the file again from the original and \
             compare its size and sha256sum",
        )
    }
}

impl std::error::Error for Damaged {}

/// Whether `e` is a [`Damaged`] (the message already says what to do).
pub fn is_damaged(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Damaged>())
}

/// An error of the compressed file itself, kept apart from the decoder's.
#[derive(Debug)]
struct FromFile(io::Error);

impl std::fmt::Display for FromFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for FromFile {}

/// Tags the file's own errors, so the decoder's can be told from them.
struct Tagged<R>(R);

impl<R: Read> Read for Tagged<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), FromFile(e)))
    }
}

/// A zstd decoder over `inner` whose errors are [`Damaged`] unless they
/// are `inner`'s own.
pub struct Unzstd<R: Read> {
    dec: zstd::stream::read::Decoder<'static, io::BufReader<Tagged<R>>>,
}

impl<R: Read> Unzstd<R> {
    pub fn new(inner: R) -> io::Result<Self> {
        let dec = zstd::stream::read::Decoder::new(Tagged(inner)).map_err(untag)?;
        Ok(Self { dec })
    }
}

impl<R: Read> Read for Unzstd<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.dec.read(buf).map_err(untag)
    }
}

/// The file's own error as it was; anything else the decoder says is
/// [`Damaged`].
fn untag(e: io::Error) -> io::Error {
    if e.get_ref().is_some_and(|inner| inner.is::<FromFile>()) {
        let kind = e.kind();
        return match e.into_inner().map(|inner| inner.downcast::<FromFile>()) {
            Some(Ok(from_file)) => from_file.0,
            _ => io::Error::new(kind, "reading the bundle file failed"),
        };
    }
    io::Error::new(io::ErrorKind::InvalidData, Damaged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(bytes: &[u8]) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        Unzstd::new(bytes)?.read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn whole_streams_decode_and_cut_or_flipped_ones_are_damaged() {
        let data: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let z = zstd::encode_all(&data[..], 3).unwrap();
        assert_eq!(read_all(&z).unwrap(), data);

        let e = read_all(&z[..z.len() / 2]).unwrap_err();
        assert!(is_damaged(&e), "{e}");
        assert!(!e.to_string().contains("frame"), "{e}");
        assert!(e.to_string().contains("copy the file again"), "{e}");

        let mut flipped = z.clone();
        flipped[4] ^= 0xff;
        let e = read_all(&flipped).unwrap_err();
        assert!(is_damaged(&e), "{e}");
    }

    #[test]
    fn the_files_own_errors_pass_through() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "disk says no",
                ))
            }
        }
        let mut out = Vec::new();
        let e = Unzstd::new(Failing)
            .and_then(|mut u| u.read_to_end(&mut out))
            .unwrap_err();
        assert!(!is_damaged(&e));
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(e.to_string(), "disk says no");
    }
}
