//! One blob's bytes, read once: hashed (and, for the signature files,
//! captured) on the reading thread while a [`BlobSink`] writes them on
//! another — and, where a second hash of the same bytes is wanted (a chunk
//! of a volume also goes on its blob's hash), that one on a third. A chunk its
//! blob's hash alone will vouch for goes on that hash only
//! ([`stream_blob_onto`]).
//!
//! Invariant: the digest returned is of exactly the bytes read, all of
//! them, and the sink (and the second hash) was handed the same bytes in
//! the same order and finished before it is returned; any read or write
//! failure is returned instead, the sink's own error as it is. Memory stays
//! at a few chunks whatever the blob's size: each buffer is owned by one
//! thread at a time (reader, then writer, then the second hash), and comes
//! back to the reader to be filled again.

use std::io::{self, Read};

use llmgw_shared::HashReader;
use sha2::{Digest, Sha256};

use super::error::VerifyError;
use super::target::BlobSink;
use crate::bundle::reader::CHUNK;
use llmgw_shared::progress::Progress;

/// A buffer in flight between the reader and the writer thread.
type Chunk = (Box<[u8]>, usize);

/// How many chunks may wait for the writer: enough to ride out a slow
/// write, few enough that memory stays a few MiB whatever the blob size.
const CHUNKS_IN_FLIGHT: usize = 4;

/// Reads one blob's bytes, hashing them (and capturing them, for the
/// signature files) on this thread while `sink` writes them on another.
/// Returns the sha256 of what was read; the sink is finished (synced) when
/// the bytes were all read and written.
pub(crate) fn stream_blob<E: From<VerifyError> + Send>(
    entry: &str,
    data: &mut dyn Read,
    sink: Option<Box<dyn BlobSink<E>>>,
    capture: Option<&mut Vec<u8>>,
    progress: &dyn Progress,
) -> Result<String, E> {
    stream_blob_hashed(entry, data, sink, capture, None, progress)
        .map(|(hasher, _)| hex::encode(hasher.finalize()))
}

/// [`stream_blob`], answering the hash state rather than the digest (an
/// import of volumes carries a chunk's state on as its blob's), and
/// feeding the same bytes to `also` as well, if given: the hash of the
/// blob a chunk belongs to, answered beside the chunk's own. With a sink,
/// `also` is fed on a thread of its own after each buffer is written, so
/// the two hashes and the writes of one chunk take two cores' time, not
/// one's: on a reader that also wrote or hashed twice, that work would
/// add up.
pub(crate) fn stream_blob_hashed<E: From<VerifyError> + Send>(
    entry: &str,
    data: &mut dyn Read,
    sink: Option<Box<dyn BlobSink<E>>>,
    capture: Option<&mut Vec<u8>>,
    also: Option<Sha256>,
    progress: &dyn Progress,
) -> Result<(Sha256, Option<Sha256>), E> {
    stream_from(entry, data, sink, capture, Sha256::new(), also, progress)
}

/// [`stream_blob`] with the hash going on from `start` rather than from
/// nothing, and no other: a chunk of a volume whose blob's hash alone
/// will vouch for it (see `volumes::stage`) is hashed once, not twice.
pub(crate) fn stream_blob_onto<E: From<VerifyError> + Send>(
    entry: &str,
    data: &mut dyn Read,
    sink: Option<Box<dyn BlobSink<E>>>,
    start: Sha256,
    progress: &dyn Progress,
) -> Result<Sha256, E> {
    stream_from(entry, data, sink, None, start, None, progress).map(|(h, _)| h)
}

fn stream_from<E: From<VerifyError> + Send>(
    entry: &str,
    data: &mut dyn Read,
    sink: Option<Box<dyn BlobSink<E>>>,
    capture: Option<&mut Vec<u8>>,
    start: Sha256,
    also: Option<Sha256>,
    progress: &dyn Progress,
) -> Result<(Sha256, Option<Sha256>), E> {
    // Every byte read is hashed by the reader itself, on this thread.
    let mut hashed = HashReader::new(data, start);
    let read_err = |source| VerifyError::ReadEntry {
        entry: entry.to_string(),
        source,
    };
    let mut read = |buf: &mut [u8]| loop {
        match hashed.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other.map_err(read_err),
        }
    };
    let second = match sink {
        None => hash_only(&mut read, capture, also, progress)?,
        Some(sink) => through_sink(&mut read, sink, capture, also, progress)?,
    };
    Ok((hashed.into_hasher(), second))
}

