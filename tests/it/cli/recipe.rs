//! `llmgw recipe` end to end: the real binary, its stdout, stderr and exit
//! codes.

use std::process::Output;

use serde_json::Value;

fn llmgw(args: &[&str]) -> Output {
    assert_cmd::cargo::cargo_bin_cmd!("llmgw")
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("running llmgw")
}

/// `llmgw` run with `line`'s words as its arguments, as a user types them.
fn llmgw_line(line: &str) -> Output {
    llmgw(&line.split(' ').collect::<Vec<_>>())
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn candidates_json_lists_cuda_12_8_then_vulkan() {
    let o =
        llmgw_line("recipe candidates llamacpp b6123 --arch amd64 --driver 550 --cc 8.6 --json");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let builds: Vec<Value> = serde_json::from_slice(&o.stdout).expect("a JSON array");
    let got: Vec<(&str, Vec<&str>)> = builds
        .iter()
        .map(|b| {
            let assets = b["assets"].as_array().expect("assets");
            (
                b["variant"].as_str().expect("variant"),
                assets.iter().map(|a| a.as_str().expect("asset")).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                "cuda-12.8",
                vec![
                    "llama-b6123-bin-ubuntu-cuda-12.8-x64.tar.gz",
                    "cudart-llama-b6123-bin-ubuntu-cuda-12.8-x64.tar.gz"
                ]
            ),
            ("vulkan", vec!["llama-b6123-bin-ubuntu-vulkan-x64.tar.gz"]),
        ]
    );
    assert_eq!(builds[0]["gpu_backend"], "libggml-cuda.so");
    assert_eq!(
        builds[1]["packages"]["deb"],
        serde_json::json!(["libgomp1", "libvulkan1"])
    );
    // Empty fields are left out.
    assert!(builds[0].get("python").is_none() && builds[0].get("note").is_none());
}

#[test]
fn builds_json_for_arm64_has_no_cuda_12_8() {
    let o = llmgw_line("recipe builds llamacpp b6123 --arch arm64 --json");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let builds: Vec<Value> = serde_json::from_slice(&o.stdout).expect("a JSON array");
    let variants: Vec<&str> = builds
        .iter()
        .filter_map(|b| b["variant"].as_str())
        .collect();
    assert_eq!(variants, ["cpu", "cuda-13.3", "vulkan"]);
}

#[test]
fn table_lists_every_build() {
    let o = llmgw_line("recipe builds llamacpp b6123 --arch amd64");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(
        lines[0].starts_with("VARIANT") && lines[0].contains("GPU BACKEND"),
        "{out}"
    );
    for (line, variant) in lines[1..]
        .iter()
        .zip(["cpu", "cuda-13.3", "cuda-12.8", "vulkan"])
    {
        assert!(line.starts_with(&format!("{variant} ")), "{line}");
    }
    assert!(
        lines[2].contains("llama-b6123-bin-ubuntu-cuda-13.3-x64.tar.gz"),
        "{out}"
    );
    // Columns line up: every row's assets start where the header's do.
    let col = lines[0].find("INSTALLS").expect("INSTALLS column");
    assert!(
        lines[1..].iter().all(|l| l[col..].starts_with("llama-")),
        "{out}"
    );
}

#[test]
fn table_shows_the_v100_note() {
    let o = llmgw_line("recipe candidates vllm 0.20.0 --arch amd64 --driver 580 --cc 7.0");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("cu12"), "{out}");
    assert!(out.contains("vllm==0.19.1"), "{out}");
    assert!(
        out.contains("vLLM 0.19.1, the newest built for compute capability 7.0, instead of 0.20.0"),
        "{out}"
    );
}

#[test]
fn builds_of_a_python_engine_is_refused_with_the_reason() {
    let o = llmgw_line("recipe builds vllm 0.20.0 --arch amd64");
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert_eq!(
        stderr(&o),
        "llmgw: vllm is installed from PyPI as a Python environment, not from release \
         archives; see its environments. The engines with release archives are llamacpp, uv\n"
    );
}

#[test]
fn no_build_here_exits_1_with_each_reason() {
    let o = llmgw_line("recipe candidates vllm 0.20.0 --arch amd64 --driver 520 --json");
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = stderr(&o);
    assert!(
        err.contains(
            "vLLM 0.20.0 built for CUDA 13 needs NVIDIA driver 580 or newer; this node has 520"
        ),
        "{err}"
    );
    assert!(
        err.contains("built for CUDA 12.9 needs NVIDIA driver 525 or newer"),
        "{err}"
    );
}

