"""Chart test of the optional engine (templates/engine.yaml, #52): off by default; on, a
Deployment whose image is the carried one by digest (else by the recipe table's tag),
whose pods ask for the GPUs given and reach the mirror's Hub API through HF_ENDPOINT at
the mirror's own Service, and a Service that selects the engine's pods and not the
mirror's (nor the mirror's Service the engine's). Bad values are refused at install.

    .venv/bin/python deploy/tests/test_engine.py
"""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chartlib  # noqa: E402

import helm_python  # noqa: E402


def engine_values() -> dict:
    return yaml.safe_load((chartlib.CI_VALUES / "engine-values.yaml").read_text())


def of_kind(docs: list[dict], kind: str) -> list[dict]:
    return [d for d in docs if d["kind"] == kind]


def matches(selector: dict, labels: dict) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class EngineTest(unittest.TestCase):
    def test_off_by_default(self):
        docs = chartlib.render({})
        self.assertEqual([d for d in docs if chartlib.is_engine(d)], [])

    def test_the_carried_image_by_digest_with_gpus_and_the_mirrors_hub(self):
        values = engine_values()
        docs = chartlib.render(values)
        engine = [d for d in docs if chartlib.is_engine(d)]
        self.assertEqual(sorted(d["kind"] for d in engine), ["Deployment", "Service"])
        deploy = of_kind(engine, "Deployment")[0]
        pod = deploy["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        image = values["engine"]["image"]
        self.assertEqual(c["image"], f"{image['repository']}@{image['digest']}")
        self.assertEqual(c["args"], values["engine"]["args"])
        self.assertEqual(c["resources"]["limits"]["nvidia.com/gpu"], 1)
        self.assertEqual(c["resources"]["limits"]["memory"], "64Gi")
        self.assertEqual(c["resources"]["requests"], values["engine"]["resources"]["requests"])
        env = {e["name"]: e.get("value") for e in c["env"]}
        mirror_svc = next(d for d in of_kind(docs, "Service") if not chartlib.is_engine(d))
        self.assertEqual(
            env["HF_ENDPOINT"],
            f"http://{mirror_svc['metadata']['name']}.{chartlib.NAMESPACE}.svc:{mirror_svc['spec']['ports'][0]['port']}",
        )
        self.assertEqual(env["HF_HUB_DISABLE_TELEMETRY"], "1")
        self.assertEqual(pod["nodeSelector"], values["engine"]["nodeSelector"])
        self.assertEqual(pod["tolerations"], values["engine"]["tolerations"])
        # Each Service selects its own pods only.
        engine_svc = of_kind(engine, "Service")[0]
        mirror_deploy = next(d for d in of_kind(docs, "Deployment") if not chartlib.is_engine(d))
        engine_labels = deploy["spec"]["template"]["metadata"]["labels"]
        mirror_labels = mirror_deploy["spec"]["template"]["metadata"]["labels"]
        self.assertTrue(matches(engine_svc["spec"]["selector"], engine_labels))
        self.assertFalse(matches(engine_svc["spec"]["selector"], mirror_labels))
        self.assertFalse(matches(mirror_svc["spec"]["selector"], engine_labels))
        self.assertTrue(matches(deploy["spec"]["selector"]["matchLabels"], engine_labels))
        self.assertEqual(engine_svc["spec"]["ports"][0]["port"], 8000, "values.yaml's engine.port")
        self.assertEqual(c["ports"][0]["containerPort"], 8000)

    def test_by_tag_without_a_digest_and_no_gpu_limit_for_zero(self):
        values = engine_values()
        values["engine"]["image"]["digest"] = ""
        values["engine"]["gpus"] = 0
        values["engine"]["resources"] = {}
        values["tls"] = {"enabled": True, "secretName": "mirror-tls"}
        docs = chartlib.render(values)
        deploy = next(d for d in of_kind(docs, "Deployment") if chartlib.is_engine(d))
        (c,) = deploy["spec"]["template"]["spec"]["containers"]
        self.assertEqual(c["image"], "docker.io/vllm/vllm-openai:v0.34.0-cu129")
        self.assertNotIn("limits", c.get("resources") or {})
        env = {e["name"]: e.get("value") for e in c["env"]}
        self.assertTrue(env["HF_ENDPOINT"].startswith("https://"), env)

    BAD = [
        ("neither digest nor tag", {"image": {"repository": "docker.io/vllm/vllm-openai", "tag": "", "digest": "",
                                              "pullPolicy": "IfNotPresent"}},
         helm_python.HelmRenderError, "engine.image: give digest"),
        ("a digest that is not sha256", {"image": {"repository": "docker.io/vllm/vllm-openai", "digest": "md5:abc",
                                                   "pullPolicy": "IfNotPresent"}},
         helm_python.HelmValuesError, "/engine/image/digest"),
        ("negative GPUs", {"gpus": -1}, helm_python.HelmValuesError, "/engine/gpus"),
        ("unknown key", {"gpu": 1}, helm_python.HelmValuesError, "gpu"),
    ]

    def test_bad_values_are_refused(self):
        for what, change, error, text in self.BAD:
            with self.subTest(what):
                values = engine_values()
                values["engine"].update(change)
                with self.assertRaises(error) as caught:
                    chartlib.render(values)
                self.assertIn(text, str(caught.exception))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    if result.testsRun == 0:
        print("no engine chart tests ran", file=sys.stderr)
        sys.exit(1)
    sys.exit(0 if result.wasSuccessful() else 1)
