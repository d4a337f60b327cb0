#!/usr/bin/env bash
# Offline checks of the mirror's deployment files (no Docker engine, no cluster needed):
#
#   hadolint             the Dockerfile, zero findings at any level
#   ShellCheck           this script
#   yamllint             the chart's YAML (values, Chart.yaml, ci/ scenarios; templates are
#                        Go templates, checked after rendering instead)
#   helm lint + render   with helm-python-sdk (Helm's Go SDK), for the default values and
#                        every scenario in deploy/helm/llmgw-mirror/ci/*-values.yaml
#   kubernetes-validate  --strict on every rendered object (CRD kinds skipped by name)
#   chart test           deploy/tests/test_chart.py: probes, securityContext, store path,
#                        ports, token path, and bad values refused by values.schema.json
#   engine chart test    deploy/tests/test_engine.py: the optional engine (image by digest,
#                        GPUs, HF_ENDPOINT at the mirror, selectors apart)
#   CLI contract         deploy/tests/test_cli_contract.py: the chart's command lines run
#                        against the real binary ($LLMGW_BIN, else debug/llmgw under
#                        $CARGO_TARGET_DIR or target/)
#
# Uses the venv at ${LLMGW_VENV:-.venv} (made by scripts/setup.sh). Runs every step, then
# exits 1 if any step found something.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=${LLMGW_VENV:-.venv}
# Absolute, so that steps may change directory.
case $venv in
  /*) ;;
  *) venv="$PWD/$venv" ;;
esac
py="$venv/bin/python"
for tool in python hadolint yamllint kubernetes-validate; do
  if [ ! -x "$venv/bin/$tool" ]; then
    echo "deploy/check.sh: $venv/bin/$tool is missing: run scripts/setup.sh" >&2
    exit 1
  fi
done
if ! "$py" -c 'import helm_python' 2>/dev/null; then
  echo "deploy/check.sh: helm-python-sdk is not installed in $venv: run scripts/setup.sh" >&2
  exit 1
fi
if ! command -v shellcheck >/dev/null; then
  echo "deploy/check.sh: shellcheck is missing: run scripts/setup.sh" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

passed=0
failed=0
failed_steps=()
# step NAME COMMAND...: runs one check, counts it, keeps going on failure.
step() {
  local name=$1
  shift
  echo "== $name"
  if "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    failed_steps+=("$name")
    echo "!! $name: FAILED" >&2
  fi
}

validate_rendered() {
  local files=()
  "$py" deploy/tests/render.py "$work/rendered" >"$work/files" || return 1
  mapfile -t files <"$work/files"
  if ((${#files[@]} == 0)); then
    echo "no rendered manifests to validate" >&2
    return 1
  fi
  "$venv/bin/kubernetes-validate" --strict --quiet "${files[@]}" || return 1
  echo "${#files[@]} manifests valid"
}

lint_yaml() {
  # Run from deploy/ so the ignore patterns in yamllint.yaml apply as written.
  (cd deploy && "$venv/bin/yamllint" --strict -c yamllint.yaml .)
}

step "hadolint Dockerfile" "$venv/bin/hadolint" --failure-threshold style Dockerfile
step "shellcheck deploy/check.sh" shellcheck deploy/check.sh
step "yamllint deploy/" lint_yaml
step "helm lint, render and kubernetes-validate --strict" validate_rendered
step "chart test (deploy/tests/test_chart.py)" "$py" deploy/tests/test_chart.py
step "engine chart test (deploy/tests/test_engine.py)" "$py" deploy/tests/test_engine.py
step "CLI contract (deploy/tests/test_cli_contract.py)" "$py" deploy/tests/test_cli_contract.py

echo "deploy: $passed passed, $failed failed"
if ((failed)); then
  printf 'failed: %s\n' "${failed_steps[@]}" >&2
  exit 1
fi