#[test]
fn not_here_exits_1_with_the_reason() {
    let o = llmgw_line("recipe candidates sglang 0.5.2 --arch amd64");
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "llmgw: SGLang runs on NVIDIA GPUs and this node has none; it serves llama.cpp models\n"
    );
}

#[test]
fn a_version_with_a_path_is_refused() {
    let o = llmgw_line("recipe builds llamacpp ../x --arch amd64");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("\"../x\" is not a version of llamacpp"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn unknown_variant_lists_what_there_is() {
    let o = llmgw_line(
        "recipe candidates llamacpp b6123 --arch arm64 --driver 580 --variant cuda-12.8",
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        "llmgw: llama.cpp has no build \"cuda-12.8\" here; it has cuda-13.3, vulkan\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    let cases: [&[&str]; 5] = [
        &[
            "recipe", "builds", "llamacpp", "b6123", "--arch", "amd64", "--bogus",
        ],
        &["recipe", "builds", "llamacpp", "b6123"],
        &[
            "recipe",
            "candidates",
            "llamacpp",
            "b6123",
            "--arch",
            "amd64",
            "--cc",
            "8.6",
        ],
        &[
            "recipe",
            "candidates",
            "llamacpp",
            "b6123",
            "--arch",
            "amd64",
            "--driver",
            "550",
            "--cc",
            "8.65",
        ],
        &[
            "recipe",
            "candidates",
            "llamacpp",
            "b6123",
            "--arch",
            "amd64",
            "--driver",
            "",
        ],
    ];
    for args in cases {
        let o = llmgw(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}");
        assert!(
            stderr(&o).contains("Usage:") || stderr(&o).contains("error:"),
            "{args:?}"
        );
    }
    let o = llmgw_line("recipe candidates llamacpp b6123 --arch amd64 --driver 550 --cc 8.65");
    assert!(
        stderr(&o).contains("\"8.65\" is not a compute capability"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn help_exits_0() {
    let o = llmgw_line("recipe candidates --help");
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("--driver"));
}

#[test]
fn environments_json_lists_every_vllm_build_a_node_may_get() {
    let o = llmgw_line("recipe environments vllm 0.20.1 --arch amd64 --json");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let envs: Vec<Value> = serde_json::from_slice(&o.stdout).expect("a JSON array");
    let names: Vec<&str> = envs.iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "vllm-0.20.1-cu13-amd64",
            "vllm-0.20.1-cu129-amd64",
            "vllm-0.19.1-cu12-amd64"
        ]
    );
    assert_eq!(envs[1]["build"]["wheel"]["prefix"], "vllm-0.20.1+cu129-");
    assert_eq!(
        envs[1]["build"]["extra_index"],
        "https://download.pytorch.org/whl/cu129"
    );
    assert_eq!(envs[2]["version"], "0.19.1");
    assert_eq!(
        envs[2]["build"]["packages"]["deb"],
        serde_json::json!(["gcc"])
    );
}

#[test]
fn environments_table_names_what_the_node_needs() {
    let o = llmgw_line("recipe environments sglang 0.5.2 --arch arm64");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("NODE NEEDS"),
        "{out}"
    );
    assert!(lines[1].starts_with("sglang-0.5.2-cu13-arm64 "), "{out}");
    assert!(lines[1].contains("python 3.12 + sglang==0.5.2"), "{out}");
    assert!(lines[1].contains("deb:gcc rpm:gcc 25 GB free"), "{out}");
}

#[test]
fn environments_of_an_archive_engine_is_refused() {
    let o = llmgw_line("recipe environments llamacpp b6123 --arch amd64");
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert_eq!(
        stderr(&o),
        "llmgw: llamacpp is installed from release archives, not as a Python environment; the \
         engines with Python environments are sglang, vllm\n"
    );
}

/// `recipe images` prints what the table holds, best first: every image
/// without `--driver`, the ones a driver runs with it (#52 item 1).
#[test]
fn images_json_is_the_table_s_answer() {
    use llmgw_shared::recipe;
    for (driver, want) in [
        (None, vec!["v0.34.0", "v0.34.0-cu129"]),
        (Some("590.48.01"), vec!["v0.34.0", "v0.34.0-cu129"]),
        (Some("575.57.08"), vec!["v0.34.0-cu129"]),
    ] {
        let mut line = "recipe images vllm 0.34.0 --arch arm64 --json".to_string();
        if let Some(d) = driver {
            line.push_str(&format!(" --driver {d}"));
        }
        let o = llmgw_line(&line);
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        let got: Value = serde_json::from_slice(&o.stdout).expect("a JSON array");
        let table = recipe::images("vllm", "0.34.0", None, "arm64", driver).unwrap();
        assert_eq!(got, serde_json::to_value(&table).unwrap(), "{line}");
        let tags: Vec<&str> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["tag"].as_str().unwrap())
            .collect();
        assert_eq!(tags, want, "{line}");
        for i in got.as_array().unwrap() {
            assert_eq!(i["repository"], "vllm/vllm-openai");
            assert_eq!(i["registry"], "docker.io");
            assert_eq!(i["platforms"], serde_json::json!(["amd64", "arm64"]));
        }
    }
}

