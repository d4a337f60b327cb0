//! FlashInfer's CuTe DSL FMHA kernels (issue #32): from FlashInfer 0.6.10
//! these are `.so` files its loader fetches at run time from its artifact
//! repository (`flashinfer/attention/cute_dsl/fmha.py`
//! `_load_from_artifact`: `FLASHINFER_CUBINS_REPOSITORY` /
//! `ArtifactPath.DSL_FMHA` / `{cpu arch}/{sm arch}/{variant}.so`, after
//! `_get_checksums` read `…/{cpu arch}/{sm arch}/checksums.txt`, one
//! `sha256  {variant}.so` a line), which the `flashinfer-cubin` wheel does
//! not hold (its build lists `*.cubin` only). The chain that pins them:
//! the sha256 of each `checksums.txt`, which `flashinfer/artifacts.py`
//! (`CheckSumHash.DSL_FMHA_CHECKSUMS`) pins per release, then each file's
//! sha256 in it.
//!
//! Invariant: data read from FlashInfer's own code at each release tag
//! (flashinfer-ai/flashinfer, every tag from v0.6.10 to v0.6.18rc7, the
//! newest when this was written), exact versions only: a release not
//! listed (a later one may move the directory or the pins) has no pins
//! here, and whoever carries its kernels must say so rather than guess.

/// FlashInfer's default artifact repository (`flashinfer/jit/
/// cubin_loader.py`, `FLASHINFER_CUBINS_REPOSITORY`'s default).
pub const FLASHINFER_CUBINS_REPOSITORY_DEFAULT: &str =
    "https://edge.urm.nvidia.com/artifactory/sw-kernelinferencelibrary-public-generic-local/";

/// The host of [`FLASHINFER_CUBINS_REPOSITORY_DEFAULT`]: a carried kernel
/// is the runtime extra `/extras/<this host>/<repository path><file>`.
pub const FLASHINFER_CUBINS_HOST: &str = "edge.urm.nvidia.com";

/// The path of [`FLASHINFER_CUBINS_REPOSITORY_DEFAULT`] on its host, with
/// its trailing `/`: the loader forms every URL as
/// `safe_urljoin(FLASHINFER_CUBINS_REPOSITORY, relative)`, so a mirror's
/// `/extras/<host>/<this path>` is the value that variable takes.
pub const FLASHINFER_CUBINS_PATH: &str =
    "artifactory/sw-kernelinferencelibrary-public-generic-local/";

/// Whether the extra at `host` and `path` is one of the CuTe DSL FMHA
/// files (a `checksums.txt` or a kernel under some release's
/// `…/fmha/cute-dsl/{cpu}/{sm}/`): what `mirror env` points
/// `FLASHINFER_CUBINS_REPOSITORY` at the mirror for.
pub fn is_dsl_fmha_extra(host: &str, path: &str) -> bool {
    host.eq_ignore_ascii_case(FLASHINFER_CUBINS_HOST)
        && path
            .strip_prefix(FLASHINFER_CUBINS_PATH)
            .is_some_and(|rest| rest.contains("/fmha/cute-dsl/"))
}

/// The pins of the releases that share them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DslFmhaPins {
    /// The releases (PEP 440, as a lock names them).
    pub versions: &'static [&'static str],
    /// `ArtifactPath.DSL_FMHA`: the directory under the repository.
    pub dir: &'static str,
    /// `(cpu arch, sm arch, sha256 of that directory's checksums.txt)`,
    /// for each of `ArtifactPath.DSL_FMHA_ARCHS`.
    pub checksums: &'static [(&'static str, &'static str, &'static str)],
}

impl DslFmhaPins {
    /// The `checksums.txt` of `cpu` (`x86_64`, `aarch64`) and `sm`
    /// (`sm_100a`) under the repository, and its pinned sha256.
    pub fn checksums_of(&self, cpu: &str) -> Vec<(String, &'static str)> {
        self.checksums
            .iter()
            .filter(|(c, _, _)| *c == cpu)
            .map(|(c, sm, sha)| (format!("{}{c}/{sm}/checksums.txt", self.dir), *sha))
            .collect()
    }
}

