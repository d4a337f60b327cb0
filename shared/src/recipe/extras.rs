//! Runtime extras: the files an engine fetches when it runs, not when it
//! installs — an environment whose wheels are all local still reaches the
//! internet for these (issue #32) — with where each is published, the
//! digest its publisher pins, and the setting that points the engine at
//! another copy.
//!
//! Invariant: every file here carries the sha256 its publisher states in
//! its own source (cited beside it), never one taken from the bytes we
//! happened to download; a bundle fetched from elsewhere (`--extras-base`)
//! is checked against these same values. A file is named by its
//! upstream's host and path, which is also where the mirror serves it
//! (`/extras/<host>/<path>`), so the upstream's layout is kept and one base
//! per host suffices.

use super::version_before;

/// One file an engine fetches at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtraFile {
    /// The host it is published on: `openaipublic.blob.core.windows.net`.
    pub host: &'static str,
    /// Its path on that host, no leading `/`: `encodings/o200k_base.tiktoken`.
    pub path: &'static str,
    /// Its length in bytes, as published.
    pub size: u64,
    /// The sha256 the publisher pins for it (lower-case hex).
    pub sha256: &'static str,
    /// Where that sha256 is stated: shown in the manifest and to people.
    pub digest_from: &'static str,
}

impl ExtraFile {
    /// Its upstream URL.
    pub fn url(&self) -> String {
        upstream_url(self.host, self.path)
    }
}

/// The upstream URL of the extra at `host` and `path`.
pub fn upstream_url(host: &str, path: &str) -> String {
    format!("https://{host}/{path}")
}

impl SettingKind {
    /// Its name in `GET /-/env`.
    pub fn label(self) -> &'static str {
        match self {
            SettingKind::Directory => "directory",
            SettingKind::Sha1UrlCache => "sha1-url-cache",
            SettingKind::BaseUrl => "base-url",
        }
    }

    /// The name a file at `host` and `path` has in a directory of this
    /// kind: its last path segment, or the sha1 of its upstream URL
    /// (tiktoken's `read_file_cached`: `hashlib.sha1(blobpath.encode())`);
    /// `None` for a base URL, which holds the upstream's layout.
    pub fn file_name(self, host: &str, path: &str) -> Option<String> {
        use sha1::Digest;
        match self {
            SettingKind::Directory => path.rsplit('/').next().map(str::to_string),
            SettingKind::Sha1UrlCache => Some(hex::encode(sha1::Sha1::digest(
                upstream_url(host, path).as_bytes(),
            ))),
            SettingKind::BaseUrl => None,
        }
    }
}

/// How a client is pointed at a copy of its extras.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingKind {
    /// A local directory holding the files by their file name (the last
    /// segment of the path): the node fetches them from the mirror first.
    Directory,
    /// A cache directory whose entries are named by the sha1 of the
    /// upstream URL (tiktoken's `read_file_cached`): the node fetches each
    /// file from the mirror into `DIR/<sha1 of its upstream URL>`.
    Sha1UrlCache,
    /// A base URL the upstream path is appended to: the mirror's
    /// `/extras/<host>/` serves as it is.
    BaseUrl,
}

/// The variable one client reads to find its extras elsewhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The environment variable.
    pub variable: &'static str,
    /// What its value is.
    pub kind: SettingKind,
    /// Which client reads it, and where in its source (for people).
    pub read_by: &'static str,
    /// For a base URL: the path under the host that the variable names
    /// (with its trailing `/`), empty when the host's root is the base.
    pub base_path: &'static str,
}

/// The extras of an engine from one version on.
#[derive(Debug, Clone, Copy)]
pub struct EngineExtras {
    /// The recipe table's engine name.
    pub engine: &'static str,
    /// The first version that fetches them.
    pub since: &'static str,
    /// The files.
    pub files: &'static [ExtraFile],
    /// The settings that point the engine's clients at a copy.
    pub settings: &'static [Setting],
}

/// The host OpenAI publishes tiktoken's encodings on.
pub const OPENAI_ENCODINGS_HOST: &str = "openaipublic.blob.core.windows.net";

