//! Each rule of the content sign on bytes Python's `pickle` writes (the
//! literals below are its output), and the files that must not match.

use std::io::Write;
use std::ops::Range;

use super::*;

fn sniff(bytes: &[u8]) -> Option<PickleSign> {
    let read = |r: Range<u64>| Ok(slice_of(bytes, r));
    by_content(bytes.len() as u64, &read).unwrap()
}

/// `pickle.dumps({'w': [1.5, 2], 'n': 'x'}, protocol=N)` for N = 0 to 5.
const DICT: [&[u8]; 6] = [
    b"(dp0\nVw\np1\n(lp2\nF1.5\naI2\nasVn\np3\nVx\np4\ns.",
    b"}q\x00(X\x01\x00\x00\x00wq\x01]q\x02(G?\xf8\x00\x00\x00\x00\x00\x00K\x02eX\x01\x00\x00\x00nq\x03X\x01\x00\x00\x00xq\x04u.",
    b"\x80\x02}q\x00(X\x01\x00\x00\x00wq\x01]q\x02(G?\xf8\x00\x00\x00\x00\x00\x00K\x02eX\x01\x00\x00\x00nq\x03X\x01\x00\x00\x00xq\x04u.",
    b"\x80\x03}q\x00(X\x01\x00\x00\x00wq\x01]q\x02(G?\xf8\x00\x00\x00\x00\x00\x00K\x02eX\x01\x00\x00\x00nq\x03X\x01\x00\x00\x00xq\x04u.",
    b"\x80\x04\x95 \x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01w\x94]\x94(G?\xf8\x00\x00\x00\x00\x00\x00K\x02e\x8c\x01n\x94\x8c\x01x\x94u.",
    b"\x80\x05\x95 \x00\x00\x00\x00\x00\x00\x00}\x94(\x8c\x01w\x94]\x94(G?\xf8\x00\x00\x00\x00\x00\x00K\x02e\x8c\x01n\x94\x8c\x01x\x94u.",
];

/// `pickle.dumps(OrderedDict([('layer.weight', [0.5] * 3)]), protocol=0)`
/// and `=1`: a `GLOBAL` first, as a state dict starts.
const ORDERED_0: &[u8] =
    b"ccollections\nOrderedDict\np0\n(tRp1\nVlayer.weight\np2\n(lp3\nF0.5\naF0.5\naF0.5\nas.";
const ORDERED_1: &[u8] = b"ccollections\nOrderedDict\nq\x00)Rq\x01X\x0c\x00\x00\x00layer.weightq\x02]q\x03(G?\xe0\x00\x00\x00\x00\x00\x00G?\xe0\x00\x00\x00\x00\x00\x00G?\xe0\x00\x00\x00\x00\x00\x00es.";

/// `lzma.compress(DICT[0])`.
const XZ_DICT_0: &str = "fd377a585a000004e6d6b4460200210116000000742fe5a3010028286470300a56770a70310a286c70320a46312e350a6149320a6173566e0a70330a56780a70340a732e000000004126b1f616634836000141290353568b1fb6f37d010000000004595a";

#[test]
fn every_protocol_at_the_start() {
    assert_eq!(sniff(DICT[0]), Some(PickleSign::Opcodes(0)));
    assert_eq!(sniff(DICT[1]), Some(PickleSign::Opcodes(1)));
    for (p, bytes) in DICT.iter().enumerate().skip(2) {
        assert_eq!(sniff(bytes), Some(PickleSign::Protocol(p as u8)), "{p}");
    }
    assert_eq!(sniff(ORDERED_0), Some(PickleSign::Opcodes(0)));
    assert_eq!(sniff(ORDERED_1), Some(PickleSign::Opcodes(1)));
    assert_eq!(sniff(b"I1\n."), Some(PickleSign::Opcodes(0)));
    assert_eq!(
        sniff(&[b"\x80\x01".as_slice(), DICT[1]].concat()),
        Some(PickleSign::Opcodes(1))
    );
}

#[test]
fn a_protocol_0_pickle_longer_than_the_head() {
    let mut p = b"(dp0\n".to_vec();
    for i in 0..2000 {
        p.extend_from_slice(format!("Vk{i}\np{}\nI{i}\ns", i + 1).as_bytes());
    }
    p.push(b'.');
    assert!(p.len() as u64 > HEAD);
    assert_eq!(sniff(&p), Some(PickleSign::Opcodes(0)));
    // Cut inside the head: not a pickle (it could not load).
    assert_eq!(sniff(&p[..40]), None);
}