/// The pins by release, oldest first.
pub const FLASHINFER_DSL_FMHA_PINS: [DslFmhaPins; 3] = [
    DslFmhaPins {
        versions: &["0.6.10", "0.6.10.post1", "0.6.10rc1"],
        dir: "c770c91cb0d991b7828fc85d2253a62f0d356b6c/fmha/cute-dsl/",
        checksums: &[
            (
                "x86_64",
                "sm_100a",
                "9533536698cdc256d897fffb3114de317076654ff8630ff283d850cc3dc96d86",
            ),
            (
                "x86_64",
                "sm_103a",
                "927e1954f1d45b0ee876f139084e4facdfcc87e86f4d30cb92d5c33698d4c2d6",
            ),
            (
                "x86_64",
                "sm_110a",
                "277b1dceaab2081e3def37cf997280a3f2c3ac515d22b80be141253c0278b8b5",
            ),
            (
                "aarch64",
                "sm_100a",
                "b48ed0bcc9bad4afd33e0784c8c9eb9e13e782afe197816b1d0747b11759493e",
            ),
            (
                "aarch64",
                "sm_103a",
                "bace619a560f3ce52ad6ba105fffb8ea8629fe57885a90892c9e15a7122467e1",
            ),
            (
                "aarch64",
                "sm_110a",
                "d8369bcfa443bfd791cd014e3b030d378f00a975db8278eebd5b2fb529e3257d",
            ),
        ],
    },
    DslFmhaPins {
        versions: &[
            "0.6.11",
            "0.6.11.post1",
            "0.6.11.post2",
            "0.6.11.post3",
            "0.6.11rc1",
            "0.6.12",
            "0.6.12rc1",
            "0.6.12rc2",
            "0.6.12rc3",
            "0.6.13",
            "0.6.13rc1",
            "0.6.13rc2",
            "0.6.14",
            "0.6.14rc1",
            "0.6.15",
            "0.6.15.post1",
            "0.6.15rc1",
            "0.6.15rc2",
            "0.6.15rc3",
            "0.6.15rc4",
            "0.6.16",
            "0.6.16.post1",
            "0.6.16.post2",
            "0.6.16.post3",
            "0.6.16.post4",
            "0.6.16rc1",
            "0.6.16rc2",
            "0.6.16rc3",
            "0.6.16rc4",
            "0.6.16rc5",
            "0.6.17",
            "0.6.17rc1",
            "0.6.17rc2",
            "0.6.17rc3",
            "0.6.17rc4",
            "0.6.17rc5",
        ],
        dir: "801e770219613fbf088bc074c414732b26cc550d/fmha/cute-dsl/",
        checksums: &[
            (
                "x86_64",
                "sm_100a",
                "778738c3aa89872248fcfddd134b57ae516021471df992d4ba9b058ead546d56",
            ),
            (
                "x86_64",
                "sm_103a",
                "f57abef4c65968c99e93faa051d9b98cf789c82c805bd3a177fb3f2a426dac4f",
            ),
            (
                "x86_64",
                "sm_110a",
                "f2450d136221d7c355876140af860999fd5f5cdd16ffa4b06ff8b799c2106c29",
            ),
            (
                "aarch64",
                "sm_100a",
                "10af42097962a92cbc8942a65dedf87259fdb8684d26c4f8326dbfbe4e8ff566",
            ),
            (
                "aarch64",
                "sm_103a",
                "2418ee60ced8eec216af5a44682151173c1ed63d5296c92c185bc3bef92f91cd",
            ),
            (
                "aarch64",
                "sm_110a",
                "6807c536800fba3c9ff516f4cc0a7b12bd5570dd94ab04704c9bc7daf9d1e821",
            ),
        ],
    },
    DslFmhaPins {
        versions: &[
            "0.6.18rc1",
            "0.6.18rc2",
            "0.6.18rc3",
            "0.6.18rc4",
            "0.6.18rc5",
            "0.6.18rc6",
            "0.6.18rc7",
        ],
        dir: "5b34f84266cbc2135066ce96885b664992535670/fmha/cute-dsl/",
        checksums: &[
            (
                "x86_64",
                "sm_100a",
                "832c303bb9b386af590d3efc294681859829b91991975fd2e188a5d7dc30c461",
            ),
            (
                "x86_64",
                "sm_103a",
                "57322c10ddbbe9072c7ded41e2856fdf9d4276fbd79ac4bc825af0cd78844da6",
            ),
            (
                "x86_64",
                "sm_107a",
                "8480678539adf622f8395e875923471bce683be7158694556bd6c536eadeaa45",
            ),
            (
                "x86_64",
                "sm_110a",
                "4f6f0f3a868f0e9171c8ab217e6d2a87fde46b02a9417d8f55f1a779c53fa9fb",
            ),
            (
                "aarch64",
                "sm_100a",
                "064cfcac21886c3e16b5007ca769f1b93111db7a63864db1e026a53e61fe20fe",
            ),
            (
                "aarch64",
                "sm_103a",
                "1631a884738d706f5bc39bf4032bcd54b25ba0a0d734c26f388dce4ae32093c9",
            ),
            (
                "aarch64",
                "sm_107a",
                "0348ef0b74dffa67c0c9662d3f567b26dccf46c356009f315860f31a9550e207",
            ),
            (
                "aarch64",
                "sm_110a",
                "8f16f510d159797432bda92d55d0d82d65d3e19080f9af1b751dec4146cdcbe6",
            ),
        ],
    },
];

