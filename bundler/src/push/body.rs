//! A blob's bytes as an upload body: its parts (bytes at hand, a stored
//! file, zeros) streamed one after another, hashed as they go.
//!
//! Invariant: the body ends in an error, so the registry never completes
//! the upload, unless the bytes sent are exactly `size` bytes hashing to
//! the blob's digest; what went wrong is kept for the caller to name
//! ([`Sent::fault`]). Memory is one chunk, whatever the blob's size.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use llmgw_shared::Sha256;
use llmgw_shared::push::{Part, PushBlob};
use sha2::Digest;
use tokio::io::AsyncReadExt;

use crate::error::push::PushError;

/// How much is read from a file at a time.
const CHUNK: usize = 1 << 20;

/// What went wrong in a body, if anything, once its request is over.
#[derive(Clone, Default)]
pub struct Sent(Arc<Mutex<Option<PushError>>>);

impl Sent {
    /// The fault that ended the body, taken.
    pub fn fault(&self) -> Option<PushError> {
        self.0.lock().ok().and_then(|mut f| f.take())
    }

    fn set(&self, e: PushError) -> std::io::Error {
        let text = llmgw_shared::Chain(&e).to_string();
        if let Ok(mut f) = self.0.lock() {
            *f = Some(e);
        }
        std::io::Error::other(text)
    }
}

struct State {
    parts: VecDeque<Part>,
    file: Option<(tokio::fs::File, u64, std::path::PathBuf)>,
    hasher: sha2::Sha256,
    read: u64,
    blob: Sha256,
    size: u64,
    sent: Sent,
}

/// `blob`'s bytes as a request body; faults land in `sent`.
pub fn of(blob: &PushBlob, sent: Sent) -> reqwest::Body {
    let st = State {
        parts: blob.parts.iter().cloned().collect(),
        file: None,
        hasher: sha2::Sha256::new(),
        read: 0,
        blob: blob.sha256.clone(),
        size: blob.size,
        sent,
    };
    reqwest::Body::wrap_stream(futures_util::stream::try_unfold(st, next))
}

async fn next(mut st: State) -> Result<Option<(Bytes, State)>, std::io::Error> {
    loop {
        if let Some((file, left, path)) = st.file.as_mut() {
            if *left == 0 {
                st.file = None;
                continue;
            }
            let mut buf = vec![0u8; CHUNK.min(*left as usize)];
            let n = match file.read(&mut buf).await {
                Ok(0) => {
                    let e = std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("{left} bytes short of its size"),
                    );
                    let path = path.clone();
                    return Err(st.sent.set(PushError::Read { path, source: e }));
                }
                Ok(n) => n,
                Err(source) => {
                    let path = path.clone();
                    return Err(st.sent.set(PushError::Read { path, source }));
                }
            };
            *left -= n as u64;
            buf.truncate(n);
            return Ok(Some((chunk(&mut st, buf), st)));
        }
        let Some(part) = st.parts.pop_front() else {
            return finish(st).map(|()| None);
        };
        match part {
            Part::Bytes(b) => return Ok(Some((chunk(&mut st, b), st))),
            Part::Zeros(n) if n > 0 => {
                let now = n.min(CHUNK as u64);
                if n > now {
                    st.parts.push_front(Part::Zeros(n - now));
                }
                return Ok(Some((chunk(&mut st, vec![0u8; now as usize]), st)));
            }
            Part::Zeros(_) => {}
            Part::File { path, size } => {
                let f = tokio::fs::File::open(&path).await.map_err(|source| {
                    st.sent.set(PushError::Read {
                        path: path.clone(),
                        source,
                    })
                })?;
                st.file = Some((f, size, path));
            }
        }
    }
}

fn chunk(st: &mut State, b: Vec<u8>) -> Bytes {
    st.hasher.update(&b);
    st.read += b.len() as u64;
    Bytes::from(b)
}

/// The end: the bytes sent must be the blob's.
fn finish(st: State) -> Result<(), std::io::Error> {
    let digest: [u8; 32] = st.hasher.clone().finalize().into();
    let actual = Sha256::from_bytes(&digest);
    if actual != st.blob || st.read != st.size {
        return Err(st.sent.set(PushError::Damaged {
            expected: st.blob.to_string(),
            actual: actual.to_string(),
            bytes: st.read,
        }));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::TryStreamExt;

    async fn collect(blob: &PushBlob) -> (Result<Vec<u8>, String>, Option<PushError>) {
        let sent = Sent::default();
        let st = State {
            parts: blob.parts.iter().cloned().collect(),
            file: None,
            hasher: sha2::Sha256::new(),
            read: 0,
            blob: blob.sha256.clone(),
            size: blob.size,
            sent: sent.clone(),
        };
        let r = futures_util::stream::try_unfold(st, next)
            .try_fold(Vec::new(), |mut acc, b| async move {
                acc.extend_from_slice(&b);
                Ok(acc)
            })
            .await
            .map_err(|e| e.to_string());
        (r, sent.fault())
    }

    #[tokio::test]
    async fn parts_are_sent_in_order_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 3 * CHUNK + 5]).unwrap();
        let mut whole = b"head".to_vec();
        whole.extend(vec![7u8; 3 * CHUNK + 5]);
        whole.extend(vec![0u8; 1030]);
        let parts = vec![
            Part::Bytes(b"head".to_vec()),
            Part::File {
                path: path.clone(),
                size: 3 * CHUNK as u64 + 5,
            },
            Part::Zeros(1030),
        ];
        let blob = PushBlob {
            sha256: Sha256::of(&whole),
            size: whole.len() as u64,
            parts: parts.clone(),
        };
        let (r, fault) = collect(&blob).await;
        assert_eq!(r.unwrap(), whole);
        assert!(fault.is_none());
        // The file changed under it: the body fails, naming both digests.
        std::fs::write(&path, vec![8u8; 3 * CHUNK + 5]).unwrap();
        let (r, fault) = collect(&blob).await;
        assert!(r.is_err());
        let e = fault.unwrap().to_string();
        assert!(
            e.contains(&blob.sha256.to_string()) && e.contains("mirror verify"),
            "{e}"
        );
        // Shorter than it says: the file's name and the shortfall.
        std::fs::write(&path, vec![7u8; 10]).unwrap();
        let (_, fault) = collect(&blob).await;
        let e = llmgw_shared::Chain(&fault.unwrap()).to_string();
        assert!(e.contains("short of its size") && e.contains("/f"), "{e}");
    }
}
