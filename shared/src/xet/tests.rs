//! The record and hasher against xet-core's own test vectors
//! (`testdata/xet/vectors.json`, copied from huggingface/xet-core at the
//! commit it names), and the record's refusals.

use serde_json::Value;
use xet_core_structures::merklehash::{MerkleHash, file_hash, xorb_hash};

use super::hasher::merkle_bytes;
use super::*;
use crate::XetHash;

fn vectors() -> Value {
    serde_json::from_str(include_str!("../../../testdata/xet/vectors.json")).unwrap()
}

fn boundaries(r: &XetRecord) -> Vec<u64> {
    (1..=r.chunk_count()).map(|i| r.chunk_start(i)).collect()
}

/// The record of `data` given in pieces of `piece` bytes, the same whether
/// the pieces are lent (`update`) or handed over (`update_owned`, import's).
fn record_of(data: &[u8], piece: usize) -> XetRecord {
    let mut lent = XetHasher::new();
    let mut owned = XetHasher::new();
    for p in data.chunks(piece.max(1)) {
        lent.update(p);
        owned.update_owned(p.to_vec());
    }
    let (lent, owned) = (lent.finish(), owned.finish());
    assert_eq!(lent.encode(), owned.encode(), "pieces of {piece} bytes");
    lent
}

fn numbers(v: &Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect()
}

#[test]
fn constant_data_is_cut_where_xet_core_cuts_it() {
    let v = &vectors()["chunking"]["const_1mb"];
    let data = vec![v["byte"].as_u64().unwrap() as u8; v["len"].as_u64().unwrap() as usize];
    for piece in [1 << 20, 4096, 37] {
        assert_eq!(
            boundaries(&record_of(&data, piece)),
            numbers(&v["boundaries"])
        );
    }
}

#[test]
fn triggering_data_is_cut_where_xet_core_cuts_it() {
    let v = &vectors()["chunking"]["hitting"];
    let pattern: Vec<u8> = numbers(&v["pattern"])
        .into_iter()
        .map(|b| b as u8)
        .collect();
    let len = v["len"].as_u64().unwrap() as usize;
    for (padding, want) in v["boundaries_by_padding"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let mut data = pattern.clone();
        data.resize(data.len() + padding, 0);
        while data.len() < len {
            let take = (len - data.len()).min(data.len());
            data.extend_from_within(0..take);
        }
        assert_eq!(
            boundaries(&record_of(&data, 1000)),
            numbers(want),
            "padding {padding}"
        );
    }
}

#[test]
fn merkle_hashes_are_spelt_as_xet_core_spells_them() {
    for row in vectors()["merkle"]["rows"].as_array().unwrap() {
        let chunks: Vec<(MerkleHash, u64)> = row["chunks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                let h = MerkleHash::from_hex(c["hash"].as_str().unwrap()).unwrap();
                (h, c["len"].as_u64().unwrap())
            })
            .collect();
        let spelt = |h: MerkleHash| XetHash::from_bytes(&merkle_bytes(&h)).to_string();
        assert_eq!(
            spelt(xorb_hash(&chunks)),
            row["xorb_hash"].as_str().unwrap()
        );
        assert_eq!(
            spelt(file_hash(&chunks)),
            row["file_hash"].as_str().unwrap()
        );
    }
}

#[test]
fn empty_one_byte_and_one_chunk_files() {
    let empty = record_of(b"", 1);
    assert_eq!(
        (empty.size(), empty.chunk_count(), empty.xorbs.len()),
        (0, 0, 0)
    );
    assert_eq!(empty.file_hash.as_str(), "0".repeat(64));
    let one = record_of(b"x", 1);
    assert_eq!((one.size(), one.chunk_count(), one.xorbs.len()), (1, 1, 1));
    // Constant bytes are cut only at the largest chunk: exactly one chunk.
    let full = record_of(&vec![7u8; max_chunk_len() as usize], 4096);
    assert_eq!((full.chunk_count(), full.xorbs.len()), (1, 1));
    assert_ne!(one.file_hash, full.file_hash);
}

#[test]
fn xorbs_hold_at_most_64_mib() {
    let data = vec![1u8; 130 << 20];
    let r = record_of(&data, 1 << 20);
    assert_eq!(r.xorbs.len(), 3);
    for x in 0..r.xorbs.len() {
        let s = r.span(x);
        assert!(r.packed_len(s.first_chunk, s.end_chunk) <= 64 << 20);
    }
    assert_eq!(r.span(2).end_chunk, r.chunk_count());
    assert_eq!(r.xorb_of(r.span(1).first_chunk), 1);
}

#[test]
fn a_record_reads_back_only_for_its_file() {
    let data: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let r = record_of(&data, 5000);
    let bytes = r.encode();
    assert_eq!(XetRecord::decode(&bytes, data.len() as u64).unwrap(), r);
    let e = XetRecord::decode(&bytes, 5).unwrap_err().to_string();
    assert!(e.contains("describes 300000 bytes"), "{e}");
    let e = XetRecord::decode(&bytes[..bytes.len() - 1], 300_000)
        .unwrap_err()
        .to_string();
    assert!(e.contains("chunks and"), "{e}");
    let mut bad = bytes.clone();
    let last = bad.len() - 4;
    bad[last..].copy_from_slice(&0u32.to_le_bytes());
    assert!(XetRecord::decode(&bad, 300_000).is_err());
    assert!(XetRecord::decode(b"nonsense", 0).is_err());
    // The head alone names the file.
    let head = &bytes[..XetRecord::PEEK_LEN];
    assert_eq!(XetRecord::peek(head), Some((300_000, r.file_hash.clone())));
    assert_eq!(XetRecord::peek(&head[..head.len() - 1]), None);
    assert_eq!(XetRecord::peek(b"LLMGWXET\x02\0\0\0"), None);
}

#[test]
fn a_chunk_header_is_what_xet_core_reads() {
    use xet_core_structures::xorb_object::{XorbChunkHeader, parse_chunk_header};
    let h: XorbChunkHeader = parse_chunk_header(chunk_header(70_000)).unwrap();
    assert_eq!(h.get_uncompressed_length(), 70_000);
    assert_eq!(h.get_compressed_length(), 70_000);
}
