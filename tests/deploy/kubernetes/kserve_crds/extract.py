"""Refresh the KServe CRD schemas kept here as test data, from a kserve/kserve checkout.

    python tests/deploy/kubernetes/kserve_crds/extract.py /path/to/kserve v0.20.0

For each kind the manifests use, reads ``config/crd/full/<crd>.yaml`` at the given tag
(``git show``), takes the ``openAPIV3Schema`` of the served version, drops its
``description`` texts (documentation, not rules: the file shrinks tenfold) and writes
``<kind>.<version>.json`` with the source, tag and commit. The schemas are KServe's API
as published; ``test_manifests_validate.py`` validates the manifests against them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CRDS = {
    "InferenceService": "config/crd/full/serving.kserve.io_inferenceservices.yaml",
    "ClusterServingRuntime": "config/crd/full/serving.kserve.io_clusterservingruntimes.yaml",
}


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_descriptions(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_descriptions(v) for v in node]
    return node


def main(checkout: Path, tag: str) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True,
                              check=True).stdout

    commit = git("rev-parse", f"{tag}^{{commit}}").strip()
    for kind, path in CRDS.items():
        crd = yaml.safe_load(git("show", f"{tag}:{path}"))
        for version in crd["spec"]["versions"]:
            if not version.get("served"):
                continue
            document = {
                "source": f"github.com/kserve/kserve {path}",
                "tag": tag,
                "commit": commit,
                "apiVersion": f"{crd['spec']['group']}/{version['name']}",
                "kind": kind,
                "note": "openAPIV3Schema of the CRD, descriptions removed (extract.py)",
                "schema": _without_descriptions(version["schema"]["openAPIV3Schema"]),
            }
            target = HERE / f"{kind}.{version['name']}.json"
            target.write_text(json.dumps(document, separators=(",", ":"), sort_keys=True) + "\n")
            print(f"{target.name}: {target.stat().st_size} bytes")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
