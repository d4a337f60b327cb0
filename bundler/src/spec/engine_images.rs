//! `--engine-image ENGINE=VERSION[:VARIANT]` (the spec file's
//! `engine_images`) and `--driver D`: the container images of an engine
//! version the recipe table lists, chosen per `--arch` as the table is asked
//! for builds — as a machine with no NVIDIA GPU and as one on the site's
//! newest driver (`--driver`; left out, every image the table lists).
//!
//! Invariant: what this gives is Docker references the recipe table made,
//! under their publishers' own names (`docker.io/vllm/vllm-openai:…`); they
//! join `--image`'s list and go through the same path (resolved, every
//! manifest and blob checked, attestations carried), so an engine image is
//! recorded and served as any image is. Nothing here touches the network.

use llmgw_shared::recipe::{self, EngineImage, RecipeError};

use crate::error::{CreateError, FlagError};

/// One image the table chose, and for which architectures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineImagePick {
    /// The `--engine-image` value it was chosen for.
    pub asked: String,
    /// The table's row: the reference, its CUDA, driver floor, platforms.
    pub image: EngineImage,
    /// The `--arch` values it is carried for.
    pub arches: Vec<String>,
}

/// An `--arch` an `--engine-image` value has no image for, while another
/// `--arch` has: left to the others, and recorded as a gap so the bundle
/// says what its nodes of that arch lack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineImageGap {
    /// The `--engine-image` value.
    pub asked: String,
    /// The arch it has no image for.
    pub arch: String,
    /// The table's words.
    pub reason: String,
}

/// The images the `--engine-image` values choose, and the arches some of
/// them have none for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineImages {
    pub picks: Vec<EngineImagePick>,
    pub gaps: Vec<EngineImageGap>,
}

/// `ENGINE=VERSION[:VARIANT]`, each part non-empty; the table checks the
/// engine, the version and the variant with its own words.
fn parse(text: &str) -> Result<(String, String, Option<String>), CreateError> {
    let bad = || FlagError::EngineImage {
        text: text.to_string(),
    };
    let (engine, rest) = text.split_once('=').ok_or_else(bad)?;
    let (version, variant) = match rest.split_once(':') {
        Some((v, variant)) => (v, Some(variant.trim())),
        None => (rest, None),
    };
    let (engine, version) = (engine.trim(), version.trim());
    if engine.is_empty() || version.is_empty() || variant.is_some_and(str::is_empty) {
        return Err(bad().into());
    }
    Ok((
        engine.to_string(),
        version.to_string(),
        variant.map(str::to_string),
    ))
}

/// `--driver`: an NVIDIA driver version, and only with an engine image to
/// choose among.
pub(super) fn driver(
    given: Option<String>,
    images: &[String],
) -> Result<Option<String>, CreateError> {
    let Some(d) = given else { return Ok(None) };
    if let Some(problem) = recipe::driver_problem(&d) {
        return Err(FlagError::Driver { problem }.into());
    }
    if images.is_empty() {
        return Err(FlagError::DriverAlone { driver: d }.into());
    }
    Ok(Some(d))
}

/// Every image the `given` values choose for `arches` on `driver`, each
/// reference once (with every arch it is for). An arch the engine
/// publishes no image for is left to the others, and is a gap; none for
/// any arch is refused with the table's words.
pub(super) fn resolve(
    given: &[String],
    arches: &[String],
    driver: Option<&str>,
) -> Result<EngineImages, CreateError> {
    let mut picks: Vec<EngineImagePick> = Vec::new();
    let mut gaps: Vec<EngineImageGap> = Vec::new();
    for text in given {
        let (engine, version, variant) = parse(text)?;
        let mut refusals: Vec<(String, RecipeError)> = Vec::new();
        let mut found = false;
        for arch in arches {
            let images =
                match recipe::site_images(&engine, &version, variant.as_deref(), arch, driver) {
                    Ok(i) => i,
                    Err(e @ RecipeError::NoImageForArch { .. }) => {
                        refusals.push((arch.clone(), e));
                        continue;
                    }
                    Err(error) => return Err(refused(text, arch, error)),
                };
            found = true;
            for image in images {
                match picks
                    .iter_mut()
                    .find(|p| p.image.reference() == image.reference())
                {
                    Some(p) if !p.arches.contains(arch) => p.arches.push(arch.clone()),
                    Some(_) => {}
                    None => picks.push(EngineImagePick {
                        asked: text.clone(),
                        image,
                        arches: vec![arch.clone()],
                    }),
                }
            }
        }
        if !found && !refusals.is_empty() {
            let (arch, error) = refusals.swap_remove(0);
            return Err(refused(text, &arch, error));
        }
        gaps.extend(refusals.into_iter().map(|(arch, e)| EngineImageGap {
            asked: text.clone(),
            arch,
            reason: e.to_string(),
        }));
    }
    Ok(EngineImages { picks, gaps })
}

