//! Making volume sets with the real `llmgw bundle create` against the
//! fixture, and carrying them through real FAT32 and ISO 9660 images.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use llmgw_fixture::{Fixture, FixtureOptions};
use llmgw_shared::manifest::Manifest;

pub use crate::bundle_kit::s;
use crate::bundle_kit::{self, stderr, stdout};

/// A fixture with one 1 MiB model file (acme/big), so that a small
/// --chunk-size cuts it into several chunks.
pub fn fixture() -> Fixture {
    Fixture::start_blocking(FixtureOptions {
        big_files: 1,
        big_mib: 1,
        ..FixtureOptions::default()
    })
    .expect("start the fixture upstream")
}

/// `llmgw bundle create` of acme/big, acme/tiny and llama.cpp into
/// `dir/OUT`, with these extra flags.
pub fn create_cmd(fx: &Fixture, dir: &Path, out: &str, extra: &[&str]) -> Output {
    bundle_kit::llmgw()
        .args(["bundle", "create", "--arch", "amd64"])
        .args(["--out", s(&dir.join(out))])
        .args(["--cache", s(&dir.join("cache"))])
        .args(["--github-api", &fx.github_api_url()])
        .args(["--hf-endpoint", &fx.hf_endpoint()])
        .args(["--model", "acme/big", "--model", "acme/tiny"])
        .args(["--engine", "llamacpp=b6123"])
        .args(extra)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .env_remove("HF_TOKEN")
        .env_remove("HF_ENDPOINT")
        .output()
        .unwrap()
}

/// A made volume set: its files (data, then parity) and manifest.
pub struct Set {
    pub data: Vec<PathBuf>,
    pub parity: Vec<PathBuf>,
    pub sha_file: PathBuf,
    pub sha256: String,
    pub manifest: Manifest,
}

/// Creates volumes (600 KiB, chunks of 256 KiB) and reads back what was made.
pub fn create(fx: &Fixture, dir: &Path, name: &str, extra: &[&str]) -> Set {
    create_sized(fx, dir, name, "600K", "256K", extra)
}

/// Creates volumes of this size and chunk size.
pub fn create_sized(
    fx: &Fixture,
    dir: &Path,
    name: &str,
    volume_size: &str,
    chunk_size: &str,
    extra: &[&str],
) -> Set {
    let mut args = vec!["--volume-size", volume_size, "--chunk-size", chunk_size];
    args.extend_from_slice(extra);
    let o = create_cmd(fx, dir, &format!("{name}.tar"), &args);
    assert!(o.status.success(), "create: {}", stderr(&o));
    let sha256 = stdout(&o).trim().to_string();
    let sha_file = dir.join(format!("{name}.sha256"));
    assert_eq!(
        std::fs::read_to_string(&sha_file).unwrap(),
        format!("{sha256}  manifest.json\n")
    );
    let mut data = Vec::new();
    let mut parity = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&format!("{name}.v")) {
            data.push(e.path());
        } else if n.starts_with(&format!("{name}.p")) {
            parity.push(e.path());
        }
    }
    data.sort();
    parity.sort();
    let head = llmgw_mirror::read_head(&data[0]).unwrap();
    assert_eq!(head.manifest_sha256, sha256);
    let manifest = Manifest::from_json_bytes(&head.manifest_bytes).unwrap();
    Set {
        data,
        parity,
        sha_file,
        sha256,
        manifest,
    }
}

/// Runs a tool that must succeed.
pub fn tool(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd).args(args).output().unwrap_or_else(|e| {
        panic!("{cmd}: {e}; run scripts/setup.sh (dosfstools, mtools, xorriso)")
    });
    assert!(o.status.success(), "{cmd} {args:?}: {}", stderr(&o));
    stdout(&o)
}

