"""Chart test: renders the llmgw-mirror chart offline (Helm's Go SDK via helm-python-sdk)
and checks the things that break a deployment silently: probes, the restricted security
context, that the store the command uses is the volume mounted there, that the Service
reaches the port the server listens on, that secret files are where the flags point,
and that bad values are refused at install.

    .venv/bin/python deploy/tests/test_chart.py
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chartlib  # noqa: E402

import helm_python  # noqa: E402


def objs(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: list[dict], kind: str) -> dict:
    found = objs(docs, kind)
    assert len(found) == 1, f"expected one {kind}, rendered {len(found)}"
    return found[0]


def flag(args: list[str], name: str) -> str | None:
    """Value of `--name VALUE` in an argument list (None when absent)."""
    if name not in args:
        return None
    i = args.index(name)
    assert i + 1 < len(args), f"{name} has no value in {args}"
    assert args.count(name) == 1, f"{name} given twice in {args}"
    return args[i + 1]


def mount_path(container: dict, volume: str) -> str:
    paths = [m["mountPath"] for m in container.get("volumeMounts", []) if m["name"] == volume]
    assert len(paths) == 1, f"container {container['name']} mounts volume {volume!r} {len(paths)} times"
    return paths[0]


def volume(pod: dict, name: str) -> dict:
    vols = [v for v in pod.get("volumes", []) if v["name"] == name]
    assert len(vols) == 1, f"pod has {len(vols)} volumes named {name!r}"
    return vols[0]


QUANTITY_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
                  "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


def cache_bytes(size_limit: str) -> str:
    """The --cache-size the chart passes for an emptyDir sizeLimit: 90% of it, in bytes."""
    num = size_limit.rstrip("kKMGTPEi")
    return str(round(float(num) * QUANTITY_UNITS[size_limit[len(num):]] * 0.9))


def is_s3(r) -> bool:
    return r.values.get("store", {}).get("type") == "s3"


def all_containers(pod: dict) -> list[dict]:
    return pod.get("initContainers", []) + pod["containers"]


def matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class Rendered:
    """One scenario's objects with the pieces the tests look at."""

    def __init__(self, scenario: str, values: dict):
        self.scenario = scenario
        self.values = values
        # The mirror's objects; the optional engine's are test_engine.py's.
        self.docs = chartlib.mirror_objects(chartlib.render(values))
        self.deploy = one(self.docs, "Deployment")
        self.pod = self.deploy["spec"]["template"]["spec"]
        self.mirror = next(c for c in self.pod["containers"] if c["name"] == "mirror")
        self.args = self.mirror["args"]

    def claim_name(self) -> str:
        return volume(self.pod, "store")["persistentVolumeClaim"]["claimName"]


class ChartTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rendered = {s: Rendered(s, v) for s, v in chartlib.scenarios().items()}
        assert {"default", "full", "initcontainer-hostpath", "rwx", "s3"} <= set(cls.rendered), cls.rendered.keys()

    def each(self) -> list[Rendered]:
        return list(self.rendered.values())

    # --- the server command and what it points at ---

    def test_command_is_mirror_serve(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                self.assertEqual(r.args[:2], ["mirror", "serve"])
                self.assertNotIn("command", r.mirror, "the image's ENTRYPOINT (llmgw) must stay")

    def check_store(self, r: Rendered, c: dict, where: str = "") -> str:
        """`c`'s --store is the release's store: the claim mounted there, or the bucket with
        its credentials from the Secret and a work folder mounted where LLMGW_WORK_DIR says."""
        store = flag(c["args"], "--store")
        env = {e["name"]: e for e in c.get("env", [])}
        self.assertEqual(env["LLMGW_STORE"].get("value"), store, where)
        if is_s3(r):
            cfg = r.values["store"]["s3"]
            self.assertEqual(store, f"s3://{cfg['bucket']}/{cfg['prefix']}", where)
            self.assertEqual(env["LLMGW_WORK_DIR"]["value"], mount_path(c, "work"), where)
            self.assertEqual(env["AWS_ENDPOINT_URL"]["value"], cfg["endpoint"], where)
            self.assertEqual(env["AWS_REGION"]["value"], cfg["region"], where)
            for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
                ref = env[key]["valueFrom"]["secretKeyRef"]
                self.assertEqual(ref, {"name": cfg["existingSecret"], "key": key}, where)
            self.assertNotIn("store", [m["name"] for m in c["volumeMounts"]], where)
        else:
            self.assertEqual(store, mount_path(c, "store"), where)
            self.assertNotIn("AWS_SECRET_ACCESS_KEY", env, where)
        return store

    def test_store_mount_is_the_store_the_command_uses(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                self.check_store(r, r.mirror)
                pvcs = objs(r.docs, "PersistentVolumeClaim")
                if is_s3(r):
                    self.assertEqual(pvcs, [], "no claim is created for a store in a bucket")
                    cfg = r.values["store"]["s3"]
                    self.assertEqual(flag(r.args, "--s3-poll-seconds"), str(cfg.get("pollSeconds", 5)))
                    if cfg.get("blobDelivery") == "presigned":
                        self.assertEqual(flag(r.args, "--blob-delivery"), "presigned")
                        self.assertEqual(flag(r.args, "--s3-public-endpoint"), cfg["publicEndpoint"])
                        self.assertEqual(flag(r.args, "--presign-seconds"), str(cfg.get("presignSeconds", 300)))
                    else:
                        self.assertIsNone(flag(r.args, "--blob-delivery"), "proxy is the server's default")
                    cache = cfg.get("cache", {})
                    if cache.get("enabled"):
                        self.assertEqual(flag(r.args, "--cache-dir"), mount_path(r.mirror, "cache"))
                        self.assertEqual(volume(r.pod, "cache")["emptyDir"]["sizeLimit"], cache["sizeLimit"])
                        self.assertEqual(flag(r.args, "--cache-size"), cache_bytes(cache["sizeLimit"]))
                    else:
                        self.assertIsNone(flag(r.args, "--cache-dir"))
                        self.assertIsNone(flag(r.args, "--cache-size"))
                    self.assertEqual(volume(r.pod, "work")["emptyDir"]["sizeLimit"], r.values["store"]["s3"].get("workSizeLimit", "1Gi"))
                    continue
                claim = r.claim_name()
                existing = r.values.get("store", {}).get("existingClaim")
                if existing:
                    self.assertEqual(claim, existing)
                    self.assertEqual(pvcs, [], "no claim is created when existingClaim is given")
                else:
                    self.assertEqual([p["metadata"]["name"] for p in pvcs], [claim])
                    mode = r.values.get("store", {}).get("accessMode", "ReadWriteOnce")
                    self.assertEqual(pvcs[0]["spec"]["accessModes"], [mode])

    def test_s3_proxy_with_a_read_through_cache(self):
        values = {**self.rendered["s3"].values}
        values["store"] = {**values["store"], "s3": {**values["store"]["s3"], "blobDelivery": "proxy",
                                                     "cache": {"enabled": True, "sizeLimit": "300Gi"}}}
        r = Rendered("s3-cache", values)
        self.check_store(r, r.mirror)
        self.assertEqual(flag(r.args, "--cache-dir"), mount_path(r.mirror, "cache"))
        self.assertEqual(volume(r.pod, "cache")["emptyDir"]["sizeLimit"], "300Gi")
        # The cache keeps 90% of the emptyDir, so the kubelet never evicts the pod for it.
        self.assertEqual(flag(r.args, "--cache-size"), str(round(300 * 2**30 * 0.9)))
        self.assertLess(int(flag(r.args, "--cache-size")), 300 * 2**30)
        for limit, want in (("1500M", 1_350_000_000), ("2Ti", round(2 * 2**40 * 0.9)), ("1.5Gi", round(1.5 * 2**30 * 0.9))):
            values["store"]["s3"]["cache"] = {"enabled": True, "sizeLimit": limit}
            self.assertEqual(flag(Rendered("s3-cache", values).args, "--cache-size"), str(want), limit)
        self.assertIsNone(flag(r.args, "--blob-delivery"))

    def test_service_targets_the_port_the_server_listens_on(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                listen = flag(r.args, "--listen")
                host, _, port = listen.rpartition(":")
                self.assertEqual(host, "0.0.0.0", "the server must listen on all pod addresses")
                ports = {p["name"]: p["containerPort"] for p in r.mirror["ports"]}
                self.assertEqual(ports.get("http"), int(port))
                svc = one(r.docs, "Service")
                (sport,) = svc["spec"]["ports"]
                target = sport["targetPort"]
                self.assertEqual(ports[target] if isinstance(target, str) else target, int(port))
                self.assertTrue(matches(svc["spec"]["selector"], r.deploy["spec"]["template"]["metadata"]["labels"]))
                self.assertEqual(sport["port"], r.values.get("service", {}).get("port", 80))

    def test_probes_hit_healthz_and_readyz_on_the_named_port(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                live = r.mirror["livenessProbe"]["httpGet"]
                ready = r.mirror["readinessProbe"]["httpGet"]
                self.assertEqual((live["path"], live["port"]), ("/healthz", "http"))
                self.assertEqual((ready["path"], ready["port"]), ("/readyz", "http"))
                tls = r.values.get("tls", {}).get("enabled", False)
                self.assertEqual(live["scheme"], "HTTPS" if tls else "HTTP")
                self.assertEqual(ready["scheme"], "HTTPS" if tls else "HTTP")

    def test_public_url_is_passed(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                self.assertEqual(flag(r.args, "--public-url"), r.values.get("server", {}).get("publicUrl") or None)
        notes = chartlib.notes(chartlib.scenarios()["full"])
        self.assertIn("export HF_ENDPOINT=https://mirror.example.internal", notes)
        self.assertIn("GitHub API base URL:       https://mirror.example.internal/api/v3", notes)
        default_notes = chartlib.notes({})
        self.assertIn("export HF_ENDPOINT=http://rel-llmgw-mirror.llmgw.svc.cluster.local:80", default_notes)

    # --- security ---

    def pods(self, r: Rendered):
        yield "Deployment", r.pod
        for job in objs(r.docs, "Job"):
            yield "Job " + job["metadata"]["name"], job["spec"]["template"]["spec"]

    def test_restricted_security_context(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                for where, pod in self.pods(r):
                    psc = pod["securityContext"]
                    self.assertIs(psc["runAsNonRoot"], True, where)
                    self.assertEqual(psc["runAsUser"], 10001, where)
                    self.assertEqual(psc["fsGroup"], 10001, where)
                    self.assertEqual(psc["seccompProfile"], {"type": "RuntimeDefault"}, where)
                    self.assertIs(pod["automountServiceAccountToken"], False, where)
                    self.assertNotIn("hostNetwork", pod)
                    for c in all_containers(pod):
                        sc = c["securityContext"]
                        msg = f"{where} container {c['name']}"
                        self.assertIs(sc["runAsNonRoot"], True, msg)
                        self.assertIs(sc["allowPrivilegeEscalation"], False, msg)
                        self.assertIs(sc["readOnlyRootFilesystem"], True, msg)
                        self.assertEqual(sc["capabilities"], {"drop": ["ALL"]}, msg)
                        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"}, msg)
                        self.assertNotIn("privileged", sc, msg)
                        # Read-only root: /tmp must be a writable emptyDir.
                        self.assertEqual(mount_path(c, "tmp"), "/tmp", msg)
                    self.assertIn("emptyDir", volume(pod, "tmp"))

    def test_token_file_is_the_mounted_secret(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                auth = r.values.get("auth", {})
                token_file = flag(r.args, "--token-file")
                if not auth.get("enabled"):
                    self.assertIsNone(token_file)
                    self.assertEqual(objs(r.docs, "Secret"), [])
                    continue
                key = auth.get("secretKey", "token")
                vol = volume(r.pod, "token")["secret"]
                self.assertEqual(token_file, f"{mount_path(r.mirror, 'token')}/{key}")
                self.assertEqual(vol["items"], [{"key": key, "path": key}])
                if auth.get("existingSecret"):
                    self.assertEqual(vol["secretName"], auth["existingSecret"])
                    self.assertEqual(objs(r.docs, "Secret"), [])
                else:
                    secret = one(r.docs, "Secret")
                    self.assertEqual(vol["secretName"], secret["metadata"]["name"])
                    self.assertIn(key, secret["data"])

    def test_tls_files_are_the_mounted_secret(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                tls = r.values.get("tls", {})
                if not tls.get("enabled"):
                    self.assertIsNone(flag(r.args, "--tls-cert"))
                    continue
                base = mount_path(r.mirror, "tls")
                self.assertEqual(flag(r.args, "--tls-cert"), f"{base}/tls.crt")
                self.assertEqual(flag(r.args, "--tls-key"), f"{base}/tls.key")
                self.assertEqual(volume(r.pod, "tls")["secret"]["secretName"], tls["secretName"])

    # --- trust keys and bundle import ---

    def test_every_key_is_trusted_into_the_store_before_import(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                trust = r.values.get("trust", {})
                want = sorted(trust.get("existingKeys") or trust.get("keys", {}).keys())
                for where, pod in self.pods(r):
                    inits = [c for c in pod.get("initContainers", []) if c["name"].startswith("trust-")]
                    if is_s3(r) and where == "Deployment":
                        # The bucket's keys are added by the import Job alone: replicas
                        # starting together would contend for its writer lock.
                        self.assertEqual(inits, [], where)
                        continue
                    self.assertEqual(len(inits), len(want), where)
                    if not want:
                        continue
                    src = volume(pod, "trust")
                    cm = one(r.docs, "ConfigMap") if trust.get("keys") else None
                    if cm:
                        self.assertEqual(src["configMap"]["name"], cm["metadata"]["name"])
                        self.assertEqual(sorted(cm["data"]), want)
                        for name, text in trust["keys"].items():
                            self.assertEqual(cm["data"][name], text.strip() + "\n")
                    elif trust.get("existingSecret"):
                        self.assertEqual(src["secret"]["secretName"], trust["existingSecret"])
                    else:
                        self.assertEqual(src["configMap"]["name"], trust["existingConfigMap"])
                    for c, key in zip(inits, want):
                        self.assertEqual(c["args"][:3], ["bundle", "trust", "add"], where)
                        self.assertEqual(c["args"][3], f"{mount_path(c, 'trust')}/{key}", where)
                        self.assertEqual(self.check_store(r, c, where), flag(r.args, "--store"), where)
                    # Trust comes first: every trust-* init container precedes an import.
                    names = [c["name"] for c in all_containers(pod)]
                    if "import" in names:
                        self.assertLess(max(names.index(c["name"]) for c in inits), names.index("import"), where)

    def import_pods(self, r: Rendered):
        bi = r.values.get("bundleImport", {})
        if not bi.get("enabled"):
            self.assertEqual(objs(r.docs, "Job"), [])
            self.assertNotIn("import", [c["name"] for c in r.pod.get("initContainers", [])])
            return []
        if bi.get("mode", "job") == "job":
            job = one(r.docs, "Job")
            self.assertIn(bi["sha256"][:12], job["metadata"]["name"])
            self.assertEqual(job["metadata"]["annotations"]["bundle-sha256"], bi["sha256"])
            return [job["spec"]["template"]["spec"]]
        self.assertEqual(objs(r.docs, "Job"), [])
        return [r.pod]

    def test_import_reads_the_bundle_volume_into_the_same_store(self):
        seen = 0
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                bi = r.values.get("bundleImport", {})
                for pod in self.import_pods(r):
                    seen += 1
                    (imp,) = [c for c in all_containers(pod) if c["name"] == "import"]
                    args = imp["args"]
                    self.assertEqual(args[:2], ["bundle", "import"])
                    self.assertEqual(flag(args, "--sha256"), bi["sha256"])
                    self.assertEqual(self.check_store(r, imp), flag(r.args, "--store"))
                    if is_s3(r):
                        size = r.values["store"]["s3"].get("importWorkSizeLimit", "200Gi")
                        self.assertEqual(volume(pod, "work")["emptyDir"]["sizeLimit"], size, "room for one bundle")
                    else:
                        self.assertEqual(volume(pod, "store")["persistentVolumeClaim"]["claimName"], r.claim_name())
                    bundle_dir = mount_path(imp, "bundle")
                    self.assertEqual(args[2], f"{bundle_dir}/{bi['path'].lstrip('/')}")
                    src = volume(pod, "bundle")
                    if bi["source"]["type"] == "hostPath":
                        self.assertEqual(src["hostPath"]["path"], bi["source"]["hostPath"])
                    else:
                        self.assertEqual(src["persistentVolumeClaim"]["claimName"], bi["source"]["claimName"])
                    self.assertTrue(
                        all(m.get("readOnly") for m in imp["volumeMounts"] if m["name"] == "bundle"),
                        "the bundle is mounted read-only",
                    )
        self.assertGreaterEqual(seen, 3, "the ci scenarios cover job and initContainer imports")

    def test_import_job_shares_a_readwriteonce_store_on_the_mirrors_node(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                for job in objs(r.docs, "Job"):
                    pod = job["spec"]["template"]["spec"]
                    pod_labels = job["spec"]["template"]["metadata"]["labels"]
                    # The import pod must never be picked up by the Deployment or the Service.
                    self.assertFalse(matches(r.deploy["spec"]["selector"]["matchLabels"], pod_labels))
                    self.assertFalse(matches(one(r.docs, "Service")["spec"]["selector"], pod_labels))
                    mode = r.values.get("store", {}).get("accessMode", "ReadWriteOnce")
                    if mode == "ReadWriteOnce" and not is_s3(r):
                        (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                        self.assertEqual(term["topologyKey"], "kubernetes.io/hostname")
                        self.assertEqual(
                            term["labelSelector"]["matchLabels"], r.deploy["spec"]["selector"]["matchLabels"]
                        )
                    else:
                        self.assertNotIn("affinity", pod)

    def test_strategy_fits_the_access_mode(self):
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                mode = r.values.get("store", {}).get("accessMode", "ReadWriteOnce")
                want = "RollingUpdate" if mode == "ReadWriteMany" or is_s3(r) else "Recreate"
                self.assertEqual(r.deploy["spec"]["strategy"]["type"], want)

    def test_replicas_are_spread_and_budgeted(self):
        # One replica: no budget (it would block every drain or promise nothing) and no
        # anti-affinity. Several: a budget over exactly the Deployment's pods, and replicas
        # preferring (or, with "hard", requiring) distinct nodes unless affinity is given.
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                replicas = r.values.get("replicaCount", 1)
                pdbs = objs(r.docs, "PodDisruptionBudget")
                if replicas == 1:
                    self.assertEqual(pdbs, [])
                    continue
                (pdb,) = pdbs
                self.assertEqual(pdb["spec"]["maxUnavailable"], 1)
                self.assertEqual(pdb["spec"]["selector"]["matchLabels"], r.deploy["spec"]["selector"]["matchLabels"])
                if r.values.get("affinity"):
                    self.assertEqual(r.pod["affinity"], r.values["affinity"])
                    continue
                (term,) = r.pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
                self.assertEqual(term["podAffinityTerm"]["topologyKey"], "kubernetes.io/hostname")
                self.assertEqual(
                    term["podAffinityTerm"]["labelSelector"]["matchLabels"], r.deploy["spec"]["selector"]["matchLabels"]
                )
        self.assertTrue(any(objs(r.docs, "PodDisruptionBudget") for r in self.each()), "a scenario has replicas")

        base = dict(self.rendered["rwx"].values)
        hard = Rendered("hard", {**base, "podAntiAffinity": "hard"})
        (term,) = hard.pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        self.assertEqual(term["labelSelector"]["matchLabels"], hard.deploy["spec"]["selector"]["matchLabels"])
        anywhere = Rendered("anywhere", {**base, "podAntiAffinity": "", "podDisruptionBudget": {"enabled": False, "maxUnavailable": 1}})
        self.assertNotIn("affinity", anywhere.pod)
        self.assertEqual(objs(anywhere.docs, "PodDisruptionBudget"), [])

    def test_ingress_and_service_monitor_point_at_the_service(self):
        r = self.rendered["full"]
        svc = one(r.docs, "Service")
        ing = one(r.docs, "Ingress")
        self.assertEqual(ing["spec"]["ingressClassName"], "nginx")
        self.assertEqual(ing["spec"]["tls"], [{"secretName": "mirror-tls", "hosts": ["mirror.example.internal"]}])
        backend = ing["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
        self.assertEqual(backend, {"name": svc["metadata"]["name"], "port": {"number": svc["spec"]["ports"][0]["port"]}})
        sm = one(r.docs, "ServiceMonitor")
        self.assertEqual(sm["apiVersion"], "monitoring.coreos.com/v1")
        self.assertTrue(matches(sm["spec"]["selector"]["matchLabels"], svc["metadata"]["labels"]))
        (ep,) = sm["spec"]["endpoints"]
        self.assertEqual((ep["port"], ep["path"]), (svc["spec"]["ports"][0]["name"], "/metrics"))
        self.assertEqual(sm["metadata"]["labels"]["release"], "prometheus")
        self.assertEqual(ep["scheme"], "http")
        # With the mirror's own TLS, Prometheus scrapes https and checks the certificate.
        r = self.rendered["initcontainer-hostpath"]
        (ep,) = one(r.docs, "ServiceMonitor")["spec"]["endpoints"]
        self.assertEqual(ep["scheme"], "https")
        self.assertEqual(ep["tlsConfig"], r.values["serviceMonitor"]["tlsConfig"])
        self.assertNotIn("authorization", ep, "/metrics is open; the scrape needs no token")

    def test_scheduling_values_reach_the_pod(self):
        r = self.rendered["full"]
        v = r.values
        self.assertEqual(r.pod["nodeSelector"], v["nodeSelector"])
        self.assertEqual(r.pod["tolerations"], v["tolerations"])
        self.assertEqual(r.pod["affinity"], v["affinity"])
        self.assertEqual(r.mirror["resources"], v["resources"])
        self.assertEqual(r.mirror["image"], "registry.local:5000/llmgw:0.1.0")
        self.assertEqual(self.rendered["rwx"].mirror["image"], "registry.local:5000/platform/llmgw@" + self.rendered["rwx"].values["image"]["digest"])

    def test_values_examples_in_the_docs_render(self):
        import re

        import yaml

        doc = (chartlib.DEPLOY.parent / "docs" / "kubernetes.md").read_text()
        blocks = [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", doc, re.S)]
        values_blocks = [b for b in blocks if isinstance(b, dict) and "apiVersion" not in b]
        self.assertGreaterEqual(len(values_blocks), 2, "docs/kubernetes.md shows values files")
        for values in values_blocks:
            with self.subTest(keys=sorted(values)):
                docs = chartlib.mirror_objects(chartlib.render(values))
                self.assertEqual(len(objs(docs, "Deployment")), 1)

    def test_the_default_image_is_the_one_the_mirror_serves(self):
        """The chart's default image is the name docs/kubernetes.md's bootstrap carries the
        image under (`--image NAME:VERSION=oci-layout:…`, no registry host), at the
        chart's appVersion, so a fresh install pulls what the first bundle brought."""
        import re

        default = self.rendered["default"]
        app_version = (chartlib.CHART / "Chart.yaml").read_text().split('appVersion: "')[1].split('"')[0]
        doc = (chartlib.DEPLOY.parent / "docs" / "kubernetes.md").read_text()
        carried = set(re.findall(r"--image ([a-z0-9./_-]+):[^=\s]+=oci-layout:", doc))
        self.assertEqual(carried, {"llmgw/llmgw"}, "the bootstrap's --image … =oci-layout:")
        self.assertEqual(default.mirror["image"], f"llmgw/llmgw:{app_version}")

    def test_image_and_chart_agree(self):
        """The Dockerfile's runtime stage and the chart's defaults name the same user,
        port and store, so `docker run` and the chart run the same server."""
        import json
        import shlex

        text = (chartlib.DEPLOY.parent / "Dockerfile").read_text()
        lines = [ln.strip() for ln in text.replace("\\\n", " ").splitlines() if ln.strip() and not ln.startswith("#")]
        final = lines[max(i for i, ln in enumerate(lines) if ln.startswith("FROM ")):]
        inst = {}
        for ln in final:
            word, _, rest = ln.partition(" ")
            inst.setdefault(word, []).append(rest.strip())
        default = self.rendered["default"]
        psc = default.pod["securityContext"]
        self.assertEqual(inst["USER"], [f"{psc['runAsUser']}:{psc['runAsGroup']}"])
        self.assertEqual(psc["fsGroup"], psc["runAsGroup"])
        self.assertEqual(json.loads(inst["ENTRYPOINT"][0]), ["llmgw"])
        cmd = json.loads(inst["CMD"][0])
        store, listen = flag(cmd, "--store"), flag(cmd, "--listen")
        self.assertEqual(cmd[:2], ["mirror", "serve"])
        self.assertEqual(json.loads(inst["VOLUME"][0]), [store])
        self.assertEqual(inst["ENV"], [f"LLMGW_STORE={store}"])
        self.assertEqual(store, flag(default.args, "--store"))
        self.assertEqual(listen, flag(default.args, "--listen"))
        self.assertEqual(inst["EXPOSE"], [listen.rpartition(":")[2]])
        labels = dict(
            kv.split("=", 1) for ln in inst["LABEL"] for kv in shlex.split(ln)
        )
        for key in ("title", "description", "licenses", "version", "revision", "created"):
            self.assertIn(f"org.opencontainers.image.{key}", labels)
        self.assertEqual(labels["org.opencontainers.image.licenses"], "Apache-2.0")

    # --- bad values fail at install ---

    BAD = [
        # (what, values, error class, text the message must contain)
        ("replicas not a number", {"replicaCount": "x"}, helm_python.HelmValuesError, "/replicaCount"),
        ("unknown storage access mode", {"store": {"accessMode": "Sideways"}}, helm_python.HelmValuesError, "/store/accessMode"),
        ("unknown top-level key (typo)", {"replicas": 2}, helm_python.HelmValuesError, "replicas"),
        ("unknown import mode", {"bundleImport": {"mode": "cronjob"}}, helm_python.HelmValuesError, "/bundleImport/mode"),
        ("unknown bundle source", {"bundleImport": {"source": {"type": "nfs"}}}, helm_python.HelmValuesError, "/bundleImport/source/type"),
        ("import without sha256",
         {"trust": {"keys": {"k.pub": "untrusted comment: x\nRW" + "A" * 54}},
          "bundleImport": {"enabled": True, "path": "b.tar", "source": {"claimName": "bundles"}}},
         helm_python.HelmValuesError, "sha256"),
        ("short sha256",
         {"bundleImport": {"enabled": True, "sha256": "abc", "path": "b.tar", "source": {"claimName": "bundles"}}},
         helm_python.HelmValuesError, "/bundleImport/sha256"),
        ("all-digit sha256 left unquoted is a number",
         {"bundleImport": {"enabled": True, "sha256": 10**63, "path": "b.tar", "source": {"claimName": "b"}}},
         helm_python.HelmValuesError, "/bundleImport/sha256"),
        ("hostPath source without a path",
         {"bundleImport": {"enabled": True, "sha256": "a" * 64, "path": "b", "source": {"type": "hostPath"}}},
         helm_python.HelmValuesError, "/bundleImport/source/hostPath"),
        ("writable root filesystem", {"securityContext": {"readOnlyRootFilesystem": False}}, helm_python.HelmValuesError, "readOnlyRootFilesystem"),
        ("privilege escalation", {"securityContext": {"allowPrivilegeEscalation": True}}, helm_python.HelmValuesError, "allowPrivilegeEscalation"),
        ("port out of range", {"server": {"port": 70000}}, helm_python.HelmValuesError, "/server/port"),
        ("service type", {"service": {"type": "ExternalName"}}, helm_python.HelmValuesError, "/service/type"),
        ("bad ingress pathType",
         {"ingress": {"enabled": True, "hosts": [{"host": "h", "paths": [{"path": "/", "pathType": "Glob"}]}]}},
         helm_python.HelmValuesError, "pathType"),
        ("tls without a secret", {"tls": {"enabled": True}}, helm_python.HelmValuesError, "secretName"),
        ("not a minisign key", {"trust": {"keys": {"k.pub": "-----BEGIN PUBLIC KEY-----"}}}, helm_python.HelmValuesError, "/trust/keys"),
        ("bad publicUrl", {"server": {"publicUrl": "mirror.local"}}, helm_python.HelmValuesError, "/server/publicUrl"),
        ("store size", {"store": {"size": "lots"}}, helm_python.HelmValuesError, "/store/size"),
        ("unknown anti-affinity", {"podAntiAffinity": "always"}, helm_python.HelmValuesError, "/podAntiAffinity"),
        ("budget of zero", {"podDisruptionBudget": {"enabled": True, "maxUnavailable": 0}}, helm_python.HelmValuesError, "/podDisruptionBudget/maxUnavailable"),
        # Cross-value checks in templates/_validate.tpl:
        ("two replicas on a ReadWriteOnce store", {"replicaCount": 2}, helm_python.HelmRenderError, "ReadWriteMany"),
        ("s3 without a bucket", {"store": {"type": "s3", "s3": {"existingSecret": "s"}}}, helm_python.HelmRenderError, "store.s3.bucket"),
        ("s3 without credentials", {"store": {"type": "s3", "s3": {"bucket": "bucket1"}}}, helm_python.HelmRenderError, "AWS_ACCESS_KEY_ID"),
        ("s3 with an import in every replica",
         {"store": {"type": "s3", "s3": {"bucket": "bucket1", "existingSecret": "s"}},
          "trust": {"keys": {"k.pub": "untrusted comment: x\nRW" + "A" * 54}},
          "bundleImport": {"enabled": True, "mode": "initContainer", "sha256": "a" * 64, "path": "b", "source": {"claimName": "b"}}},
         helm_python.HelmRenderError, "bundleImport.mode: job"),
        ("unknown store type", {"store": {"type": "nfs"}}, helm_python.HelmValuesError, "/store/type"),
        ("cache with presigned",
         {"store": {"type": "s3", "s3": {"bucket": "bucket1", "existingSecret": "s", "endpoint": "http://s3:9000",
                                         "blobDelivery": "presigned", "cache": {"enabled": True, "sizeLimit": "1Gi"}}}},
         helm_python.HelmRenderError, "blobDelivery proxy"),
        ("presigned on a volume", {"store": {"s3": {"blobDelivery": "presigned"}}}, helm_python.HelmRenderError, "store.type: s3"),
        ("presigned without an endpoint",
         {"store": {"type": "s3", "s3": {"bucket": "bucket1", "existingSecret": "s", "blobDelivery": "presigned"}}},
         helm_python.HelmRenderError, "store.s3.publicEndpoint"),
        ("s3 endpoint without a scheme", {"store": {"s3": {"endpoint": "rgw:7480"}}}, helm_python.HelmValuesError, "/store/s3/endpoint"),
        ("import Job on a ReadWriteOncePod store",
         {"store": {"accessMode": "ReadWriteOncePod"},
          "trust": {"keys": {"k.pub": "untrusted comment: x\nRW" + "A" * 54}},
          "bundleImport": {"enabled": True, "sha256": "a" * 64, "path": "b", "source": {"claimName": "b"}}},
         helm_python.HelmRenderError, "bundleImport.mode: initContainer"),
        ("import without a trusted key",
         {"bundleImport": {"enabled": True, "sha256": "a" * 64, "path": "b", "source": {"claimName": "b"}}},
         helm_python.HelmRenderError, "trusted minisign key"),
        ("existing trust Secret without key names", {"trust": {"existingSecret": "keys"}}, helm_python.HelmRenderError, "existingKeys"),
        ("auth without a token", {"auth": {"enabled": True}}, helm_python.HelmRenderError, "auth.existingSecret"),
    ]

    def test_bad_values_are_refused(self):
        for what, values, error, text in self.BAD:
            with self.subTest(what):
                with self.assertRaises(error) as caught:
                    chartlib.render(values)
                self.assertIn(text, str(caught.exception))

    def test_defaults_and_scenarios_pass_the_schema(self):
        # The refusals above mean something only if the same path accepts good values.
        for r in self.each():
            with self.subTest(scenario=r.scenario):
                self.assertGreaterEqual(len(r.docs), 4)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if result.testsRun == 0:
        print("no chart tests ran", file=sys.stderr)
        sys.exit(1)
    sys.exit(0 if result.wasSuccessful() else 1)
