//! GNU long-name / long-link headers and PAX extended headers, read with a
//! cap.
//!
//! Invariant: no tar header that describes another entry is read into
//! memory unless its declared size is at most [`MAX_EXTENSION_BYTES`]; a
//! bigger one is refused from its header alone, before a byte of it is
//! read. (The `tar` crate reads them whole, whatever they claim: a 512 MiB
//! long name held gigabytes.) Bundles written by llmgw never need them —
//! every name fits the plain header — but a tar re-made by another tool may
//! carry small ones, so they are honoured: a long name or PAX `path` names
//! the next entry, a long link or PAX `linkpath` is its link target, and a
//! PAX `size` must agree with the next header's size (two readers must
//! never see two different archives).

use std::io::Read;

use thiserror::Error;

/// The largest extension header accepted: room for the longest path a
/// bundle may name (4096 bytes) and the records around it.
pub const MAX_EXTENSION_BYTES: u64 = 8 * 1024;

/// Which kind of extension header an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionKind {
    LongName,
    LongLink,
    Pax,
}

impl ExtensionKind {
    /// The kind of a header that describes the next entry, if it is one.
    pub fn of(t: tar::EntryType) -> Option<Self> {
        if t.is_gnu_longname() {
            Some(Self::LongName)
        } else if t.is_gnu_longlink() {
            Some(Self::LongLink)
        } else if t.is_pax_local_extensions() {
            Some(Self::Pax)
        } else {
            None
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Self::LongName => "GNU long-name header",
            Self::LongLink => "GNU long-link header",
            Self::Pax => "PAX extended header",
        }
    }
}

/// Why an extension header was refused.
#[derive(Debug, Error)]
pub enum ExtensionError {
    #[error(
        "a {} of {size} bytes; at most {max} bytes are accepted (no name in a bundle is \
         longer than 4096 bytes), so it was refused without reading it",
        kind.describe()
    )]
    TooLarge {
        kind: ExtensionKind,
        size: u64,
        max: u64,
    },
    #[error("reading a {}", kind.describe())]
    Read {
        kind: ExtensionKind,
        #[source]
        source: std::io::Error,
    },
    #[error("two {}s describe the same entry", kind.describe())]
    Twice { kind: ExtensionKind },
    #[error("a PAX extended header is malformed: {0}")]
    BadPax(&'static str),
    #[error(
        "a PAX extended header gives the next entry {pax} bytes, but its own header says \
         {header}; readers would disagree about where the entry ends"
    )]
    SizeDisagrees { pax: u64, header: u64 },
    #[error("the archive ends after a {}, without the entry it describes", kind.describe())]
    Dangling { kind: ExtensionKind },
}

/// What the extension headers read so far say about the next entry.
#[derive(Debug, Default)]
pub struct Extensions {
    path: Option<Vec<u8>>,
    link: Option<Vec<u8>>,
    size: Option<u64>,
    last: Option<ExtensionKind>,
}

/// The next entry's name and link target, as its extension headers gave
/// them (`None`: use the plain header's).
#[derive(Debug, Default)]
pub struct Overrides {
    pub path: Option<Vec<u8>>,
    pub link: Option<Vec<u8>>,
}

impl Extensions {
    /// Reads one extension header of `size` bytes from `data` (refused
    /// unread when too large) and records what it says.
    pub fn absorb(
        &mut self,
        kind: ExtensionKind,
        size: u64,
        data: &mut dyn Read,
    ) -> Result<(), ExtensionError> {
        if size > MAX_EXTENSION_BYTES {
            return Err(ExtensionError::TooLarge {
                kind,
                size,
                max: MAX_EXTENSION_BYTES,
            });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        data.take(size)
            .read_to_end(&mut bytes)
            .map_err(|source| ExtensionError::Read { kind, source })?;
        if bytes.len() as u64 != size {
            return Err(ExtensionError::Read {
                kind,
                source: std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("the bundle ends after {} of its {size} bytes", bytes.len()),
                ),
            });
        }
        self.last = Some(kind);
        match kind {
            ExtensionKind::LongName => set_once(&mut self.path, trim_nuls(bytes), kind),
            ExtensionKind::LongLink => set_once(&mut self.link, trim_nuls(bytes), kind),
            ExtensionKind::Pax => {
                for (key, value) in pax_records(&bytes)? {
                    match key {
                        b"path" => set_once(&mut self.path, value.to_vec(), kind)?,
                        b"linkpath" => set_once(&mut self.link, value.to_vec(), kind)?,
                        b"size" => {
                            let n = std::str::from_utf8(value)
                                .ok()
                                .and_then(|v| v.parse::<u64>().ok())
                                .ok_or(ExtensionError::BadPax("its size is not a number"))?;
                            if self.size.replace(n).is_some() {
                                return Err(ExtensionError::Twice { kind });
                            }
                        }
                        // Times, owners, charsets: nothing a bundle uses.
                        _ => {}
                    }
                }
                Ok(())
            }
        }
    }