#[test]
fn text_and_weights_are_not_pickles() {
    let safetensors = {
        let header = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
        let mut v = (header.len() as u64).to_le_bytes().to_vec();
        v.extend_from_slice(header);
        v.extend_from_slice(&[0; 8]);
        v
    };
    let mark_header = [b"(N\0\0\0\0\0\0".as_slice(), b"{\"a\":1}".as_slice()].concat();
    let cases: [(&str, &[u8]); 16] = [
        (
            "README",
            &b"# acme/tiny\n\nA tiny model. (c) 2024 Acme\n"[..],
        ),
        ("card", b"---\nlicense: apache-2.0\n---\n# acme/pickled\n"),
        ("N.B.", b"N.B. this model is a test.\n"),
        ("(c)", b"(c) 2024 Acme Corp\nAll rights reserved.\n"),
        ("I am", b"I am a README\n"),
        ("lorem", b"lorem ipsum\n"),
        ("json", br#"{"architectures": ["LlamaForCausalLM"]}"#),
        ("tokenizer", br#"{"version":"1.0","model":{"type":"BPE"}}"#),
        ("vocab", b"[PAD]\n[UNK]\n[CLS]\nthe\n"),
        ("merges", b"#version: 0.2\n\xc4\xa0 t\n"),
        ("tiktoken", b"IQ== 0\nIg== 1\n"),
        ("numbers", b"0.5\n1.5\n2\n"),
        (
            "gguf",
            b"GGUF\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00",
        ),
        (
            "sentencepiece",
            b"\x0a\x0b\x0a\x05<unk>\x15\x00\x00\x00\x00",
        ),
        ("empty", b""),
        ("proto 9", b"\x80\x09"),
    ];
    for (what, bytes) in cases {
        assert_eq!(sniff(bytes), None, "{what}");
    }
    assert_eq!(sniff(&safetensors), None);
    assert_eq!(sniff(&mark_header), None);
}

fn compress(format: &str, data: &[u8]) -> Vec<u8> {
    match format {
        "gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "bzip2" => {
            let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        "zstd" => zstd::encode_all(data, 3).unwrap(),
        _ => hex::decode(XZ_DICT_0).unwrap(),
    }
}

#[test]
fn compressed_pickles() {
    for format in ["gzip", "bzip2", "xz", "zstd"] {
        let c = compress(format, DICT[0]);
        assert_eq!(
            sniff(&c),
            Some(PickleSign::Compressed(
                format,
                Box::new(PickleSign::Opcodes(0))
            )),
            "{format}"
        );
    }
    let c = compress("gzip", DICT[4]);
    assert_eq!(
        sniff(&c).map(|s| s.to_string()).as_deref(),
        Some("it is gzip-compressed, and decompressed it starts with pickle protocol 4's opcode")
    );
    // Compressed text is no pickle, and neither is a gzip cut short.
    assert_eq!(sniff(&compress("gzip", b"# README\nhello\n")), None);
    assert_eq!(sniff(&compress("zstd", br#"{"a": 1}"#)), None);
    let c = compress("gzip", DICT[0]);
    assert_eq!(sniff(&c[..12]), None);
}

/// A zip of `members` (name, data, deflated), as Python's `zipfile` writes.
fn zip(members: &[(&str, &[u8], bool)]) -> Vec<u8> {
    let mut z = Vec::new();
    let mut cd = Vec::new();
    for (name, data, deflate) in members {
        let body = if *deflate {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        } else {
            data.to_vec()
        };
        let method: u16 = if *deflate { 8 } else { 0 };
        let fixed = |sig: &[u8], extra: usize| {
            let mut h = sig.to_vec();
            h.extend_from_slice(&[20, 0, 20, 0][..extra]);
            h.extend_from_slice(&[0, 0]);
            h.extend_from_slice(&method.to_le_bytes());
            h.extend_from_slice(&[0; 8]);
            h.extend_from_slice(&(body.len() as u32).to_le_bytes());
            h.extend_from_slice(&(data.len() as u32).to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&[0, 0]);
            h
        };
        let offset = z.len() as u32;
        z.extend_from_slice(&fixed(b"PK\x03\x04", 2));
        z.extend_from_slice(name.as_bytes());
        z.extend_from_slice(&body);
        cd.extend_from_slice(&fixed(b"PK\x01\x02", 4));
        cd.extend_from_slice(&[0; 10]);
        cd.extend_from_slice(&offset.to_le_bytes());
        cd.extend_from_slice(name.as_bytes());
    }
    let cd_at = z.len() as u32;
    z.extend_from_slice(&cd);
    z.extend_from_slice(b"PK\x05\x06\x00\x00\x00\x00");
    z.extend_from_slice(&(members.len() as u16).to_le_bytes());
    z.extend_from_slice(&(members.len() as u16).to_le_bytes());
    z.extend_from_slice(&(cd.len() as u32).to_le_bytes());
    z.extend_from_slice(&cd_at.to_le_bytes());
    z.extend_from_slice(&[0; 2]);
    z
}

#[test]
fn zips_by_entry_name_and_by_member_content() {
    let torch = zip(&[
        ("archive/data.pkl", DICT[2], false),
        ("archive/data/0", &[0u8; 64], false),
    ]);
    assert_eq!(
        sniff(&torch),
        Some(PickleSign::ZipEntry("archive/data.pkl".into()))
    );
    let pickle = zip(&[
        ("weights/readme.txt", b"just text\n", true),
        ("data.pickle", DICT[0], true),
    ]);
    assert_eq!(
        sniff(&pickle),
        Some(PickleSign::ZipEntry("data.pickle".into()))
    );
    for deflate in [false, true] {
        let z = zip(&[("a.txt", b"hello\n", deflate), ("blob", DICT[1], deflate)]);
        assert_eq!(
            sniff(&z),
            Some(PickleSign::ZipMember(
                "blob".into(),
                Box::new(PickleSign::Opcodes(1))
            ))
        );
    }
    let clean = zip(&[
        ("config.json", br#"{"a": 1}"#, true),
        (
            "model.safetensors",
            &[8, 0, 0, 0, 0, 0, 0, 0, b'{', b'}'],
            false,
        ),
    ]);
    assert_eq!(sniff(&clean), None);
    // A central directory pointing past the end: not read.
    let mut z = torch.clone();
    let n = z.len();
    z[n - 6..n - 2].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(sniff(&z), None);
}

/// A tar of `members`, as Python's `tarfile` writes (ustar headers).
fn tar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut t = Vec::new();
    for (name, data) in members {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000644");
        h[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
        h[136..147].copy_from_slice(b"00000000000");
        h[156] = b'0';
        h[257..263].copy_from_slice(b"ustar\0");
        h[263..265].copy_from_slice(b"00");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        t.extend_from_slice(&h);
        t.extend_from_slice(data);
        t.resize(t.len().next_multiple_of(512), 0);
    }
    t.resize(t.len() + 1024, 0);
    t
}

#[test]
fn tars_and_numpy_objects() {
    let legacy = tar(&[
        ("sys_info", DICT[0]),
        ("pickle", DICT[2]),
        ("storages", DICT[2]),
        ("tensors", DICT[2]),
    ]);
    assert_eq!(
        sniff(&legacy),
        Some(PickleSign::TarMember(
            "sys_info".into(),
            Box::new(PickleSign::Opcodes(0))
        ))
    );
    let late = tar(&[("README.md", b"# hi\n"), ("x/state", DICT[5])]);
    assert_eq!(
        sniff(&late),
        Some(PickleSign::TarMember(
            "x/state".into(),
            Box::new(PickleSign::Protocol(5))
        ))
    );
    assert_eq!(sniff(&tar(&[("README.md", b"# hi\n")])), None);
    let tgz = compress("gzip", &legacy);
    assert!(matches!(
        sniff(&tgz),
        Some(PickleSign::Compressed("gzip", inner)) if matches!(*inner, PickleSign::TarMember(..))
    ));

    let npy = |descr: &str| {
        let header = format!("{{'descr': {descr}, 'fortran_order': False, 'shape': (2,), }}");
        let mut v = b"\x93NUMPY\x01\x00".to_vec();
        v.extend_from_slice(&(header.len() as u16).to_le_bytes());
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(DICT[3]);
        v
    };
    assert_eq!(sniff(&npy("'|O'")), Some(PickleSign::NumpyObject));
    assert_eq!(
        sniff(&npy("[('a', '<f4'), ('b', '|O')]")),
        Some(PickleSign::NumpyObject)
    );
    assert_eq!(sniff(&npy("'<f4'")), None);
    assert_eq!(sniff(&npy("[('O', '<f4')]")), None);
    let npz = zip(&[("arr_0.npy", &npy("'|O'"), true)]);
    assert_eq!(
        sniff(&npz),
        Some(PickleSign::ZipMember(
            "arr_0.npy".into(),
            Box::new(PickleSign::NumpyObject)
        ))
    );
}

#[test]
fn bounded_reads() {
    // A 1 TiB "file" of zeros but a gzip magic: at most the bounds read.
    let read_total = std::cell::Cell::new(0u64);
    let read = |r: Range<u64>| {
        read_total.set(read_total.get() + (r.end - r.start));
        let mut v = vec![0u8; (r.end - r.start) as usize];
        if r.start == 0 {
            v[..3].copy_from_slice(&[0x1f, 0x8b, 0x08]);
        }
        Ok(v)
    };
    assert_eq!(by_content(1 << 40, &read).unwrap(), None);
    assert!(read_total.get() <= HEAD + MAX_COMPRESSED_READ);
}

#[test]
fn extensions() {
    assert_eq!(
        by_extension("sub/Model.PTH"),
        Some(PickleSign::Extension(".pth"))
    );
    assert_eq!(
        by_extension("model.pickle"),
        Some(PickleSign::Extension(".pickle"))
    );
    assert_eq!(by_extension("model.safetensors"), None);
}