#[test]
fn images_table_says_cuda_and_driver() {
    let o = llmgw_line("recipe images vllm 0.34.0 --arch amd64");
    assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        vec![
            vec!["VARIANT", "IMAGE", "CUDA", "DRIVER", "PLATFORMS"],
            vec![
                "cu130",
                "docker.io/vllm/vllm-openai:v0.34.0",
                "13.0",
                ">=",
                "580",
                "linux/amd64,linux/arm64"
            ],
            vec![
                "cu129",
                "docker.io/vllm/vllm-openai:v0.34.0-cu129",
                "12.9",
                ">=",
                "525",
                "linux/amd64,linux/arm64"
            ],
        ]
    );
}

/// llama.cpp's server images: a Vulkan and a CPU image need no CUDA and no
/// driver, said `-`; a driver lists what it starts, never the CPU server.
#[test]
fn images_table_of_llamacpp_says_what_needs_no_driver() {
    let rows = |line: &str| {
        let o = llmgw_line(line);
        assert_eq!(o.status.code(), Some(0), "stderr: {}", stderr(&o));
        stdout(&o)
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().map(str::to_string).collect())
            .collect::<Vec<Vec<String>>>()
    };
    let at = |t: &str| format!("ghcr.io/ggml-org/llama.cpp:{t}");
    let both = "linux/amd64,linux/arm64";
    let all = rows("recipe images llamacpp b9300 --arch arm64");
    assert_eq!(
        all,
        [
            vec![
                "cuda13",
                &at("server-cuda13-b9300"),
                "13",
                ">=",
                "580",
                both
            ],
            vec!["cuda", &at("server-cuda-b9300"), "12", ">=", "570", both],
            vec!["vulkan", &at("server-vulkan-b9300"), "-", "-", both],
            vec!["cpu", &at("server-b9300"), "-", "-", both],
        ]
    );
    let on_575 = rows("recipe images llamacpp v0.4.1 --arch amd64 --driver 575.57.08");
    let variants: Vec<&str> = on_575.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(variants, ["cuda", "vulkan"]);
    assert_eq!(on_575[0][1], at("server-cuda-v0.4.1"));
    let o = llmgw_line("recipe images llamacpp b8000 --arch arm64");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("its images are for amd64 (the table's arm64 from b9294)"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn images_refusals_say_what_there_is() {
    let o = llmgw_line("recipe images vllm 0.34.0 --arch amd64 --variant cu13");
    assert_eq!(o.status.code(), Some(1), "stdout: {}", stdout(&o));
    assert!(
        stderr(&o).contains("no build \"cu13\" here; it has cu130, cu129"),
        "{}",
        stderr(&o)
    );
    let o = llmgw_line("recipe images vllm 0.34.0 --arch amd64 --driver 5x");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("is not an NVIDIA driver version"),
        "{}",
        stderr(&o)
    );
    let o = llmgw_line("recipe images vllm 0.34.0 --arch amd64 --driver 510");
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(
        e.contains("the cu129 image needs NVIDIA driver 525 or newer; this node has 510"),
        "{e}"
    );
    let o = llmgw_line("recipe images vllm 0.19.1 --arch amd64");
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("start at 0.20"), "{}", stderr(&o));
}