/// The BPE encodings gpt-oss's Harmony tokenizer and tiktoken load. The
/// sha256 of each is the `expected_hash` pinned in two sources that agree:
/// tiktoken's `tiktoken_ext/openai_public.py` (openai/tiktoken 0.14.0,
/// commit 4e71bbe0c078468e00fefbf94b39849389f346e5: `o200k_base()` and
/// `cl100k_base()`) and Harmony's `src/tiktoken_ext/public_encodings.rs`
/// (openai/harmony 0.0.8, commit ec7606df9e87e3d0a1fec9f50928c1e407f0c438:
/// `Encoding::expected_hash`; `o200k_harmony`, the gpt-oss encoding, is
/// `o200k_base.tiktoken` with its own special tokens). The sizes are those
/// of the files with these hashes (the copies in the tiktoken-rs 0.12.1
/// crate hash to the same values).
pub const OPENAI_ENCODINGS: [ExtraFile; 2] = [
    openai_encoding(
        "encodings/o200k_base.tiktoken",
        3_613_922,
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    openai_encoding(
        "encodings/cl100k_base.tiktoken",
        1_681_126,
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
];

/// An encoding OpenAI publishes: on [`OPENAI_ENCODINGS_HOST`], its sha256
/// the one tiktoken and Harmony both pin.
const fn openai_encoding(path: &'static str, size: u64, sha256: &'static str) -> ExtraFile {
    ExtraFile {
        host: OPENAI_ENCODINGS_HOST,
        path,
        size,
        sha256,
        digest_from: "expected_hash in tiktoken_ext/openai_public.py (openai/tiktoken) and \
                      src/tiktoken_ext/public_encodings.rs (openai/harmony)",
    }
}

/// How the clients of [`OPENAI_ENCODINGS`] find a copy.
///
/// Harmony (openai_harmony, which vLLM and SGLang load gpt-oss's tokenizer
/// with) reads `TIKTOKEN_ENCODINGS_BASE` itself, in Rust
/// (`src/tiktoken_ext/public_encodings.rs`, `Encoding::load`): a local
/// directory joined with the file name, never a URL, and the file's sha256
/// is then checked against the pinned value. Without it Harmony downloads
/// from the fixed public URL (its `set_tiktoken_base_url` is reachable
/// from the wasm binding only). tiktoken itself (Python) reads no base
/// variable: `tiktoken/load.py` `read_file_cached` looks in
/// `TIKTOKEN_CACHE_DIR` for a file named by the sha1 of the upstream URL
/// and uses it when its sha256 is the pinned one.
pub const OPENAI_ENCODINGS_SETTINGS: [Setting; 2] = [
    Setting {
        variable: "TIKTOKEN_ENCODINGS_BASE",
        kind: SettingKind::Directory,
        read_by: "openai_harmony (gpt-oss in vLLM, SGLang): src/tiktoken_ext/public_encodings.rs",
        base_path: "",
    },
    Setting {
        variable: "TIKTOKEN_CACHE_DIR",
        kind: SettingKind::Sha1UrlCache,
        read_by: "tiktoken: tiktoken/load.py read_file_cached",
        base_path: "",
    },
];

/// Every engine's runtime extras, by the first version that fetches them.
///
/// vLLM loads gpt-oss's tokenizer through openai_harmony since its gpt-oss
/// support (0.10.1; the offline failure is vllm#22525, openai/harmony#46);
/// SGLang since 0.5 (its gpt-oss support). Every version the table
/// builds is later than both.
///
/// Not here: FlashInfer's kernel cubins. `flashinfer/jit/cubin_loader.py`
/// fetches them from `FLASHINFER_CUBINS_REPOSITORY` (default
/// `https://edge.urm.nvidia.com/artifactory/sw-kernelinferencelibrary-public-generic-local/`)
/// into `FLASHINFER_CUBIN_DIR` (`flashinfer/jit/env.py`) only when the file
/// is not already in the cubin directory; the `flashinfer-cubin` wheel,
/// which the environment's resolve adds beside `flashinfer-python`
/// (`super::companions`, where the code is cited), holds every file that
/// loader asks for, so the loose cubins are not carried. The one exception
/// (the CuTe DSL FMHA `.so` kernels from FlashInfer 0.6.10) is carried
/// from the resolved `flashinfer-python`'s pins (`super::flashinfer_dsl`),
/// not from this table: its files are only known once the pinned
/// `checksums.txt` is read; [`FLASHINFER_DSL_SETTING`] points at them.
pub const ENGINE_EXTRAS: [EngineExtras; 2] = [
    EngineExtras {
        engine: "vllm",
        since: "0.10.1",
        files: &OPENAI_ENCODINGS,
        settings: &OPENAI_ENCODINGS_SETTINGS,
    },
    EngineExtras {
        engine: "sglang",
        since: "0.5",
        files: &OPENAI_ENCODINGS,
        settings: &OPENAI_ENCODINGS_SETTINGS,
    },
];

/// How FlashInfer finds its CuTe DSL FMHA kernels elsewhere: the loader
/// (`flashinfer/attention/cute_dsl/fmha.py` `_get_checksums` and
/// `_load_from_artifact`, through `flashinfer/jit/cubin_loader.py`
/// `get_artifact`) fetches `safe_urljoin(FLASHINFER_CUBINS_REPOSITORY,
/// "{DSL_FMHA dir}{cpu}/{sm}/checksums.txt")` and then each
/// `{variant}.so` beside it, into `FLASHINFER_CUBIN_DIR`, checking each
/// kernel against its line. A base URL: the mirror's
/// `/extras/edge.urm.nvidia.com/artifactory/…/` keeps the layout.
pub const FLASHINFER_DSL_SETTING: Setting = Setting {
    variable: "FLASHINFER_CUBINS_REPOSITORY",
    kind: SettingKind::BaseUrl,
    read_by: "flashinfer: attention/cute_dsl/fmha.py _load_from_artifact, \
              jit/cubin_loader.py get_artifact (the CuTe DSL FMHA kernels)",
    base_path: super::flashinfer_dsl::FLASHINFER_CUBINS_PATH,
};

/// The files `engine` `version` fetches at run time (none for an engine
/// or version that fetches nothing).
pub fn extras_of(engine: &str, version: &str) -> Vec<ExtraFile> {
    ENGINE_EXTRAS
        .iter()
        .filter(|e| e.engine == engine && !version_before(version, e.since))
        .flat_map(|e| e.files.iter().copied())
        .collect()
}

/// The settings that point clients at a copy of the file at `host` and
/// `path`, with the engines (for a CuTe DSL FMHA kernel, the library:
/// `flashinfer`) that fetch it: what `mirror env` names for an extra held.
pub fn settings_of(host: &str, path: &str) -> Vec<(&'static str, Setting)> {
    let mut out = Vec::new();
    if super::flashinfer_dsl::is_dsl_fmha_extra(host, path) {
        out.push(("flashinfer", FLASHINFER_DSL_SETTING));
    }
    for e in &ENGINE_EXTRAS {
        if e.files
            .iter()
            .any(|f| f.host.eq_ignore_ascii_case(host) && f.path == path)
        {
            for s in e.settings {
                out.push((e.engine, *s));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vllm_and_sglang_carry_the_encodings_with_the_pinned_hashes() {
        let v = extras_of("vllm", "0.20.1");
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0].url(),
            "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
        );
        assert_eq!(
            v[0].sha256,
            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
        );
        assert!(extras_of("vllm", "0.9.2").is_empty());
        assert!(extras_of("llamacpp", "b6123").is_empty());
        assert_eq!(extras_of("sglang", "0.5.23").len(), 2);
        for f in &OPENAI_ENCODINGS {
            assert_eq!(f.sha256.len(), 64);
            assert!(crate::names::check_relative_path("extra path", f.path).is_ok());
        }
        let s = settings_of(OPENAI_ENCODINGS_HOST, "encodings/cl100k_base.tiktoken");
        assert!(
            s.iter()
                .any(|(e, s)| *e == "vllm" && s.variable == "TIKTOKEN_ENCODINGS_BASE")
        );
        assert!(settings_of(OPENAI_ENCODINGS_HOST, "encodings/other").is_empty());
        let dsl = settings_of(
            "edge.urm.nvidia.com",
            "artifactory/sw-kernelinferencelibrary-public-generic-local/\
             5b34f84266cbc2135066ce96885b664992535670/fmha/cute-dsl/x86_64/sm_100a/checksums.txt",
        );
        assert_eq!(dsl, [("flashinfer", FLASHINFER_DSL_SETTING)]);
        // What tiktoken's cache names the o200k_base URL:
        // hashlib.sha1(b"https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken").
        let f = &OPENAI_ENCODINGS[0];
        assert_eq!(
            SettingKind::Sha1UrlCache.file_name(f.host, f.path).unwrap(),
            "fb374d419588a4632f3f557e76b4b70aebbca790"
        );
        assert_eq!(
            SettingKind::Directory.file_name(f.host, f.path).unwrap(),
            "o200k_base.tiktoken"
        );
    }
}
