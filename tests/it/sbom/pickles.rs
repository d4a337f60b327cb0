//! `mirror policy model-files no-pickle` on pickles made by Python itself
//! (`pickle` of every protocol under any name, `gzip`, `bz2`, `lzma`, the
//! `zstd` tool, `zipfile`, numpy's object arrays from PyPI, and
//! `torch.save`'s legacy tar layout written by hand): each is refused,
//! naming the rule that matched, and the store is left as it was; clean
//! safetensors, JSON, a README and a float array import.

use std::path::Path;

use llmgw_fixture::kit::{Kit, write_dir};

use super::kit::{fails, ok, python, run_python};
use super::policy::{import, policy, unchanged};

/// The venv with numpy (`.venv-pickle`, made by scripts/setup.sh).
fn numpy_python() -> std::path::PathBuf {
    python("LLMGW_PICKLE_VENV", ".venv-pickle", "numpy", "numpy==2.4.6")
}

/// Writes every variant into `sys.argv[1]/bad` and the clean files into
/// `sys.argv[1]/good`.
const MAKE: &str = r#"
import bz2, gzip, io, json, lzma, os, pickle, struct, subprocess, sys, tarfile, zipfile
import numpy as np

root = sys.argv[1]
bad, good = os.path.join(root, "bad"), os.path.join(root, "good")
os.makedirs(bad); os.makedirs(good)
def put(d, name, data):
    path = os.path.join(d, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
state = {"layer.weight": [0.5, 1.5], "step": 7, "name": "acme"}
for p in range(6):
    put(bad, f"weights-p{p}.dat", pickle.dumps(state, protocol=p))
put(bad, "model.pickle", pickle.dumps(state, protocol=0))
put(bad, "states/optimizer.state", pickle.dumps(state, protocol=1))
put(bad, "weights.dat.gz", gzip.compress(pickle.dumps(state, protocol=0)))
put(bad, "weights.dat.bz2", bz2.compress(pickle.dumps(state, protocol=1)))
put(bad, "weights.dat.xz", lzma.compress(pickle.dumps(state, protocol=5)))
put(bad, "weights-p4.dat.copy", pickle.dumps(state, protocol=4))
subprocess.run(["zstd", "-q", "-o", os.path.join(bad, "weights.dat.zst"),
                os.path.join(bad, "weights-p4.dat.copy")], check=True)
os.remove(os.path.join(bad, "weights-p4.dat.copy"))
# torch's zip format under another name, its pickle called data.pickle.
z = io.BytesIO()
with zipfile.ZipFile(z, "w", zipfile.ZIP_STORED) as f:
    f.writestr("archive/data.pickle", pickle.dumps(state, protocol=2))
    f.writestr("archive/data/0", b"\0" * 64)
put(bad, "model.safetensors", z.getvalue())
# A zip whose pickle has no pickle name, deflated.
z = io.BytesIO()
with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as f:
    f.writestr("README.txt", "weights inside\n")
    f.writestr("weights/state", pickle.dumps(state, protocol=0))
put(bad, "checkpoint.zip", z.getvalue())
arr = io.BytesIO()
np.save(arr, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
put(bad, "objects.npy", arr.getvalue())
# torch.save's legacy tar layout (torch/serialization.py legacy_load).
t = io.BytesIO()
sys_info = dict(protocol_version=1001, little_endian=True,
                type_sizes=dict(short=2, int=4, long=4))
with tarfile.open(fileobj=t, mode="w") as tar:
    for name, data in [("sys_info", pickle.dumps(sys_info, protocol=2)),
                       ("pickle", pickle.dumps(state, protocol=2)),
                       ("storages", pickle.dumps(0, protocol=2)),
                       ("tensors", pickle.dumps(0, protocol=2))]:
        info = tarfile.TarInfo(name); info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
put(bad, "legacy.model", t.getvalue())

header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
put(good, "model.safetensors", struct.pack("<Q", len(header)) + header + struct.pack("<2f", 0.5, 1.5))
put(good, "config.json", json.dumps({"architectures": ["LlamaForCausalLM"], "vocab_size": 32}).encode())
put(good, "tokenizer.json", json.dumps({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}}}).encode())
put(good, "README.md", b"---\nlicense: apache-2.0\n---\n# acme/pickles\n\nN.B. (c) 2024 Acme.\n")
arr = io.BytesIO()
np.save(arr, np.arange(6, dtype=np.float32))
put(good, "floats.npy", arr.getvalue())
put(good, "notes.txt.gz", gzip.compress(b"just text\n" * 50))
"#;

