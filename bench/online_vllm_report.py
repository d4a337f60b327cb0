"""The small readings bench/online-vllm.sh needs, kept out of the shell script.

    online_vllm_report.py env ENVS.json VARIANT REQUIREMENTS.in
        the recipe's environment of VARIANT (from `llmgw recipe environments --json`):
        writes its requirements to REQUIREMENTS.in, prints "PYTHON MANYLINUX";
    online_vllm_report.py dry DRY.json
        the dry run's environments, largest files and gaps, one line each;
    online_vllm_report.py table < ROWS
        the create rows (ask arch ref_files ref_bytes t_compile t_download our_files
        our_bytes t_create t_import, one a line) as a Markdown table with the ratio.
"""

import json
import sys


def env(envs_path, variant, out_path):
    envs = json.load(open(envs_path))
    chosen = [e for e in envs if e["variant"] == variant]
    if not chosen:
        names = ", ".join(e["variant"] for e in envs)
        sys.exit(f"online-vllm: no variant {variant} in the recipe (it has: {names})")
    build = chosen[0]["build"]
    if "requirements" not in build:
        sys.exit(f"online-vllm: variant {variant} is not from PyPI alone (it needs a GitHub wheel)")
    with open(out_path, "w") as f:
        f.write("\n".join(build["requirements"]) + "\n")
    print(build["python"], chosen[0]["manylinux"])


def dry(path):
    d = json.load(open(path))
    for e in d["environments"]:
        print(f'{e["name"]:28} {e["platform"]:24} {e["files"]:4} files '
              f'{e["bytes"] / 1e9:6.2f} GB  interpreter: {e["interpreter"]}')
        for f in e["largest"][:3]:
            print(f'    {f["size"] / 1e6:9.1f} MB  {f["filename"]}')
    print(f'distinct over all: {d["distinct_files"]} files, {d["distinct_bytes"] / 1e9:.2f} GB')
    for g in d["gaps"]:
        print(f'gap: {g["what"]}: {g["reason"][:300]}')


def table(lines):
    print("| engine | arch | reference: files, GB | uv pip compile | pip download | "
          "ours: files, GB | create | ratio create / (compile + download) | import |")
    print("|---|---|---|---|---|---|---|---|---|")
    for line in lines:
        if not line.strip():
            continue
        (ask, arch, rf, rb, tc, td, of, ob, tcr, ti) = line.split()
        ref = float(tc) + float(td)
        print(f"| {ask} | {arch} | {rf}, {int(rb) / 1e9:.2f} | {tc} s | {td} s | "
              f"{of}, {int(ob) / 1e9:.2f} | {tcr} s | {float(tcr) / ref:.2f} | {ti} s |")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "env":
        env(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "dry":
        dry(sys.argv[2])
    elif mode == "table":
        table(sys.stdin.read().splitlines())
    else:
        sys.exit(f"online_vllm_report.py: unknown mode {mode}")