/// Copies `files` into a fresh FAT32 image (mkfs.vfat, mcopy; no mount)
/// and back out into `out`, as a USB disk would carry them.
pub fn through_fat32(dir: &Path, files: &[PathBuf], out: &Path) -> Vec<PathBuf> {
    let img = dir.join("usb.img");
    let _ = std::fs::remove_file(&img);
    // 40 MiB: enough clusters for FAT32 with 512-byte clusters.
    tool(
        "mkfs.vfat",
        &["-F", "32", "-S", "512", "-s", "1", "-C", s(&img), "40960"],
    );
    for f in files {
        tool("mcopy", &["-i", s(&img), s(f), "::/"]);
    }
    let listing = tool("mdir", &["-i", s(&img), "-b", "::/"]);
    assert_eq!(listing.lines().count(), files.len(), "{listing}");
    std::fs::create_dir_all(out).unwrap();
    let mut back = Vec::new();
    for f in files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let to = out.join(name);
        tool("mcopy", &["-i", s(&img), &format!("::/{name}"), s(&to)]);
        back.push(to);
    }
    let fsck = Command::new("fsck.vfat")
        .args(["-n", s(&img)])
        .output()
        .unwrap();
    assert!(fsck.status.success(), "fsck.vfat: {}", stdout(&fsck));
    std::fs::remove_file(&img).unwrap();
    back
}

/// Burns `files` into an ISO 9660 image with Rock Ridge and Joliet names
/// (xorriso) and extracts them into `out`, as a disc would carry them.
pub fn through_iso(dir: &Path, files: &[PathBuf], out: &Path) -> Vec<PathBuf> {
    let stage = dir.join("disc");
    std::fs::create_dir_all(&stage).unwrap();
    for f in files {
        std::fs::copy(f, stage.join(f.file_name().unwrap())).unwrap();
    }
    let iso = dir.join("disc.iso");
    tool(
        "xorriso",
        &[
            "-as",
            "mkisofs",
            "-R",
            "-J",
            "-V",
            "LLMGW",
            "-o",
            s(&iso),
            s(&stage),
        ],
    );
    std::fs::remove_dir_all(&stage).unwrap();
    std::fs::create_dir_all(out).unwrap();
    tool(
        "xorriso",
        &["-osirrox", "on", "-indev", s(&iso), "-extract", "/", s(out)],
    );
    std::fs::remove_file(&iso).unwrap();
    files
        .iter()
        .map(|f| out.join(f.file_name().unwrap()))
        .collect()
}

/// Flips one byte of a file at `at`.
pub fn flip(path: &Path, at: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x55], at).unwrap();
}

/// Damages byte `skip` of entry `name`'s data, leaving the tar readable.
pub fn damage_entry(path: &Path, name: &str, skip: u64) {
    let mut a = tar::Archive::new(std::fs::File::open(path).unwrap());
    let at = a
        .entries()
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| e.path().unwrap().to_string_lossy() == name)
        .map(|e| e.raw_file_position())
        .unwrap_or_else(|| panic!("{name} in {}", path.display()));
    flip(path, at + skip);
}

/// Damages the first byte of the first piece after the head entries (a
/// chunk or a whole file), leaving the tar itself readable.
pub fn damage_first_piece(path: &Path) {
    let mut a = tar::Archive::new(std::fs::File::open(path).unwrap());
    let at = a
        .entries()
        .unwrap()
        .map(|e| e.unwrap())
        .find(|e| {
            let p = e.path().unwrap().to_string_lossy().into_owned();
            (p.starts_with("blobs/") || p.starts_with("chunks/")) && e.size() > 0
        })
        .map(|e| e.raw_file_position())
        .expect("a piece");
    flip(path, at);
}

/// `bundle import --json` of these volume files into `store`.
pub fn import(store: &Path, sha: &str, files: &[&PathBuf]) -> Output {
    let mut c = bundle_kit::llmgw();
    c.args([
        "bundle",
        "import",
        "--json",
        "--store",
        s(store),
        "--sha256",
        sha,
    ]);
    c.args(files.iter().map(|p| s(p)));
    c.output().unwrap()
}

pub fn json(o: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("{e}: {}", stdout(o)))
}

pub fn nums(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect()
}

pub fn held(store: &Path) -> usize {
    std::fs::read_dir(store.join("bundles"))
        .map(|r| r.count())
        .unwrap_or(0)
}

/// The store serves the bundle: `mirror verify` finds every blob intact.
pub fn assert_imported(store: &Path, set: &Set, o: &Output) {
    assert!(o.status.success(), "{}\n{}", stdout(o), stderr(o));
    let j = json(o);
    assert_eq!(j["status"], "imported", "{j}");
    assert_eq!(j["manifest_sha256"], set.sha256.as_str());
    let v = bundle_kit::llmgw()
        .args(["mirror", "verify", "--store", s(store)])
        .output()
        .unwrap();
    assert!(v.status.success(), "{}", stderr(&v));
    assert!(
        std::fs::read_dir(store.join("tmp"))
            .unwrap()
            .next()
            .is_none()
    );
}
