"""deploy/kubernetes: the fields Kubernetes and KServe require, consistent with the image and the server.

Schema validation of every manifest (kustomize, Kubernetes' and KServe's schemas) is in
``test_manifests_validate.py``; this file checks what the schemas cannot: that the pieces agree.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from _deploy_support import DOCKER_DIR, KUBERNETES_DIR, dockerfile_stages, settings_variables

FILES = sorted(KUBERNETES_DIR.rglob("*.yaml"))
DOCUMENTS = {path: list(yaml.safe_load_all(path.read_text())) for path in FILES}
FINAL = dockerfile_stages()[1][-1]
UID = int(FINAL.last("USER").partition(":")[0])


def _one(kind: str) -> dict[str, Any]:
    found = [doc for docs in DOCUMENTS.values() for doc in docs if doc and doc.get("kind") == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


KINDS = ("Deployment", "Service", "PersistentVolumeClaim", "InferenceService", "ClusterServingRuntime")
DEPLOYMENT, SERVICE, PVC, ISVC, RUNTIME = (_one(kind) for kind in KINDS)
POD = DEPLOYMENT["spec"]["template"]["spec"]
SERVER = POD["containers"][0]
PREDICTOR = ISVC["spec"]["predictor"]
(KSERVE,) = RUNTIME["spec"]["containers"]
KSERVE_MODELS = "/mnt/models"  # where KServe's storage initializer puts (or mounts) the storageUri


@functools.cache
def _app_paths() -> set[str]:
    from app.main import create_app
    from app.settings import Settings

    app = create_app(Settings(model_repository=Path("/nonexistent"), seed_repository=False))
    return set(app.openapi()["paths"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(KUBERNETES_DIR)))
def test_every_document_has_api_version_kind_and_name(path: Path) -> None:
    for document in DOCUMENTS[path]:
        assert document["apiVersion"] and document["kind"]
        if document["kind"] != "Kustomization":
            assert document["metadata"]["name"]


def test_each_kustomization_lists_the_manifests_of_its_folder_and_names_the_image() -> None:
    kustomizations = {
        path.parent: document for path, docs in DOCUMENTS.items() for document in docs
        if document.get("kind") == "Kustomization"
    }
    assert set(kustomizations) == {KUBERNETES_DIR, KUBERNETES_DIR / "kserve"}
    assert kustomizations[KUBERNETES_DIR]["resources"] == ["pvc.yaml", "deployment.yaml", "service.yaml"]
    kserve = ["servingruntime.yaml", "inferenceservice.yaml"]
    assert kustomizations[KUBERNETES_DIR / "kserve"]["resources"] == kserve
    for folder, kustomization in kustomizations.items():
        listed = {folder / resource for resource in kustomization["resources"]}
        assert listed == set(folder.glob("*.yaml")) - {folder / "kustomization.yaml"}, folder
        assert [image["name"] for image in kustomization["images"]] == ["mininn-serve"]


def test_the_deployment_selects_its_own_pods_and_the_service_selects_them_too() -> None:
    labels = DEPLOYMENT["spec"]["template"]["metadata"]["labels"]
    assert DEPLOYMENT["apiVersion"] == "apps/v1"
    assert DEPLOYMENT["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert SERVICE["spec"]["selector"].items() <= labels.items()


def test_the_service_reaches_the_containers_port_8000_and_grpc_8001() -> None:
    ports = {port["name"]: port["containerPort"] for port in SERVER["ports"]}
    assert ports == {"http": 8000, "grpc": 8001}
    env = {variable["name"]: variable.get("value") for variable in SERVER["env"]}
    assert (env["MININN_PORT"], env["MININN_GRPC_PORT"]) == ("8000", "8001")
    service_ports = {port["name"]: (port["port"], port["targetPort"]) for port in SERVICE["spec"]["ports"]}
    assert service_ports == {"http": (8000, "http"), "grpc": (8001, "grpc")}


@pytest.mark.parametrize("container", [SERVER, KSERVE], ids=["deployment", "kserve"])
def test_probes_ask_the_health_endpoints(container: dict[str, Any]) -> None:
    ready, live = container["readinessProbe"]["httpGet"], container["livenessProbe"]["httpGet"]
    assert ready["path"] == "/v2/health/ready" and live["path"] == "/v2/health/live"
    port = container["ports"][0]
    for probe in (ready, live):
        assert probe["port"] in (port["containerPort"], port.get("name"))
    assert {ready["path"], live["path"]} <= _app_paths()


def test_the_deployments_repository_is_the_claim_mounted_at_the_image_path() -> None:
    mounts = {mount["name"]: mount["mountPath"] for mount in SERVER["volumeMounts"]}
    assert mounts["models"] == FINAL.env()["MININN_MODEL_REPOSITORY"] == "/models"
    volumes = {volume["name"]: volume for volume in POD["volumes"]}
    assert volumes["models"]["persistentVolumeClaim"]["claimName"] == PVC["metadata"]["name"]


def test_the_kserve_repository_is_the_storage_uri_at_mnt_models() -> None:
    env = {item["name"]: item["value"] for item in KSERVE["env"]}
    assert env["MININN_MODEL_REPOSITORY"] == KSERVE_MODELS
    assert env["MININN_SEED_REPOSITORY"] == "false"  # KServe mounts it read-only
    assert PREDICTOR["model"]["storageUri"] == f"pvc://{PVC['metadata']['name']}/"  # the Deployment's claim
    assert not any(m["mountPath"].startswith(KSERVE_MODELS) for m in KSERVE.get("volumeMounts", []))


@pytest.mark.parametrize("container", [SERVER, KSERVE], ids=["deployment", "kserve"])
def test_environment_names_are_settings_and_agree_with_the_image(container: dict[str, Any]) -> None:
    env = {item["name"]: item for item in container["env"]}
    mininn = {name for name in env if name.startswith("MININN_")}
    assert mininn <= settings_variables(), mininn - settings_variables()
    assert env["MININN_HOST"]["value"] == FINAL.env()["MININN_HOST"]
    assert "PORT" not in env  # Knative reserves it (and sets it in serverless mode)
    ports = [port["containerPort"] for port in container["ports"]]
    assert env["MININN_PORT"]["value"] == str(ports[0])


@pytest.mark.parametrize("pod", [POD, PREDICTOR], ids=["deployment", "kserve"])
def test_pods_run_as_the_images_non_root_user_and_can_write_the_volume(pod: dict[str, Any]) -> None:
    security = pod["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == security["fsGroup"] == UID


def test_an_init_container_seeds_the_claim_with_the_images_demo_models() -> None:
    (init,) = POD["initContainers"]
    command = init["command"]
    assert command[:2] == ["python", "/opt/mininn/seed_volume.py"]
    assert (DOCKER_DIR / Path(command[1]).name).is_file()
    assert f"deploy/docker/{Path(command[1]).name}" in " ".join(FINAL.all("COPY"))
    source, target = command[2:]
    assert source == "/models"
    assert {mount["mountPath"] for mount in init["volumeMounts"]} == {target}


@pytest.mark.parametrize("pod", [POD, PREDICTOR], ids=["deployment", "kserve"])
def test_the_grace_period_covers_the_servers_shutdown(pod: dict[str, Any]) -> None:
    assert pod["terminationGracePeriodSeconds"] > 10  # uvicorn's graceful timeout


def test_the_claim_is_shared_between_replicas() -> None:
    assert PVC["spec"]["accessModes"] == ["ReadWriteMany"]
    assert PVC["spec"]["resources"]["requests"]["storage"]
    assert DEPLOYMENT["spec"]["replicas"] >= 2
    assert DEPLOYMENT["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0


def test_the_runtime_follows_kserves_conventions_for_a_custom_v2_predictor() -> None:
    assert RUNTIME["apiVersion"] == "serving.kserve.io/v1alpha1"
    assert KSERVE["name"] == "kserve-container"  # the name KServe routes to
    env = {item["name"]: item.get("value") for item in KSERVE["env"]}
    assert env["PROTOCOL"] == "v2" and RUNTIME["spec"]["protocolVersions"] == ["v2"]
    assert [port["containerPort"] for port in KSERVE["ports"]] == [8080]  # KServe's predictor port
    assert env["MININN_GRPC_PORT"] == "0"  # one port per predictor
    assert KSERVE["image"] == SERVER["image"] == "mininn-serve:latest"
    assert RUNTIME["spec"]["annotations"]["prometheus.kserve.io/port"] == "8080"


def test_the_inference_service_asks_the_runtime_for_its_model_format() -> None:
    assert ISVC["apiVersion"] == "serving.kserve.io/v1beta1"
    model = PREDICTOR["model"]
    formats = {f["name"]: f for f in RUNTIME["spec"]["supportedModelFormats"]}
    assert model["runtime"] == RUNTIME["metadata"]["name"]
    assert formats[model["modelFormat"]["name"]]["version"] == model["modelFormat"]["version"]
    assert model["protocolVersion"] in RUNTIME["spec"]["protocolVersions"]


def test_containers_use_the_image_start_command() -> None:
    for container in (SERVER, KSERVE):
        assert "command" not in container and "args" not in container
