//! `llmgw recipe kernels`: the folders the fixture Hub lists for a kernel,
//! and each node's verdict by the client's rules.

use crate::bundle_kit::{fails, llmgw, ok};
use crate::create::common::fixture;

#[test]
fn each_folder_says_which_node_loads_it() {
    let fx = fixture();
    let o = llmgw()
        .args(["recipe", "kernels", "kernels-test/relu@v1", "--json"])
        .args([
            "--node",
            "torch2.11,cu130,x86_64",
            "--node",
            "none,cpu,x86_64",
        ])
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .env_remove("HF_TOKEN")
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_str(&ok(&o)).unwrap();
    let verdicts = |folder: &str| {
        let row = rows
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["folder"] == folder)
            .unwrap();
        let n = row["nodes"].as_array().unwrap();
        (
            n[0].as_str().unwrap().to_string(),
            n[1].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(
        rows.as_array().unwrap().len(),
        llmgw_fixture::KERNEL_VARIANTS.len()
    );
    let (cuda, cpu) = verdicts("torch211-cxx11-cu130-x86_64-linux");
    assert_eq!(cuda, "loads");
    assert!(
        cpu.starts_with("no: Torch version (2.11) does not match"),
        "{cpu}"
    );
    let (cuda, cpu) = verdicts("torch-cpu");
    assert!(
        cuda.contains("backend (cpu) does not match system backend (cuda)"),
        "{cuda}"
    );
    assert_eq!(cpu, "loads");
    // The table names the commit the newest vN is at, on stderr.
    let o = llmgw()
        .args([
            "recipe",
            "kernels",
            "kernels-test/relu",
            "--node",
            "none,cpu,x86_64",
        ])
        .arg("--hf-endpoint")
        .arg(fx.hf_endpoint())
        .output()
        .unwrap();
    let table = ok(&o);
    assert!(
        table.starts_with("FOLDER") && table.contains("torch-cpu"),
        "{table}"
    );
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(
        said.contains(&format!(
            "@v2 is commit {}",
            llmgw_fixture::KERNEL_V2_COMMIT
        )),
        "{said}"
    );
    // A node that is none, a repository id that is none: usage errors.
    for bad in [
        &["kernels-test/relu", "--node", "torch2,cpu,x86_64"][..],
        &["../relu"][..],
    ] {
        let o = llmgw()
            .args(["recipe", "kernels"])
            .args(bad)
            .output()
            .unwrap();
        fails(&o, 2);
    }
}