/// The pins of FlashInfer `version`; `None` for a release not read
/// (before 0.6.10 there are no DSL kernels; after the last listed, the
/// code was not read).
pub fn dsl_fmha_pins(version: &str) -> Option<&'static DslFmhaPins> {
    FLASHINFER_DSL_FMHA_PINS
        .iter()
        .find(|p| p.versions.contains(&version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_release_from_0_6_10_has_its_pins_and_no_other() {
        let p = dsl_fmha_pins("0.6.13").unwrap();
        assert_eq!(
            p.dir,
            "801e770219613fbf088bc074c414732b26cc550d/fmha/cute-dsl/"
        );
        let x86 = p.checksums_of("x86_64");
        assert_eq!(x86.len(), 3);
        assert_eq!(
            x86[0],
            (
                "801e770219613fbf088bc074c414732b26cc550d/fmha/cute-dsl/x86_64/sm_100a/checksums.txt"
                    .to_string(),
                "778738c3aa89872248fcfddd134b57ae516021471df992d4ba9b058ead546d56"
            )
        );
        assert_eq!(
            dsl_fmha_pins("0.6.18rc7")
                .unwrap()
                .checksums_of("aarch64")
                .len(),
            4
        );
        assert!(is_dsl_fmha_extra(
            "edge.urm.nvidia.com",
            &format!("{FLASHINFER_CUBINS_PATH}{}x86_64/sm_100a/a.so", p.dir)
        ));
        assert!(!is_dsl_fmha_extra(
            "edge.urm.nvidia.com",
            "other/fmha/cute-dsl/a.so"
        ));
        assert_eq!(
            format!("https://{FLASHINFER_CUBINS_HOST}/{FLASHINFER_CUBINS_PATH}"),
            FLASHINFER_CUBINS_REPOSITORY_DEFAULT
        );
        assert!(dsl_fmha_pins("0.6.9").is_none());
        assert!(dsl_fmha_pins("0.7.0").is_none());
        for p in FLASHINFER_DSL_FMHA_PINS {
            assert!(p.dir.ends_with("/fmha/cute-dsl/"));
            for (cpu, sm, sha) in p.checksums {
                assert!(["x86_64", "aarch64"].contains(cpu) && sm.starts_with("sm_1"));
                assert!(sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()));
            }
        }
    }
}
