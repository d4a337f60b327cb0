//! The bytes of a one-file tar layer around a held blob: the headers
//! before it and how many zero bytes follow it.
//!
//! Invariant: the headers are a function of the entry's path and size
//! alone — mode 0444, uid and gid 0, mtime 0, no user or group names, a
//! regular file — so a layer is byte-identical every time it is made, on
//! any mirror. A path longer than ustar's 100-byte name field, or not
//! ASCII, and a size ustar's 11 octal digits cannot hold, go into a PAX
//! extended header before the file's own, as POSIX.1-2001 says and GNU
//! tar, Go's archive/tar (containerd) and the `tar` crate read.
//! Fields are written as the `tar` crate writes a ustar header (octal
//! with a NUL, the checksum in seven digits, device numbers empty), so a
//! test can build the same bytes with it.

/// A tar block.
pub const BLOCK: u64 = 512;

/// The largest size ustar's 11 octal digits hold.
const USTAR_MAX_SIZE: u64 = 0o77_777_777_777;

/// The headers before the file's bytes: a PAX header and its records when
/// the path or size needs them, then the file's ustar header.
pub fn head(path: &str, size: u64) -> Vec<u8> {
    let long = path.len() > 100 || !path.is_ascii();
    let huge = size > USTAR_MAX_SIZE;
    let mut out = Vec::with_capacity(3 * BLOCK as usize);
    if long || huge {
        let mut records = Vec::new();
        if long {
            records.extend(pax_record("path", path));
        }
        if huge {
            records.extend(pax_record("size", &size.to_string()));
        }
        out.extend(header(b"PaxHeader", records.len() as u64, b'x'));
        let padded = records.len() + padding(records.len() as u64) as usize;
        records.resize(padded, 0);
        out.extend(records);
    }
    let name = if long {
        ascii_prefix(path)
    } else {
        path.as_bytes().to_vec()
    };
    out.extend(header(&name, if huge { 0 } else { size }, b'0'));
    out
}

/// Zero bytes after a file of `size` bytes: its padding to a whole block,
/// then the two zero blocks that end an archive.
pub fn tail(size: u64) -> u64 {
    padding(size) + 2 * BLOCK
}

/// Bytes needed to fill the last block of `len` bytes.
fn padding(len: u64) -> u64 {
    (BLOCK - len % BLOCK) % BLOCK
}

/// A name for the ustar field when PAX carries the real one: the path's
/// ASCII characters, at most 100 bytes (readers that know PAX ignore it).
fn ascii_prefix(path: &str) -> Vec<u8> {
    path.bytes()
        .map(|b| if b.is_ascii() && b != 0 { b } else { b'_' })
        .take(100)
        .collect()
}

/// One PAX record, `"<length> <key>=<value>\n"`, whose length counts its
/// own digits.
fn pax_record(key: &str, value: &str) -> Vec<u8> {
    let rest = key.len() + value.len() + 3; // ' ', '=', '\n'
    let mut len = rest + 1;
    while len != rest + len.to_string().len() {
        len = rest + len.to_string().len();
    }
    format!("{len} {key}={value}\n").into_bytes()
}

/// A ustar header block: `name` (at most 100 bytes), mode 0444, uid/gid
/// 0, `size`, mtime 0, `kind` ('0' a file, 'x' PAX records).
fn header(name: &[u8], size: u64, kind: u8) -> [u8; BLOCK as usize] {
    let mut h = [0u8; BLOCK as usize];
    let n = name.len().min(100);
    h[..n].copy_from_slice(&name[..n]);
    h[100..108].copy_from_slice(b"0000444\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    // The checksum is taken with its own field as spaces.
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..156].copy_from_slice(format!("{sum:07o}\0").as_bytes());
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// The layer's bytes, whole, for a body.
    fn layer(path: &str, body: &[u8]) -> Vec<u8> {
        let mut v = head(path, body.len() as u64);
        v.extend_from_slice(body);
        v.resize(v.len() + tail(body.len() as u64) as usize, 0);
        v
    }

    /// What the `tar` crate reads back: (path, mode, uid, gid, mtime, body).
    fn read_back(bytes: &[u8]) -> Vec<(String, u32, u64, u64, u64, Vec<u8>)> {
        let mut a = tar::Archive::new(bytes);
        let mut out = Vec::new();
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let h = e.header().clone();
            let path = e.path().unwrap().to_string_lossy().into_owned();
            let mut body = Vec::new();
            e.read_to_end(&mut body).unwrap();
            out.push((
                path,
                h.mode().unwrap(),
                h.uid().unwrap(),
                h.gid().unwrap(),
                h.mtime().unwrap(),
                body,
            ));
        }
        out
    }

    #[test]
    fn a_short_name_is_one_ustar_header_and_reads_back() {
        let bytes = layer("models/config.json", b"{\"a\":1}\n");
        assert_eq!(bytes.len(), 512 + 512 + 1024);
        let got = read_back(&bytes);
        assert_eq!(
            got,
            vec![(
                "models/config.json".to_string(),
                0o444,
                0,
                0,
                0,
                b"{\"a\":1}\n".to_vec()
            )]
        );
    }

    #[test]
    fn a_long_or_unicode_name_goes_into_pax_and_reads_back() {
        let long = format!("models/{}/weights.safetensors", "d".repeat(150));
        for path in [long.as_str(), "models/données/é.bin"] {
            let bytes = layer(path, &[7u8; 1000]);
            assert_eq!(&bytes[156..157], b"x", "{path}: a PAX header first");
            let got = read_back(&bytes);
            assert_eq!(got.len(), 1, "{path}");
            assert_eq!(got[0].0, path);
            assert_eq!(got[0].5, vec![7u8; 1000]);
        }
    }

    #[test]
    fn the_same_entry_gives_the_same_bytes_and_blocks_line_up() {
        for size in [0u64, 1, 511, 512, 513, 4096] {
            let h = head("models/x", size);
            assert_eq!(h, head("models/x", size));
            assert_eq!((h.len() as u64 + size + tail(size)) % BLOCK, 0, "{size}");
        }
    }

    #[test]
    fn pax_record_lengths_count_their_own_digits() {
        for n in [1usize, 80, 89, 90, 95, 996, 997, 5000] {
            let r = pax_record("path", &"p".repeat(n));
            let (len, _) = std::str::from_utf8(&r).unwrap().split_once(' ').unwrap();
            assert_eq!(len.parse::<usize>().unwrap(), r.len(), "{n}");
        }
    }

    #[test]
    fn a_size_past_ustar_goes_into_pax() {
        let size = USTAR_MAX_SIZE + 1;
        let h = head("models/big", size);
        let text = String::from_utf8_lossy(&h[512..1024]);
        assert!(text.contains(&format!("size={size}\n")), "{text}");
    }
}
