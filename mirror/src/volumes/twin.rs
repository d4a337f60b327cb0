//! Two SHA-256 hashes of the same bytes in one pass: a chunk's own hash
//! (checked against the sha256 the manifest records for it) and the
//! running hash of the blob it belongs to (checked against the publisher's
//! digest once the blob is whole).
//!
//! Why: a chunk that comes in order must be hashed twice, once on its own
//! and once as part of its blob — SHA-256 has no way to join two digests.
//! SHA instructions wait on each other within one hash, so two hashes of
//! the same blocks, their rounds interleaved, cost little more than one;
//! the message schedule is shared as well.
//!
//! Invariant: each state ends exactly as if it had been fed the bytes on
//! its own with [`Sha256::update`] (tested against sha2 for every length
//! and offset); where the CPU lacks SHA instructions, or the two are not at
//! the same place in a block, it is exactly that.

use sha2::digest::common::hazmat::SerializableState;
use sha2::{Digest, Sha256};

/// Bytes of a SHA-256 block.
const BLOCK: usize = 64;

/// `a` and `b` both fed `data`, as `a.update(data); b.update(data)`.
pub fn update_both(a: &mut Sha256, b: &mut Sha256, data: &[u8]) {
    if !x86::available() || buffered(a) != buffered(b) {
        a.update(data);
        b.update(data);
        return;
    }
    // Up to a block boundary (where both are: they are at the same place).
    let head = ((BLOCK - buffered(a)) % BLOCK).min(data.len());
    a.update(&data[..head]);
    b.update(&data[..head]);
    let rest = &data[head..];
    let whole = rest.len() / BLOCK * BLOCK;
    let blocks = &rest[..whole];
    let interleaved = if whole > 0 && buffered(a) == 0 {
        let (mut sa, mut sb) = (raw(a), raw(b));
        x86::compress_both(&mut sa.0, &mut sb.0, blocks);
        let n = (whole / BLOCK) as u64;
        with_raw(a, sa.0, sa.1 + n).zip(with_raw(b, sb.0, sb.1 + n))
    } else {
        None
    };
    match interleaved {
        Some((na, nb)) => (*a, *b) = (na, nb),
        None => {
            a.update(blocks);
            b.update(blocks);
        }
    }
    a.update(&rest[whole..]);
    b.update(&rest[whole..]);
}

// sha2's serialized state: the eight state words (little-endian), the
// count of blocks compressed (u64, little-endian), then the buffer: its
// length in one byte and its bytes.
const WORDS: usize = 32;
const COUNT: usize = WORDS + 8;

/// Bytes waiting in the hasher's buffer (always less than a block).
fn buffered(h: &Sha256) -> usize {
    usize::from(h.serialize()[COUNT])
}

/// The state words and block count of a hasher with an empty buffer.
fn raw(h: &Sha256) -> ([u32; 8], u64) {
    let s = h.serialize();
    let words = std::array::from_fn(|i| {
        u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]])
    });
    let mut count = [0u8; 8];
    count.copy_from_slice(&s[WORDS..COUNT]);
    (words, u64::from_le_bytes(count))
}