    /// Hands what was recorded to the entry that follows, whose plain
    /// header says it is `header_size` bytes, and starts afresh.
    pub fn take_for(&mut self, header_size: u64) -> Result<Overrides, ExtensionError> {
        let taken = std::mem::take(self);
        if let Some(pax) = taken.size
            && pax != header_size
        {
            return Err(ExtensionError::SizeDisagrees {
                pax,
                header: header_size,
            });
        }
        Ok(Overrides {
            path: taken.path,
            link: taken.link,
        })
    }

    /// At the end of the archive: refused if a header still waits for its entry.
    pub fn finish(&self) -> Result<(), ExtensionError> {
        match self.last {
            Some(kind) => Err(ExtensionError::Dangling { kind }),
            None => Ok(()),
        }
    }
}

fn set_once(
    slot: &mut Option<Vec<u8>>,
    value: Vec<u8>,
    kind: ExtensionKind,
) -> Result<(), ExtensionError> {
    if slot.replace(value).is_some() {
        return Err(ExtensionError::Twice { kind });
    }
    Ok(())
}

fn trim_nuls(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last() == Some(&0) {
        bytes.pop();
    }
    bytes
}

/// A PAX record's key and value.
type PaxRecord<'a> = (&'a [u8], &'a [u8]);

/// PAX records: `<decimal length> <key>=<value>\n`, the length counting
/// the whole record.
fn pax_records(mut data: &[u8]) -> Result<Vec<PaxRecord<'_>>, ExtensionError> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let space = data
            .iter()
            .position(|b| *b == b' ')
            .ok_or(ExtensionError::BadPax("a record has no length"))?;
        let len: usize = std::str::from_utf8(&data[..space])
            .ok()
            .and_then(|l| l.parse().ok())
            .ok_or(ExtensionError::BadPax("a record's length is not a number"))?;
        if len <= space + 1 || len > data.len() || data[len - 1] != b'\n' {
            return Err(ExtensionError::BadPax(
                "a record's length does not match the record",
            ));
        }
        let record = &data[space + 1..len - 1];
        let eq = record
            .iter()
            .position(|b| *b == b'=')
            .ok_or(ExtensionError::BadPax("a record has no '='"))?;
        out.push((&record[..eq], &record[eq + 1..]));
        data = &data[len..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pax(records: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in records {
            let body = format!(" {k}={v}\n");
            // The length counts its own digits.
            let mut len = body.len() + 1;
            if (len.to_string().len() + body.len()) != len {
                len += 1;
            }
            out.extend_from_slice(format!("{len}{body}").as_bytes());
        }
        out
    }

    #[test]
    fn names_links_and_sizes_apply_to_the_next_entry() {
        let mut e = Extensions::default();
        let long = format!("blobs/{}", "a".repeat(200));
        let mut data = format!("{long}\0").into_bytes();
        e.absorb(ExtensionKind::LongName, data.len() as u64, &mut &data[..])
            .unwrap();
        data = pax(&[("mtime", "1.5"), ("linkpath", "t"), ("size", "7")]);
        e.absorb(ExtensionKind::Pax, data.len() as u64, &mut &data[..])
            .unwrap();
        assert!(e.finish().is_err());
        let err = Extensions {
            size: Some(7),
            ..Default::default()
        }
        .take_for(8)
        .unwrap_err();
        assert!(
            err.to_string().contains("gives the next entry 7 bytes"),
            "{err}"
        );
        let o = e.take_for(7).unwrap();
        assert_eq!(o.path.unwrap(), long.as_bytes());
        assert_eq!(o.link.unwrap(), b"t");
        assert!(e.finish().is_ok());
    }

    #[test]
    fn a_huge_header_is_refused_unread() {
        struct Never;
        impl Read for Never {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                panic!("read a header that should have been refused")
            }
        }
        let err = Extensions::default()
            .absorb(ExtensionKind::LongName, 512 << 20, &mut Never)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("GNU long-name header of 536870912 bytes"),
            "{err}"
        );
    }

    #[test]
    fn malformed_and_repeated_headers_are_refused() {
        let mut e = Extensions::default();
        let d = b"x\0";
        e.absorb(ExtensionKind::LongName, 2, &mut &d[..]).unwrap();
        let err = e
            .absorb(ExtensionKind::LongName, 2, &mut &d[..])
            .unwrap_err();
        assert!(
            err.to_string().contains("two GNU long-name headers"),
            "{err}"
        );
        for bad in [&b"99 path=x\n"[..], b"abc", b"5 a\n", b"12 path=x\nX"] {
            let err = Extensions::default()
                .absorb(ExtensionKind::Pax, bad.len() as u64, &mut &bad[..])
                .unwrap_err();
            assert!(err.to_string().contains("malformed"), "{bad:?}: {err}");
        }
    }
}
