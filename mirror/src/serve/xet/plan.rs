//! How a client rebuilds a file (or a byte range of it) from xorbs: the
//! answer of `GET …/v1|v2/reconstructions/{file hash}`, as `hf_xet`
//! (xet-core's `cas_types`) reads it.
//!
//! The mirror's xorbs are the file's own chunks in order ([`XetRecord`]),
//! so a file rebuilds from one term per xorb it touches, each fetched as one
//! byte range of that xorb.
//!
//! Invariant: a pure function of the record and the asked range; every
//! chunk index and byte offset it writes lies inside the xorb it names
//! (the record was checked when read), and the terms cover the asked bytes
//! exactly once, in order.

use llmgw_shared::xet::XetRecord;
use serde_json::{Map, Value, json};

/// One xorb's part in a reconstruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// The xorb's index in the record.
    pub xorb: usize,
    /// Its chunks used, `[start, end)`, counted within the xorb.
    pub chunks: (usize, usize),
    /// How many bytes those chunks hold unpacked.
    pub unpacked: u64,
    /// Where those chunks lie in the xorb's bytes, `[start, end]` inclusive.
    pub bytes: (u64, u64),
}

/// A reconstruction: where the asked range starts in the first term's
/// bytes, and the terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub offset_into_first_range: u64,
    pub terms: Vec<Term>,
}

/// The plan for bytes `first..=last` of the record's file (`None`: all of
/// it). The range is within the file (the caller answered 416 otherwise).
pub fn plan(record: &XetRecord, range: Option<(u64, u64)>) -> Plan {
    if record.chunk_count() == 0 {
        return Plan {
            offset_into_first_range: 0,
            terms: Vec::new(),
        };
    }
    let (first, last) = range.unwrap_or((0, record.size() - 1));
    let (c0, c1) = (record.chunk_at(first), record.chunk_at(last) + 1);
    let mut terms = Vec::new();
    let mut x = record.xorb_of(c0);
    while x < record.xorbs.len() {
        let span = record.span(x);
        if span.first_chunk >= c1 {
            break;
        }
        let (a, b) = (c0.max(span.first_chunk), c1.min(span.end_chunk));
        terms.push(Term {
            xorb: x,
            chunks: (a - span.first_chunk, b - span.first_chunk),
            unpacked: record.chunk_start(b) - record.chunk_start(a),
            bytes: (
                record.packed_len(span.first_chunk, a),
                record.packed_len(span.first_chunk, b) - 1,
            ),
        });
        x += 1;
    }
    Plan {
        offset_into_first_range: first - record.chunk_start(c0),
        terms,
    }
}

fn range(start: u64, end: u64) -> Value {
    json!({"start": start, "end": end})
}

/// The terms as `cas_types::XorbReconstructionTerm` spells them.
fn terms_json(record: &XetRecord, plan: &Plan) -> Vec<Value> {
    plan.terms
        .iter()
        .map(|t| {
            json!({
                "hash": record.xorbs[t.xorb].hash.as_str(),
                "unpacked_length": t.unpacked,
                "range": range(t.chunks.0 as u64, t.chunks.1 as u64),
            })
        })
        .collect()
}

/// `QueryReconstructionResponseV2`: per xorb, one URL and its one range.
/// `url_of` gives a xorb's URL by its index.
pub fn v2_json(record: &XetRecord, plan: &Plan, url_of: impl Fn(usize) -> String) -> Value {
    let mut xorbs = Map::new();
    for t in &plan.terms {
        xorbs.insert(
            record.xorbs[t.xorb].hash.to_string(),
            json!([{
                "url": url_of(t.xorb),
                "ranges": [{
                    "chunks": range(t.chunks.0 as u64, t.chunks.1 as u64),
                    "bytes": range(t.bytes.0, t.bytes.1),
                }],
            }]),
        );
    }
    json!({
        "offset_into_first_range": plan.offset_into_first_range,
        "terms": terms_json(record, plan),
        "xorbs": xorbs,
    })
}

/// `QueryReconstructionResponse` (v1): per xorb, one fetch of one range.
pub fn v1_json(record: &XetRecord, plan: &Plan, url_of: impl Fn(usize) -> String) -> Value {
    let mut fetch = Map::new();
    for t in &plan.terms {
        fetch.insert(
            record.xorbs[t.xorb].hash.to_string(),
            json!([{
                "range": range(t.chunks.0 as u64, t.chunks.1 as u64),
                "url": url_of(t.xorb),
                "url_range": range(t.bytes.0, t.bytes.1),
            }]),
        );
    }
    json!({
        "offset_into_first_range": plan.offset_into_first_range,
        "terms": terms_json(record, plan),
        "fetch_info": fetch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmgw_shared::xet::{CHUNK_HEADER_LEN, XetHasher};

    /// A record of 1.5 MB of varied bytes: about 23 chunks in one xorb.
    fn record() -> XetRecord {
        let data: Vec<u8> = (0..1_500_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut h = XetHasher::new();
        h.update(&data);
        h.finish()
    }

    #[test]
    fn a_whole_file_is_every_chunk_of_every_xorb_once() {
        let r = record();
        let p = plan(&r, None);
        assert_eq!(p.offset_into_first_range, 0);
        assert_eq!(p.terms.len(), r.xorbs.len());
        let total: u64 = p.terms.iter().map(|t| t.unpacked).sum();
        assert_eq!(total, r.size());
        for t in &p.terms {
            let span = r.span(t.xorb);
            let n = (span.end_chunk - span.first_chunk) as u64;
            assert_eq!(t.bytes, (0, t.unpacked + n * CHUNK_HEADER_LEN - 1));
        }
    }

    #[test]
    fn a_range_starts_in_its_first_chunk() {
        let r = record();
        let c = r.chunk_count() / 2;
        let first = r.chunk_start(c) + 10;
        let p = plan(&r, Some((first, first)));
        assert_eq!(p.offset_into_first_range, 10);
        assert_eq!(p.terms.len(), 1);
        let t = &p.terms[0];
        assert_eq!(t.unpacked, u64::from(r.chunk_len(c)));
        let span = r.span(t.xorb);
        assert_eq!(t.chunks.1 - t.chunks.0, 1);
        assert_eq!(span.first_chunk + t.chunks.0, c);
        assert_eq!(
            t.bytes.0,
            r.packed_len(span.first_chunk, c),
            "the range starts at the chunk's header"
        );
        let v = v2_json(&r, &p, |x| format!("u{x}"));
        assert_eq!(v["offset_into_first_range"], 10);
        assert_eq!(v["terms"][0]["hash"], r.xorbs[t.xorb].hash.as_str());
    }

    #[test]
    fn an_empty_file_has_no_terms() {
        let r = XetHasher::new().finish();
        assert_eq!(plan(&r, None).terms, vec![]);
    }
}