fn refused(text: &str, arch: &str, error: RecipeError) -> CreateError {
    FlagError::EngineImageRecipe {
        text: text.to_string(),
        arch: arch.to_string(),
        error: Box::new(error),
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(given: &[&str], arches: &[&str], driver: Option<&str>) -> Vec<(String, Vec<String>)> {
        let given: Vec<String> = given.iter().map(|s| s.to_string()).collect();
        let arches: Vec<String> = arches.iter().map(|s| s.to_string()).collect();
        resolve(&given, &arches, driver)
            .unwrap()
            .picks
            .into_iter()
            .map(|p| (p.image.reference(), p.arches))
            .collect()
    }

    #[test]
    fn the_driver_keeps_the_best_image_a_node_runs() {
        let both = vec!["amd64".to_string(), "arm64".to_string()];
        let plain = "docker.io/vllm/vllm-openai:v0.34.0".to_string();
        let cu129 = "docker.io/vllm/vllm-openai:v0.34.0-cu129".to_string();
        assert_eq!(
            refs(&["vllm=0.34.0"], &["amd64", "arm64"], Some("575")),
            [(cu129.clone(), both.clone())]
        );
        assert_eq!(
            refs(&["vllm=0.34.0"], &["amd64", "arm64"], Some("590")),
            [(plain.clone(), both.clone())]
        );
        assert_eq!(
            refs(&["vllm=0.34.0"], &["amd64"], None),
            [
                (plain, vec!["amd64".to_string()]),
                (cu129.clone(), vec!["amd64".to_string()])
            ]
        );
        assert_eq!(
            refs(
                &["vllm=0.34.0:cu129", "vllm=0.34.0"],
                &["arm64"],
                Some("575")
            ),
            [(cu129, vec!["arm64".to_string()])]
        );
    }

    /// llama.cpp's server images: the newest driver's best one and the CPU
    /// server for nodes with no GPU; an arch its build has no image for is
    /// left to the others.
    #[test]
    fn llamacpp_carries_the_gpu_image_and_the_cpu_server() {
        let both = vec!["amd64".to_string(), "arm64".to_string()];
        let at = |tag: &str| format!("ghcr.io/ggml-org/llama.cpp:{tag}");
        assert_eq!(
            refs(&["llamacpp=v0.4.1"], &["amd64", "arm64"], Some("575")),
            [
                (at("server-cuda-v0.4.1"), both.clone()),
                (at("server-v0.4.1"), both.clone())
            ]
        );
        let amd = vec!["amd64".to_string()];
        assert_eq!(
            refs(&["llamacpp=b8000"], &["amd64", "arm64"], Some("590")),
            [
                (at("server-cuda13-b8000"), amd.clone()),
                (at("server-b8000"), amd)
            ]
        );
        // The arm64 nodes' lack is said, with the table's reason.
        let given = ["llamacpp=b8000".to_string()];
        let r = resolve(&given, &both, Some("590")).unwrap();
        assert_eq!(
            r.gaps,
            [EngineImageGap {
                asked: "llamacpp=b8000".into(),
                arch: "arm64".into(),
                reason: "llamacpp b8000 publishes no image for arm64; its images are for amd64 \
                         (the table's arm64 from b9294)"
                    .into(),
            }]
        );
        let r = resolve(&given, &both[..1], Some("590")).unwrap();
        assert!(r.gaps.is_empty());
    }

    #[test]
    fn refusals_name_the_flag_the_arch_and_the_table_s_reason() {
        let arches = vec!["arm64".to_string()];
        for (text, driver, says) in [
            ("vllm", None, "expected ENGINE=VERSION[:VARIANT]"),
            ("vllm=0.34.0:", None, "expected ENGINE=VERSION[:VARIANT]"),
            ("vllm=0.34.0:cu13", None, "it has cu130, cu129"),
            ("vllm=0.19.1", None, "start at 0.20"),
            (
                "vllm=0.34.0",
                Some("510"),
                "needs NVIDIA driver 525 or newer",
            ),
            ("uv=0.9.0", None, "release archives"),
            (
                "llamacpp=b9300:cuda12",
                None,
                "it has cuda13, cuda, vulkan, cpu",
            ),
            ("llamacpp=b7000", None, "images start at b7609"),
            (
                "llamacpp=b9000:cuda13",
                None,
                "the table's arm64 from b9294",
            ),
            (
                "vllm=0.34.0:cu130",
                Some("575"),
                "the cu130 image needs NVIDIA driver 580",
            ),
        ] {
            let e = resolve(&[text.to_string()], &arches, driver).unwrap_err();
            let said = llmgw_shared::chain(&e);
            assert!(said.contains(says), "{text}: {said}");
            assert!(said.starts_with("--engine-image"), "{text}: {said}");
            assert!(e.is_usage(), "{text}");
        }
        let e = driver(Some("5x".into()), &["vllm=0.34.0".into()]).unwrap_err();
        assert!(
            e.to_string().contains("is not an NVIDIA driver version"),
            "{e}"
        );
        let e = driver(Some("575".into()), &[]).unwrap_err();
        assert!(e.to_string().contains("no --engine-image"), "{e}");
    }
}
