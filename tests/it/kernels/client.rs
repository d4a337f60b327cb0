//! The real `kernels` client (0.17.2) on a node with no network but the
//! mirror (`unshare -rn`): `get_kernel(repo, version=N)` resolves the `vN`
//! branch, picks its build among the folders carried and imports it; the
//! publisher check answers as the Hub did at create; a build not carried
//! fails with the client's own words; `kernels download` of a project's
//! `kernels.lock` fills the cache with the build this node loads; and the
//! node a listing had no build for is a want the next bundle meets.
//! (`load_kernel` from that cache with `HF_HUB_OFFLINE=1` then fails on the
//! Hub as here: huggingface_hub 2.x finds the snapshot incomplete, its cached
//! tree listing every build the download skipped — an upstream matter.)

use std::path::Path;

use super::kernels_python;
use crate::bundle_kit::{import_bundle, mirror_in_node, offline_node, ok_for};
use crate::create::common::{create, fixture, ok, run};
use crate::serve::want::want_list_of_misses;
use llmgw_fixture::{KERNEL_V1_COMMIT, KERNEL_V2_COMMIT};

/// What the node runs, each step printing one line (or the error's
/// last line), so one run shows every answer.
const NODE_PY: &str = r#"
import subprocess, sys, traceback
from pathlib import Path
from kernels import get_kernel

def step(name, f):
    try:
        print(name, "->", f())
    except Exception as e:
        print(name, "!!", type(e).__name__, str(e).splitlines()[0])

def load(repo, version, trust=False):
    k = get_kernel(repo, version=version, trust_remote_code=trust)
    return f"v{k.VERSION} {k.VARIANT} {k.relu([-1, 2, -3, 4])}"

step("trusted", lambda: load("kernels-test/relu", 1))
step("untrusted", lambda: load("hobbyist/relu", 1))
step("untrusted-allowed", lambda: load("hobbyist/relu", 1, trust=True))
step("not-carried", lambda: load("kernels-test/relu", 2))
proj = Path(sys.argv[1])
cli = Path(sys.executable).parent / "kernels"
step("download", lambda: subprocess.run([str(cli), "download", str(proj)], check=True,
                                         capture_output=True, text=True).returncode)
"#;

fn project(dir: &Path) -> std::path::PathBuf {
    let proj = dir.join("proj");
    std::fs::create_dir_all(&proj).unwrap();
    std::fs::write(
        proj.join("pyproject.toml"),
        "[project]\nname = \"proj\"\nversion = \"0.1.0\"\n\n\
         [tool.kernels.dependencies]\n\"kernels-test/relu\" = 1\n",
    )
    .unwrap();
    std::fs::write(
        proj.join("kernels.lock"),
        format!(
            "[\n  {{\n    \"dependency\": {{\"repo-id\": \"kernels-test/relu\", \"version\": 1}},\n    \
             \"lock\": {{\"commit\": \"{KERNEL_V1_COMMIT}\"}}\n  }}\n]\n"
        ),
    )
    .unwrap();
    proj
}

#[test]
fn the_kernels_client_loads_what_was_carried_and_only_that() {
    let fx = fixture();
    let d = tempfile::tempdir().unwrap();
    let proj = project(d.path());
    let out = d.path().join("b");
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--out"]).arg(&out).args([
        "--kernel",
        "kernels-test/relu@v1:torch-cpu,torch211-cxx11-cu130-x86_64-linux",
        "--kernel",
        "kernels-test/relu@v2:torch211-cxx11-cu130-x86_64-linux",
        "--kernel",
        "hobbyist/relu@v1:torch-cpu",
        "--kernels-lock",
    ]);
    c.arg(proj.join("kernels.lock"));
    ok(&run(&mut c));
    let store = d.path().join("store");
    let sha = std::fs::read_to_string(d.path().join("b.sha256")).unwrap();
    let sha = sha.split_whitespace().next().unwrap();
    ok_for("bundle import", &import_bundle(&out, sha, &store, &[]));

    let node = d.path().join("node.py");
    std::fs::write(&node, NODE_PY).unwrap();
    let py = kernels_python();
    let script = format!(
        "{mirror}export HF_ENDPOINT=\"$url\" HF_HOME={hf}\n\
         {py} {node} {proj}\n",
        mirror = mirror_in_node(&store),
        hf = d.path().join("hf").display(),
        py = py.display(),
        node = node.display(),
        proj = proj.display(),
    );
    let o = offline_node(&script, d.path(), &[]).output().unwrap();
    let said = ok_for("the kernels client through the mirror", &o);
    let line = |name: &str| {
        said.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} line:\n{said}"))
            .to_string()
    };
    assert_eq!(line("trusted"), "trusted -> v1 torch-cpu [0, 2, 0, 4]");
    assert!(
        line("untrusted").contains(
            "!! ValueError Kernel repository 'hobbyist/relu' is not from a trusted publisher"
        ),
        "{said}"
    );
    assert_eq!(
        line("untrusted-allowed"),
        "untrusted-allowed -> v1 torch-cpu [0, 2, 0, 4]"
    );
    assert!(
        line("not-carried").contains(
            "!! FileNotFoundError Cannot find a build variant for this system in kernels-test/relu"
        ),
        "{said}"
    );
    assert_eq!(line("download"), "download -> 0");
    // The lock's commit, its CPU build, in the node's Hub cache.
    let snapshot = d
        .path()
        .join("hf/hub/kernels--kernels-test--relu/snapshots")
        .join(KERNEL_V1_COMMIT)
        .join("build/torch-cpu/relu/__init__.py");
    let init = std::fs::read_to_string(&snapshot).unwrap();
    assert!(init.contains("VERSION = 1"), "{init}");

    // The node v2 had no build for is a want: the next bundle carries it.
    let want = d.path().join("want.json");
    want_list_of_misses(&store, &["hub_kernel_build", "for=none,cpu,x86_64"], &want);
    let next = d.path().join("next");
    let mut c = create(&fx, d.path());
    c.args(["--arch", "amd64", "--out"])
        .arg(&next)
        .arg("--want")
        .arg(&want);
    ok(&run(&mut c));
    let m = super::imported(&next, &store);
    let r = m
        .repos
        .iter()
        .find(|r| r.commit == KERNEL_V2_COMMIT)
        .expect("v2 carried");
    assert_eq!(r.kernel.as_ref().unwrap().variants, ["torch-cpu"]);
}
