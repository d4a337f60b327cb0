//! Streaming a chunk that comes in order: its bytes hashed on their own
//! and, in the same pass ([`super::twin`]), as the next part of their
//! blob, while a thread of its own writes them into staging.
//!
//! Invariant: the two hashes answered are over exactly the bytes read, and
//! the sink was finished only when every byte read was written; a read or
//! write that fails answers its error and no hash.

use std::io::{self, Read};
use std::sync::mpsc;

use sha2::{Digest, Sha256};

use crate::bundle_reader::CHUNK;
use crate::progress::Progress;
use crate::verify::{BlobSink, VerifyError};

/// Buffers that may wait for the writer (as a plain import allows).
const IN_FLIGHT: usize = 4;

/// Reads one chunk's bytes from `data`, hashing them on their own and onto
/// `blob` (its blob's hash over the chunks before it), while `sink` writes
/// them on another thread. Answers (the chunk's hash, the blob's).
pub fn stream_in_order(
    entry: &str,
    data: &mut dyn Read,
    mut sink: Box<dyn BlobSink>,
    mut blob: Sha256,
    progress: &dyn Progress,
) -> Result<(Sha256, Sha256), VerifyError> {
    let mut chunk = Sha256::new();
    let read_err = |source| VerifyError::ReadEntry {
        entry: entry.to_string(),
        source,
    };
    std::thread::scope(|scope| {
        let (to_writer, todo) = mpsc::sync_channel::<(Box<[u8]>, usize)>(IN_FLIGHT);
        let (give_back, spare) = mpsc::channel::<Box<[u8]>>();
        let writer = scope.spawn(move || -> Result<(), VerifyError> {
            for (buf, n) in todo {
                sink.write(&buf[..n])?;
                let _ = give_back.send(buf);
            }
            sink.finish()
        });
        let mut reading = Ok(());
        loop {
            let mut buf = spare
                .try_recv()
                .unwrap_or_else(|_| vec![0u8; CHUNK].into_boxed_slice());
            let n = match data.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    reading = Err(read_err(e));
                    break;
                }
            };
            super::twin::update_both(&mut chunk, &mut blob, &buf[..n]);
            progress.advance(n as u64);
            if to_writer.send((buf, n)).is_err() {
                // The writer stopped: its error says why.
                break;
            }
        }
        drop(to_writer);
        let written = writer.join().unwrap_or(Err(VerifyError::WriterPanicked));
        reading?;
        written?;
        Ok((chunk, blob))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Collect(Arc<Mutex<Vec<u8>>>);

    impl BlobSink for Collect {
        fn write(&mut self, buf: &[u8]) -> Result<(), VerifyError> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(())
        }
        fn finish(self: Box<Self>) -> Result<(), VerifyError> {
            Ok(())
        }
    }

    struct Failing;

    impl BlobSink for Failing {
        fn write(&mut self, _: &[u8]) -> Result<(), VerifyError> {
            Err(VerifyError::ReadEntry {
                entry: "staging".into(),
                source: io::Error::other("disk gone"),
            })
        }
        fn finish(self: Box<Self>) -> Result<(), VerifyError> {
            Ok(())
        }
    }

    #[test]
    fn both_hashes_and_the_bytes_written_are_the_chunks() {
        let before: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
        let chunk: Vec<u8> = (0..(CHUNK as u32 * 2 + 777))
            .map(|i| (i % 251) as u8)
            .collect();
        let mut blob = Sha256::new();
        blob.update(&before);
        let out = Arc::new(Mutex::new(Vec::new()));
        let (c, b) = stream_in_order(
            "c",
            &mut &chunk[..],
            Box::new(Collect(out.clone())),
            blob,
            &crate::progress::Silent,
        )
        .unwrap();
        assert_eq!(c.finalize(), Sha256::digest(&chunk));
        let whole: Vec<u8> = before.iter().chain(&chunk).copied().collect();
        assert_eq!(b.finalize(), Sha256::digest(&whole));
        assert_eq!(*out.lock().unwrap(), chunk);
    }

    #[test]
    fn a_sink_that_fails_fails_the_chunk() {
        let chunk = vec![1u8; CHUNK * 3];
        let err = stream_in_order(
            "c",
            &mut &chunk[..],
            Box::new(Failing),
            Sha256::new(),
            &crate::progress::Silent,
        )
        .unwrap_err();
        let VerifyError::ReadEntry { source, .. } = err else {
            panic!("{err}");
        };
        assert_eq!(source.to_string(), "disk gone");
    }
}