/// Each variant's file and the words of the rule it must be refused by.
const REFUSED: [(&str, &str); 16] = [
    (
        "weights-p0.dat",
        "it starts with a pickle of protocol 0, found by walking its opcodes",
    ),
    (
        "weights-p1.dat",
        "it starts with a pickle of protocol 1, found by walking its opcodes",
    ),
    (
        "weights-p2.dat",
        "it starts with pickle protocol 2's opcode",
    ),
    (
        "weights-p3.dat",
        "it starts with pickle protocol 3's opcode",
    ),
    (
        "weights-p4.dat",
        "it starts with pickle protocol 4's opcode",
    ),
    (
        "weights-p5.dat",
        "it starts with pickle protocol 5's opcode",
    ),
    (
        "model.pickle",
        "its extension is .pickle, and it starts with a pickle of protocol 0",
    ),
    (
        "states/optimizer.state",
        "it starts with a pickle of protocol 1",
    ),
    (
        "weights.dat.gz",
        "it is gzip-compressed, and decompressed it starts with a pickle of protocol 0",
    ),
    (
        "weights.dat.bz2",
        "it is bzip2-compressed, and decompressed it starts with a pickle of protocol 1",
    ),
    (
        "weights.dat.xz",
        "it is xz-compressed, and decompressed it starts with pickle protocol 5's opcode",
    ),
    (
        "weights.dat.zst",
        "it is zstd-compressed, and decompressed it starts with pickle protocol 4's opcode",
    ),
    (
        "model.safetensors",
        "it is a zip holding the pickle archive/data.pickle",
    ),
    (
        "checkpoint.zip",
        "it is a zip whose member weights/state starts with a pickle of protocol 0",
    ),
    (
        "objects.npy",
        "it is a numpy .npy array of Python objects, dtype 'O', whose data is a pickle",
    ),
    (
        "legacy.model",
        "it is a tar whose member sys_info starts with pickle protocol 2's opcode",
    ),
];

/// Every file under `dir`, as paths relative to `root`, sorted.
fn files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(root, &p, out);
        } else {
            out.push(p.strip_prefix(root).unwrap().to_str().unwrap().to_string());
        }
    }
}

/// A bundle of repository `acme/pickles` holding every file under `dir`.
fn bundle_of(dir: &Path, out: &Path) -> String {
    let mut kit = Kit::new();
    let mut names = Vec::new();
    files(dir, dir, &mut names);
    for rel in names {
        kit.model_file(
            "acme/pickles",
            &rel,
            &std::fs::read(dir.join(&rel)).unwrap(),
        );
    }
    write_dir(out, &kit.entries());
    kit.sha256()
}

#[test]
fn no_pickle_refuses_every_pickle_by_its_content() {
    let py = numpy_python();
    let d = tempfile::tempdir().unwrap();
    let made = d.path().join("made");
    run_python(&py, MAKE, &[made.to_str().unwrap()]);
    let bad_sha = bundle_of(&made.join("bad"), &d.path().join("bad"));
    let good_sha = bundle_of(&made.join("good"), &d.path().join("good"));

    let store = d.path().join("store");
    policy(&store, "no-pickle");
    let err = fails(&import(&store, &d.path().join("bad"), &bad_sha), 1);
    for (path, rule) in REFUSED {
        let line = format!("{path}: loads with pickle ({rule}");
        assert!(err.contains(&line), "{line:?} not in:\n{err}");
    }
    assert_eq!(
        err.matches("acme/pickles@").count(),
        REFUSED.len(),
        "exactly those:\n{err}"
    );
    // No advice to carry a "safetensors" file that is a pickle itself.
    assert!(!err.contains("has model.safetensors"), "{err}");
    assert!(
        err.contains("model.safetensors is named like safetensors or GGUF but is a pickle"),
        "{err}"
    );
    assert!(
        err.contains("convert the weights to real safetensors"),
        "{err}"
    );
    assert!(err.contains("Nothing was added to the store"), "{err}");
    unchanged(&store);

    ok(&import(&store, &d.path().join("good"), &good_sha));
}
