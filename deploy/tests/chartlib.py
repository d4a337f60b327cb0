"""Offline rendering of the llmgw-mirror chart, shared by render.py and test_chart.py.

helm-python-sdk embeds Helm's Go SDK, so rendering here is what `helm template` does,
including values.schema.json validation and the templates' `fail` checks; no cluster
is contacted.
"""

from __future__ import annotations

import sys
from pathlib import Path

try:
    import helm_python
    import yaml
except ImportError as exc:  # pragma: no cover - the message is the point
    sys.exit(f"{exc}: the deploy checks need the .venv from scripts/setup.sh (run scripts/setup.sh)")

DEPLOY = Path(__file__).resolve().parent.parent
CHART = DEPLOY / "helm" / "llmgw-mirror"
CI_VALUES = CHART / "ci"
RELEASE = "rel"
NAMESPACE = "llmgw"

# Kinds whose schemas are CRDs, not part of Kubernetes: kubernetes-validate cannot know
# them. Skipped by name only; test_chart.py checks their content instead.
CRD_KINDS = {"ServiceMonitor"}


def scenarios() -> dict[str, dict]:
    """The default values plus one values file per optional part switched on."""
    out: dict[str, dict] = {"default": {}}
    for path in sorted(CI_VALUES.glob("*-values.yaml")):
        out[path.name.removesuffix("-values.yaml")] = yaml.safe_load(path.read_text()) or {}
    return out


def render_raw(values: dict, name: str = RELEASE, namespace: str = NAMESPACE) -> dict[str, str]:
    """Template path -> rendered text (NOTES.txt included)."""
    return helm_python.Chart.load(str(CHART)).render(values, name=name, namespace=namespace)


def render(values: dict, name: str = RELEASE, namespace: str = NAMESPACE) -> list[dict]:
    """Every Kubernetes object the chart renders for these values."""
    docs = []
    for path, text in sorted(render_raw(values, name, namespace).items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                docs.append(doc)
    return docs


def is_engine(doc: dict) -> bool:
    """Whether an object is the optional engine's (templates/engine.yaml), not the mirror's."""
    return doc["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "engine"


def mirror_objects(docs: list[dict]) -> list[dict]:
    """The mirror's own objects among the rendered ones."""
    return [d for d in docs if not is_engine(d)]


def notes(values: dict) -> str:
    raw = render_raw(values)
    return next(text for path, text in raw.items() if path.endswith("NOTES.txt"))


def lint(values: dict) -> list[str]:
    """helm lint --strict findings, one line each (info level included)."""
    report = helm_python.lint(str(CHART), values, strict=True)
    found = [f"{m.get('path')}: {m.get('error')}" for m in report.get("messages", [])]
    found += [str(e) for e in report.get("errors", [])]
    return found