/// `h` with these state words and block count (its buffer empty, as
/// `h`'s is); `None` if sha2 would not take the state (it always does).
fn with_raw(h: &Sha256, words: [u32; 8], count: u64) -> Option<Sha256> {
    let mut s = h.serialize();
    for (i, w) in words.iter().enumerate() {
        s[4 * i..4 * i + 4].copy_from_slice(&w.to_le_bytes());
    }
    s[WORDS..COUNT].copy_from_slice(&count.to_le_bytes());
    Sha256::deserialize(&s).ok()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Whether this CPU has the SHA extensions (checked once, then cached
    /// by std).
    pub fn available() -> bool {
        std::is_x86_feature_detected!("sha")
            && std::is_x86_feature_detected!("sse4.1")
            && std::is_x86_feature_detected!("ssse3")
    }

    /// Compresses the whole blocks of `blocks` into both states.
    pub fn compress_both(a: &mut [u32; 8], b: &mut [u32; 8], blocks: &[u8]) {
        assert!(available() && blocks.len().is_multiple_of(64));
        // SAFETY: the CPU has the features the function is compiled for
        // (checked just above); it reads and writes only its arguments.
        unsafe { compress_both_sha(a, b, blocks) }
    }

    #[rustfmt::skip]
    static K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ];

    /// One state in the layout of the SHA instructions.
    #[derive(Clone, Copy)]
    struct Lanes {
        abef: __m128i,
        cdgh: __m128i,
    }

    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn load(s: &[u32; 8]) -> Lanes {
        let dcba = _mm_set_epi32(s[3] as i32, s[2] as i32, s[1] as i32, s[0] as i32);
        let hgfe = _mm_set_epi32(s[7] as i32, s[6] as i32, s[5] as i32, s[4] as i32);
        let cdab = _mm_shuffle_epi32(dcba, 0xB1);
        let efgh = _mm_shuffle_epi32(hgfe, 0x1B);
        Lanes {
            abef: _mm_alignr_epi8(cdab, efgh, 8),
            cdgh: _mm_blend_epi16(efgh, cdab, 0xF0),
        }
    }

    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn store(l: Lanes, s: &mut [u32; 8]) {
        let feba = _mm_shuffle_epi32(l.abef, 0x1B);
        let dchg = _mm_shuffle_epi32(l.cdgh, 0xB1);
        let dcba = _mm_blend_epi16(feba, dchg, 0xF0);
        let hgef = _mm_alignr_epi8(dchg, feba, 8);
        *s = [
            _mm_extract_epi32(dcba, 0) as u32,
            _mm_extract_epi32(dcba, 1) as u32,
            _mm_extract_epi32(dcba, 2) as u32,
            _mm_extract_epi32(dcba, 3) as u32,
            _mm_extract_epi32(hgef, 0) as u32,
            _mm_extract_epi32(hgef, 1) as u32,
            _mm_extract_epi32(hgef, 2) as u32,
            _mm_extract_epi32(hgef, 3) as u32,
        ];
    }

    /// Four rounds of both states with the same message words.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn rounds4(r: usize, a: &mut Lanes, b: &mut Lanes, w: __m128i) {
        let k = _mm_set_epi32(
            K[4 * r + 3] as i32,
            K[4 * r + 2] as i32,
            K[4 * r + 1] as i32,
            K[4 * r] as i32,
        );
        let t1 = _mm_add_epi32(w, k);
        let t2 = _mm_shuffle_epi32(t1, 0x0E);
        a.cdgh = _mm_sha256rnds2_epu32(a.cdgh, a.abef, t1);
        b.cdgh = _mm_sha256rnds2_epu32(b.cdgh, b.abef, t1);
        a.abef = _mm_sha256rnds2_epu32(a.abef, a.cdgh, t2);
        b.abef = _mm_sha256rnds2_epu32(b.abef, b.cdgh, t2);
    }

    /// The block's message words 4i to 4i+3, big-endian as SHA-256 reads
    /// them. One vector load and a byte shuffle: reading the words one by
    /// one costs more than the rounds this module saves.
    #[inline]
    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn word4(block: &[u8], i: usize) -> __m128i {
        let bytes = &block[16 * i..16 * i + 16];
        // SAFETY: `bytes` is 16 readable bytes (the slice above is checked),
        // all that an unaligned 128-bit load reads.
        let w = unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) };
        _mm_shuffle_epi8(
            w,
            _mm_set_epi64x(0x0C0D_0E0F_0809_0A0B, 0x0405_0607_0001_0203),
        )
    }

    #[target_feature(enable = "sha,sse2,ssse3,sse4.1")]
    fn compress_both_sha(sa: &mut [u32; 8], sb: &mut [u32; 8], blocks: &[u8]) {
        let (mut a, mut b) = (load(sa), load(sb));
        for block in blocks.chunks_exact(64) {
            let (a0, b0) = (a, b);
            let mut w = [
                word4(block, 0),
                word4(block, 1),
                word4(block, 2),
                word4(block, 3),
            ];
            for (r, wr) in w.iter().enumerate() {
                rounds4(r, &mut a, &mut b, *wr);
            }
            for r in 4..16 {
                let i = r % 4;
                let t1 = _mm_sha256msg1_epu32(w[i], w[(i + 1) % 4]);
                let t2 = _mm_alignr_epi8(w[(i + 3) % 4], w[(i + 2) % 4], 4);
                w[i] = _mm_sha256msg2_epu32(_mm_add_epi32(t1, t2), w[(i + 3) % 4]);
                rounds4(r, &mut a, &mut b, w[i]);
            }
            a.abef = _mm_add_epi32(a.abef, a0.abef);
            a.cdgh = _mm_add_epi32(a.cdgh, a0.cdgh);
            b.abef = _mm_add_epi32(b.abef, b0.abef);
            b.cdgh = _mm_add_epi32(b.cdgh, b0.cdgh);
        }
        store(a, sa);
        store(b, sb);
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod x86 {
    pub fn available() -> bool {
        false
    }

    pub fn compress_both(_: &mut [u32; 8], _: &mut [u32; 8], _: &[u8]) {
        unreachable!("only called where available() holds")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Vec<u8> {
        let mut x = 0x9e37_79b9_u32;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect()
    }

    #[test]
    fn both_end_as_if_fed_alone_whatever_the_lengths_and_offsets() {
        let data = bytes(5000);
        // `b` starts `pre` bytes into its stream (a blob's running hash at
        // a chunk's start); the pieces fed are of every awkward length.
        for pre in [0usize, 1, 63, 64, 65, 128, 200] {
            for cut in [0usize, 1, 55, 63, 64, 65, 127, 640, 1000, 4095] {
                let mut a = Sha256::new();
                let mut b = Sha256::new();
                b.update(&data[..pre]);
                let (mut ea, mut eb) = (a.clone(), b.clone());
                let body = &data[pre..];
                for part in [&body[..cut.min(body.len())], &body[cut.min(body.len())..]] {
                    for piece in part.chunks(700) {
                        update_both(&mut a, &mut b, piece);
                        ea.update(piece);
                        eb.update(piece);
                    }
                }
                assert_eq!(a.finalize(), ea.finalize(), "pre {pre} cut {cut}");
                assert_eq!(b.finalize(), eb.finalize(), "pre {pre} cut {cut}");
            }
        }
    }

    #[test]
    fn a_known_digest_comes_out_of_the_pair() {
        let mut a = Sha256::new();
        let mut b = Sha256::new();
        let data = vec![b'a'; 1_000_000];
        for piece in data.chunks(4096) {
            update_both(&mut a, &mut b, piece);
        }
        let want = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
        assert_eq!(hex::encode(a.finalize()), want);
        assert_eq!(hex::encode(b.finalize()), want);
    }

    #[test]
    fn the_interleaved_rounds_match_sha2s_compression() {
        if !x86::available() {
            return;
        }
        let data = bytes(64 * 9);
        let mut sa = [1u32, 2, 3, 4, 5, 6, 7, 8];
        let mut sb = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 9, 10, 11, 12,
        ];
        let (mut ea, mut eb) = (sa, sb);
        x86::compress_both(&mut sa, &mut sb, &data);
        let blocks: Vec<[u8; 64]> = data
            .chunks_exact(64)
            .map(|c| c.try_into().unwrap())
            .collect();
        sha2::block_api::compress256(&mut ea, &blocks);
        sha2::block_api::compress256(&mut eb, &blocks);
        assert_eq!((sa, sb), (ea, eb));
    }
}
