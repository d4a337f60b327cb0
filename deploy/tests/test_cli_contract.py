"""The chart's commands against the real `llmgw` binary (and, for the s3 scenario, a real
S3 server: Garage from $LLMGW_GARAGE, started by `llmgw-fixture --s3 garage`).

The chart hard-codes command lines (`mirror serve --store ... --listen ...`,
`bundle trust add KEY --store ...`, `bundle import BUNDLE --sha256 HEX --store ...`). This
test takes them from the rendered chart, maps the pod's paths to a temporary directory
(the store, the mounted key ConfigMap, the token Secret) and runs them: the trust init
containers must succeed, twice (a pod restart re-runs them); the server must answer
/healthz and /readyz on the port the Service targets, enforce the token on other routes
while leaving the probes and /metrics open; the import's flags must parse (exit 1 for a missing bundle,
never 2 for a usage error).

The binary: $LLMGW_BIN, else $CARGO_TARGET_DIR/debug/llmgw or target/debug/llmgw
(scripts/test.sh builds it with cargo test).

    .venv/bin/python deploy/tests/test_cli_contract.py
"""

from __future__ import annotations

import base64
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chartlib  # noqa: E402


def binary() -> Path:
    env = os.environ.get("LLMGW_BIN")
    # Where cargo put it: $CARGO_TARGET_DIR when set, as scripts/test.sh reads it.
    target = os.environ.get("CARGO_TARGET_DIR") or chartlib.DEPLOY.parent / "target"
    path = Path(env) if env else Path(target) / "debug" / "llmgw"
    if not path.is_file():
        raise SystemExit(f"{path} does not exist: build it with `cargo build -p llmgw` (or set LLMGW_BIN)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, token: str | None = None) -> int:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


class Pod:
    """Maps a rendered pod's mount paths onto a temporary directory."""

    def __init__(self, root: Path, docs: list[dict], pod: dict):
        self.root = root
        self.map: dict[str, Path] = {}
        for vol in pod["volumes"]:
            host = root / vol["name"]
            host.mkdir(exist_ok=True)
            if "configMap" in vol:
                (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == vol["configMap"]["name"]]
                for key, text in cm["data"].items():
                    (host / key).write_text(text)
            if "secret" in vol:
                secrets = [d for d in docs if d["kind"] == "Secret" and d["metadata"]["name"] == vol["secret"]["secretName"]]
                for secret in secrets:
                    for key, b64 in secret["data"].items():
                        (host / key).write_bytes(base64.b64decode(b64))
        for c in pod.get("initContainers", []) + pod["containers"]:
            for m in c.get("volumeMounts", []):
                self.map[m["mountPath"]] = root / m["name"]

    def path(self, arg: str) -> str:
        """`arg` with a mount path prefix replaced by its host directory."""
        for mount, host in sorted(self.map.items(), key=lambda kv: -len(kv[0])):
            if arg == mount or arg.startswith(mount + "/"):
                return str(host) + arg[len(mount):]
        return arg

    def args(self, container: dict) -> list[str]:
        return [self.path(a) for a in container["args"]]

    def env(self, container: dict, secrets: dict[str, str] | None = None) -> dict[str, str]:
        """The container's environment; a value from a Secret's key comes from `secrets`."""
        env = dict(os.environ)
        for e in container.get("env", []):
            if "valueFrom" in e:
                env[e["name"]] = (secrets or {})[e["valueFrom"]["secretKeyRef"]["key"]]
            else:
                env[e["name"]] = self.path(e["value"])
        return env


class CliContractTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bin = binary()

    def run_llmgw(self, args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(self.bin), *args], env=env, capture_output=True, text=True, timeout=60)

    def test_trust_init_containers_and_server_with_token(self):
        values = chartlib.scenarios()["full"]
        docs = chartlib.render(values)
        (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
        pod_spec = deploy["spec"]["template"]["spec"]
        with tempfile.TemporaryDirectory() as tmp:
            pod = Pod(Path(tmp), docs, pod_spec)
            trust = [c for c in pod_spec["initContainers"] if c["name"].startswith("trust-")]
            self.assertEqual(len(trust), 2)
            for attempt in ("first start", "restart"):
                for c in trust:
                    done = self.run_llmgw(pod.args(c), pod.env(c))
                    self.assertEqual(done.returncode, 0, f"{attempt}: {c['name']}: {done.stderr}")
            held = sorted(p.name for p in (Path(tmp) / "store" / "trust").iterdir())
            self.assertEqual(held, ["BF88CF1F758601FC.pub", "C02C899FF675497C.pub"])

            (mirror,) = pod_spec["containers"]
            with self.serving(pod, mirror, Path(tmp)) as base:
                live = mirror["livenessProbe"]["httpGet"]["path"]
                # Probes carry no token: they must stay open when a token is required.
                self.assertEqual(get(base + live), 200, "liveness probe path")
                token = values["auth"]["token"]
                self.assertEqual(get(base + "/v1/index"), 401)
                self.assertEqual(get(base + "/v1/index", token), 200)
                # Prometheus scrapes without the token (the ServiceMonitor sends none).
                self.assertEqual(get(base + "/metrics"), 200)

    @contextlib.contextmanager
    def serving(self, pod: Pod, mirror: dict, tmp: Path, secrets: dict[str, str] | None = None):
        """Runs the mirror container's command on a free port until its readiness probe
        answers 200; yields its base URL and stops it afterwards."""
        args = pod.args(mirror)
        i = args.index("--listen")
        host, _, _ = args[i + 1].rpartition(":")
        port = free_port()
        args[i + 1] = f"{host}:{port}"  # the chart's address, on a port free on this machine
        log_path = tmp / "server.log"
        with open(log_path, "w") as log:
            server = subprocess.Popen([str(self.bin), *args], env=pod.env(mirror, secrets), stdout=log, stderr=log)
            try:
                base = f"http://127.0.0.1:{port}"
                ready = mirror["readinessProbe"]["httpGet"]["path"]
                deadline = time.monotonic() + 30
                status = None
                while time.monotonic() < deadline:
                    self.assertIsNone(server.poll(), f"server exited: {log_path.read_text()}")
                    try:
                        status = get(base + ready)
                    except OSError:
                        status = None
                    if status == 200:
                        break
                    time.sleep(0.2)
                self.assertEqual(status, 200, f"readiness probe path: {log_path.read_text()}")
                yield base
            finally:
                server.terminate()
                server.wait(timeout=10)

    def test_trust_init_containers_then_import(self):
        values = chartlib.scenarios()["full"]
        docs = chartlib.render(values)
        (job,) = [d for d in docs if d["kind"] == "Job"]
        pod_spec = job["spec"]["template"]["spec"]
        with tempfile.TemporaryDirectory() as tmp:
            pod = Pod(Path(tmp), docs, pod_spec)
            trust = pod_spec["initContainers"]
            self.assertEqual([c["name"] for c in trust], ["trust-0", "trust-1"])
            # A retried Job pod (or a restarted mirror pod) runs them again: still fine.
            for attempt in ("first run", "rerun"):
                for c in trust:
                    done = self.run_llmgw(pod.args(c), pod.env(c))
                    self.assertEqual(done.returncode, 0, f"{attempt}: {c['name']}: {done.stderr}")
            held = sorted(p.name for p in (Path(tmp) / "store" / "trust").iterdir())
            self.assertEqual(held, ["BF88CF1F758601FC.pub", "C02C899FF675497C.pub"])
            (imp,) = pod_spec["containers"]
            done = self.run_llmgw(pod.args(imp), pod.env(imp))
            # The bundle is not there: a failure (1) that names it, not a usage error (2).
            self.assertEqual(done.returncode, 1, done.stderr)
            self.assertIn(values["bundleImport"]["path"], done.stderr)

    def test_s3_store_against_a_real_s3_server(self):
        # The s3 scenario's commands against Garage (a real S3 server): the import Job's
        # trust init containers put the key into the bucket (twice, as a retried pod
        # would), its import parses, and a replica serves from the bucket.
        fixture = self.bin.parent / "llmgw-fixture"
        if not fixture.is_file():
            raise SystemExit(f"{fixture} does not exist: build it with `cargo build -p llmgw-fixture`")
        with tempfile.TemporaryDirectory() as tmp:
            env_file = Path(tmp) / "s3.env"
            glog = open(Path(tmp) / "garage.log", "w")  # noqa: SIM115 - closed in finally
            garage = subprocess.Popen(
                [str(fixture), "--s3", "garage", "--env-file", str(env_file)], stdout=subprocess.DEVNULL, stderr=glog
            )
            try:
                deadline = time.monotonic() + 60
                while not env_file.exists():
                    self.assertIsNone(garage.poll(), (Path(tmp) / "garage.log").read_text())
                    self.assertLess(time.monotonic(), deadline, "Garage did not start")
                    time.sleep(0.1)
                fx = dict(line.split("=", 1) for line in env_file.read_text().splitlines())
                fx = {k: v.strip("'") for k, v in fx.items()}
                values = chartlib.scenarios()["s3"]
                values["store"]["s3"].update(
                    bucket=fx["FX_S3_BUCKET"], endpoint=fx["FX_S3_ENDPOINT"], region=fx["FX_S3_REGION"],
                    publicEndpoint=fx["FX_S3_ENDPOINT"].replace("127.0.0.1", "localhost"),
                )
                secrets = {"AWS_ACCESS_KEY_ID": fx["FX_S3_ACCESS_KEY"], "AWS_SECRET_ACCESS_KEY": fx["FX_S3_SECRET_KEY"]}
                docs = chartlib.render(values)
                (job,) = [d for d in docs if d["kind"] == "Job"]
                job_spec = job["spec"]["template"]["spec"]
                (Path(tmp) / "job").mkdir()
                pod = Pod(Path(tmp) / "job", docs, job_spec)
                for attempt in ("first run", "rerun"):
                    for c in job_spec["initContainers"]:
                        done = self.run_llmgw(pod.args(c), pod.env(c, secrets))
                        self.assertEqual(done.returncode, 0, f"{attempt}: {c['name']}: {done.stderr}")
                (imp,) = job_spec["containers"]
                store = imp["args"][imp["args"].index("--store") + 1]
                listed = self.run_llmgw(["bundle", "trust", "list", "--store", store, "--json"], pod.env(imp, secrets))
                self.assertEqual(listed.returncode, 0, listed.stderr)
                self.assertIn("C02C899FF675497C", listed.stdout, "the key is trusted in the bucket")
                done = self.run_llmgw(pod.args(imp), pod.env(imp, secrets))
                # The bundle is not there: a failure (1) that names it, not a usage error (2).
                self.assertEqual(done.returncode, 1, done.stderr)
                self.assertIn(values["bundleImport"]["path"], done.stderr)

                (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
                pod_spec = deploy["spec"]["template"]["spec"]
                (Path(tmp) / "replica").mkdir()
                replica = Pod(Path(tmp) / "replica", docs, pod_spec)
                (mirror,) = pod_spec["containers"]
                with self.serving(replica, mirror, Path(tmp), secrets) as base:
                    self.assertEqual(get(base + "/v1/index"), 200)
                    self.assertEqual(get(base + mirror["livenessProbe"]["httpGet"]["path"]), 200)

                # The other delivery: proxy, with the read-through cache.
                values["store"]["s3"].update(blobDelivery="proxy", cache={"enabled": True, "sizeLimit": "1Gi"})
                docs = chartlib.render(values)
                (deploy,) = [d for d in docs if d["kind"] == "Deployment"]
                pod_spec = deploy["spec"]["template"]["spec"]
                (Path(tmp) / "cached").mkdir()
                (mirror,) = pod_spec["containers"]
                self.assertIn("--cache-dir", mirror["args"])
                with self.serving(Pod(Path(tmp) / "cached", docs, pod_spec), mirror, Path(tmp), secrets) as base:
                    self.assertEqual(get(base + "/v1/index"), 200)
            finally:
                garage.terminate()
                garage.wait(timeout=10)
                glog.close()


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if result.testsRun == 0:
        print("no CLI contract tests ran", file=sys.stderr)
        sys.exit(1)
    sys.exit(0 if result.wasSuccessful() else 1)