/// Reads a blob's bytes with nowhere to write them: `read` hashes them,
/// `also` too if given.
fn hash_only(
    read: &mut dyn FnMut(&mut [u8]) -> Result<usize, VerifyError>,
    mut capture: Option<&mut Vec<u8>>,
    mut also: Option<Sha256>,
    progress: &dyn Progress,
) -> Result<Option<Sha256>, VerifyError> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = read(&mut buf)?;
        if n == 0 {
            return Ok(also);
        }
        if let Some(h) = also.as_mut() {
            h.update(&buf[..n]);
        }
        if let Some(c) = capture.as_mut() {
            c.extend_from_slice(&buf[..n]);
        }
        progress.advanced(n as u64);
    }
}

/// Reads a blob's bytes on this thread while `sink` writes them on
/// another and, with `also`, a third hashes them again once written;
/// answers that second hash.
fn through_sink<E: From<VerifyError> + Send>(
    read: &mut dyn FnMut(&mut [u8]) -> Result<usize, VerifyError>,
    mut sink: Box<dyn BlobSink<E>>,
    mut capture: Option<&mut Vec<u8>>,
    also: Option<Sha256>,
    progress: &dyn Progress,
) -> Result<Option<Sha256>, E> {
    std::thread::scope(|scope| -> Result<Option<Sha256>, E> {
        let (to_writer, writer_rx) = std::sync::mpsc::sync_channel::<Chunk>(CHUNKS_IN_FLIGHT);
        let (to_reader, spare) = std::sync::mpsc::channel::<Box<[u8]>>();
        // The second hash, if any: fed each buffer once it is written.
        let (to_second, second) = match also {
            None => (None, None),
            Some(mut h) => {
                let (to_second, second_rx) =
                    std::sync::mpsc::sync_channel::<Chunk>(CHUNKS_IN_FLIGHT);
                let to_reader = to_reader.clone();
                let second = scope.spawn(move || {
                    for (buf, n) in second_rx {
                        h.update(&buf[..n]);
                        let _ = to_reader.send(buf);
                    }
                    h
                });
                (Some(to_second), Some(second))
            }
        };
        let writer = scope.spawn(move || -> Result<(), E> {
            for (buf, n) in writer_rx {
                sink.write(&buf[..n])?;
                match &to_second {
                    // It only stops when this thread does.
                    Some(t) => {
                        let _ = t.send((buf, n));
                    }
                    None => {
                        let _ = to_reader.send(buf);
                    }
                }
            }
            sink.finish()
        });
        let mut reading: Result<(), VerifyError> = Ok(());
        loop {
            let mut buf = spare
                .try_recv()
                .unwrap_or_else(|_| vec![0u8; CHUNK].into_boxed_slice());
            let n = match read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    reading = Err(e);
                    break;
                }
            };
            if let Some(c) = capture.as_mut() {
                c.extend_from_slice(&buf[..n]);
            }
            progress.advanced(n as u64);
            if to_writer.send((buf, n)).is_err() {
                // The writer stopped: its error says why.
                break;
            }
        }
        drop(to_writer);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(VerifyError::WriterPanicked.into()));
        // The writer is done (its sender to the second hash dropped), so
        // the second hash has had every buffer.
        let second = match second.map(|t| t.join()) {
            None => None,
            Some(Ok(h)) => Some(h),
            Some(Err(_)) => return Err(VerifyError::WriterPanicked.into()),
        };
        reading?;
        written?;
        Ok(second)
    })
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use llmgw_shared::progress::Quiet;

    /// Keeps what it is given, or fails at the `fail_at`-th write.
    struct Keep {
        out: Arc<Mutex<Vec<u8>>>,
        fail_at: Option<usize>,
        writes: usize,
        finished: Arc<Mutex<bool>>,
    }

    #[derive(Debug, PartialEq)]
    enum SinkError {
        Full(usize),
        Refused(String),
    }

    impl From<VerifyError> for SinkError {
        fn from(e: VerifyError) -> Self {
            SinkError::Refused(llmgw_shared::chain(&e))
        }
    }

    impl BlobSink<SinkError> for Keep {
        fn write(&mut self, buf: &[u8]) -> Result<(), SinkError> {
            self.writes += 1;
            if self.fail_at == Some(self.writes) {
                return Err(SinkError::Full(self.writes));
            }
            self.out.lock().unwrap().extend_from_slice(buf);
            Ok(())
        }
        fn finish(self: Box<Self>) -> Result<(), SinkError> {
            *self.finished.lock().unwrap() = true;
            Ok(())
        }
    }

    /// What the test reads back from a sink that ran on another thread.
    type Shared<T> = Arc<Mutex<T>>;

    fn keep(fail_at: Option<usize>) -> (Keep, Shared<Vec<u8>>, Shared<bool>) {
        let out = Arc::default();
        let finished = Arc::default();
        let k = Keep {
            out: Arc::clone(&out),
            fail_at,
            writes: 0,
            finished: Arc::clone(&finished),
        };
        (k, out, finished)
    }

    #[test]
    fn every_byte_hashed_written_and_captured() {
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 251) as u8).collect();
        let (sink, out, finished) = keep(None);
        let mut captured = Vec::new();
        let digest = stream_blob(
            "blobs/sha256/x",
            &mut &data[..],
            Some(Box::new(sink)),
            Some(&mut captured),
            &Quiet,
        )
        .unwrap();
        assert_eq!(digest, llmgw_shared::sha256_hex(&data));
        assert_eq!(*out.lock().unwrap(), data);
        assert_eq!(captured, data);
        assert!(*finished.lock().unwrap());
        // Without a sink: the same digest.
        let none: Option<Box<dyn BlobSink>> = None;
        let d = stream_blob("x", &mut &data[..], none, None, &Quiet).unwrap();
        assert_eq!(d, digest);
    }

    #[test]
    fn the_second_hash_goes_on_from_its_state_over_the_same_bytes() {
        let before = b"the chunks before this one";
        let data: Vec<u8> = (0..3 * CHUNK + 17).map(|i| (i % 241) as u8).collect();
        let mut whole = before.to_vec();
        whole.extend_from_slice(&data);
        let mut running = Sha256::new();
        running.update(before);
        // With a sink (the second hash on its thread), and without.
        let (sink, out, finished) = keep(None);
        let (own, second) = stream_blob_hashed(
            "chunks/x/00001",
            &mut &data[..],
            Some(Box::new(sink)),
            None,
            Some(running.clone()),
            &Quiet,
        )
        .unwrap();
        assert_eq!(hex::encode(own.finalize()), llmgw_shared::sha256_hex(&data));
        let second = hex::encode(second.unwrap().finalize());
        assert_eq!(second, llmgw_shared::sha256_hex(&whole));
        assert_eq!(*out.lock().unwrap(), data);
        assert!(*finished.lock().unwrap());
        let none: Option<Box<dyn BlobSink>> = None;
        let (_, alone) =
            stream_blob_hashed("x", &mut &data[..], none, None, Some(running), &Quiet).unwrap();
        assert_eq!(hex::encode(alone.unwrap().finalize()), second);
        // A failing sink: its error, whatever the second hash had.
        let (sink, _, _) = keep(Some(2));
        let err = stream_blob_hashed(
            "x",
            &mut &data[..],
            Some(Box::new(sink)),
            None,
            Some(Sha256::new()),
            &Quiet,
        );
        assert_eq!(err.unwrap_err(), SinkError::Full(2));
    }

    #[test]
    fn onto_goes_on_from_the_state_given_over_every_byte_written() {
        let before = b"the chunks before this one";
        let data: Vec<u8> = (0..2 * CHUNK + 5).map(|i| (i % 239) as u8).collect();
        let mut whole = before.to_vec();
        whole.extend_from_slice(&data);
        let mut running = Sha256::new();
        running.update(before);
        let (sink, out, finished) = keep(None);
        let h =
            stream_blob_onto("x", &mut &data[..], Some(Box::new(sink)), running, &Quiet).unwrap();
        assert_eq!(hex::encode(h.finalize()), llmgw_shared::sha256_hex(&whole));
        assert_eq!(*out.lock().unwrap(), data);
        assert!(*finished.lock().unwrap());
    }

    #[test]
    fn the_sinks_error_comes_back_as_it_is() {
        let data = vec![1u8; 2 * CHUNK + 1];
        let (sink, _, finished) = keep(Some(2));
        let err = stream_blob("x", &mut &data[..], Some(Box::new(sink)), None, &Quiet);
        assert_eq!(err.unwrap_err(), SinkError::Full(2));
        assert!(!*finished.lock().unwrap());
    }

    #[test]
    fn a_read_error_names_the_entry_and_keeps_its_cause() {
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::other("the disk is gone"))
            }
        }
        let none: Option<Box<dyn BlobSink>> = None;
        let err = stream_blob("blobs/sha256/ab", &mut Broken, none, None, &Quiet).unwrap_err();
        assert_eq!(err.to_string(), "reading blobs/sha256/ab from the bundle");
        let chain = llmgw_shared::chain(&err);
        assert!(chain.ends_with(": the disk is gone"), "{chain}");
    }
}
