//! A xorb's bytes, made on the fly from the blob: before each chunk its
//! 8-byte header (no compression), then the chunk's bytes as the blob holds
//! them. A byte range of the xorb is served by reading the blob's bytes of
//! the chunks it touches, once, and cutting the packed stream to the range.
//!
//! Invariant: the stream yields exactly the asked bytes of the packed
//! xorb, and ends with an error (never short and silent) when the blob
//! gives fewer bytes than the record says its chunks hold.

use axum::body::{Body, BodyDataStream};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use llmgw_shared::xet::chunk_header;

/// The packed bytes `skip..skip + len` of consecutive chunks of lengths
/// `lens`, whose bytes `blob` yields in order.
pub fn packed(blob: Body, lens: Vec<u32>, skip: u64, len: u64) -> Body {
    let state = Packer {
        inner: blob.into_data_stream(),
        lens,
        next: 0,
        left_in_chunk: 0,
        held: Bytes::new(),
        skip,
        remaining: len,
    };
    Body::from_stream(futures_util::stream::unfold(state, |mut s| async move {
        let piece = s.next_piece().await?;
        Some((piece, s))
    }))
}

/// About how many bytes the body hands the connection at a time.
const PIECE: usize = 256 << 10;

struct Packer {
    inner: BodyDataStream,
    lens: Vec<u32>,
    /// The next chunk whose header is due.
    next: usize,
    /// Bytes of the current chunk not yet passed on.
    left_in_chunk: u64,
    /// Bytes read from the blob, not yet passed on.
    held: Bytes,
    /// Packed bytes still to drop before the range starts.
    skip: u64,
    /// Packed bytes still to send.
    remaining: u64,
}

impl Packer {
    /// The next piece of the range, about [`PIECE`] bytes (headers and
    /// chunk bytes copied together, so the connection is written in few
    /// large frames, not one for every 8-byte header); `None` once it is
    /// all sent.
    async fn next_piece(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        let mut out = BytesMut::new();
        while self.remaining > 0 && out.len() < PIECE {
            let mut piece = match self.packed_piece().await {
                Ok(Some(p)) => p,
                // What was gathered goes first; the next call fails.
                Ok(None) if !out.is_empty() => break,
                Ok(None) => {
                    self.remaining = 0;
                    return Some(Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "the blob ended before its Xet record's chunks did",
                    )));
                }
                Err(e) => return Some(Err(e)),
            };
            let drop = self.skip.min(piece.len() as u64) as usize;
            self.skip -= drop as u64;
            let _ = piece.split_to(drop);
            let keep = self.remaining.min(piece.len() as u64) as usize;
            self.remaining -= keep as u64;
            out.extend_from_slice(&piece[..keep]);
        }
        (!out.is_empty()).then(|| Ok(out.freeze()))
    }

    /// The next piece of the packed stream, range aside: a header or blob
    /// bytes of the current chunk; `None` when the blob ended early.
    async fn packed_piece(&mut self) -> Result<Option<Bytes>, std::io::Error> {
        if self.left_in_chunk == 0 {
            let Some(len) = self.lens.get(self.next).copied() else {
                return Ok(None);
            };
            self.next += 1;
            self.left_in_chunk = u64::from(len);
            return Ok(Some(Bytes::copy_from_slice(&chunk_header(len))));
        }
        if self.held.is_empty() {
            match self.inner.next().await {
                Some(Ok(b)) => self.held = b,
                Some(Err(e)) => return Err(std::io::Error::other(e)),
                None => return Ok(None),
            }
        }
        let n = self.left_in_chunk.min(self.held.len() as u64) as usize;
        self.left_in_chunk -= n as u64;
        Ok(Some(self.held.split_to(n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn collect(b: Body) -> Vec<u8> {
        axum::body::to_bytes(b, usize::MAX).await.unwrap().to_vec()
    }

    fn blob(parts: &[&[u8]]) -> Body {
        let owned: Vec<Result<Bytes, std::io::Error>> = parts
            .iter()
            .map(|p| Ok(Bytes::copy_from_slice(p)))
            .collect();
        Body::from_stream(futures_util::stream::iter(owned))
    }

    #[tokio::test]
    async fn headers_go_before_each_chunk_and_the_range_is_cut_exactly() {
        // Chunks of 3 and 2 bytes, the blob arriving in pieces that do not
        // follow them.
        let whole: Vec<u8> = [&chunk_header(3)[..], b"abc", &chunk_header(2), b"de"].concat();
        let got = collect(packed(blob(&[b"ab", b"cde"]), vec![3, 2], 0, 21)).await;
        assert_eq!(got, whole);
        for (skip, len) in [(0, 1), (5, 9), (8, 3), (11, 10), (20, 1)] {
            let got = collect(packed(blob(&[b"a", b"bcd", b"e"]), vec![3, 2], skip, len)).await;
            assert_eq!(
                got,
                whole[skip as usize..(skip + len) as usize],
                "{skip}+{len}"
            );
        }
    }

    #[tokio::test]
    async fn a_blob_shorter_than_its_record_fails_the_body() {
        let body = packed(blob(&[b"abc", b"d"]), vec![3, 2], 0, 21);
        assert!(axum::body::to_bytes(body, usize::MAX).await.is_err());
    }
}
