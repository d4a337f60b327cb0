"""Renders and lints the chart for every scenario; writes one file per object.

    python deploy/tests/render.py OUTDIR

Prints the files kubernetes-validate must check, one per line, on stdout; CRD kinds are
not listed (they are named on stderr as skipped). Exits 1 on any lint finding or render
error, naming the scenario.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

import chartlib


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: render.py OUTDIR", file=sys.stderr)
        return 2
    outdir = Path(sys.argv[1])
    failed = False
    for scenario, values in chartlib.scenarios().items():
        try:
            findings = chartlib.lint(values)
            docs = chartlib.render(values)
        except Exception as exc:  # noqa: BLE001 - report any Helm error per scenario
            print(f"{scenario}: render failed: {exc}", file=sys.stderr)
            failed = True
            continue
        for finding in findings:
            print(f"{scenario}: helm lint: {finding}", file=sys.stderr)
            failed = True
        target = outdir / scenario
        target.mkdir(parents=True, exist_ok=True)
        for doc in docs:
            kind, name = doc["kind"], doc["metadata"]["name"]
            if kind in chartlib.CRD_KINDS:
                print(f"{scenario}: {kind}/{name}: not validated (CRD kind)", file=sys.stderr)
                continue
            path = target / f"{kind}-{name}.yaml"
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
            print(path)
        print(f"{scenario}: rendered {len(docs)} objects, helm lint clean", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
