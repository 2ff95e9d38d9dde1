"""Activation capture: what it costs plain inference, and what capturing every layer costs.

Usage::

    python benchmarks/activations.py [--requests 600] [--forwards 30] [--image-size 112]

Two measurements, each interleaving its cases round by round (the machine may
be shared) and keeping the median of each case:

1. ``plain_request``: a plain V2 ``/infer`` request (a tiny ``mlp``, so the
   request machinery dominates) through the whole app in process
   (``fastapi.testclient``), in three cases: ``without_machinery`` (the infer
   route's capture check replaced by a stub, the runner never given a
   capture), ``with_machinery`` (the app as shipped), and
   ``after_a_capture`` (as shipped, right after a capture request of every
   module ran on the same model: its hooks are gone, so the fast path is
   back). Target: the
   overhead of ``with_machinery`` over ``without_machinery`` is within noise,
   under 3%. ``noise`` is the gap between ``with_machinery`` and
   ``after_a_capture``, which run the same code; the capture check that a
   plain request pays is also timed on its own.
2. ``resnet18_capture``: one forward of a ResNet-18 (batch 1, ``--image-size``)
   in the library, plain, and with an :class:`~mininn.nn.ActivationCapture`
   of every module (``"*"``: 67 modules, 75 records counting the second call
   of each block's ReLU): outputs, inputs and outputs, and ``reduce="stats"``; plus the same
   over HTTP, ``/activations`` with ``modules: ["*"]`` vs ``/infer``.
   Reported as ratios to plain inference.

Results go to ``benchmarks/results/activations.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "activations.json"


# ---- 2. ResNet-18, library -------------------------------------------------------------------
def _time(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _rounds(cases: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Median seconds per case; cases interleaved within each round, in rotating order."""
    for fn in cases.values():
        fn()  # warm-up
    times: dict[str, list[float]] = {name: [] for name in cases}
    order = list(cases.items())
    for i in range(rounds):
        for name, fn in order[i % len(order):] + order[: i % len(order)]:  # rotated each round
            times[name].append(_time(fn))
    return {name: statistics.median(values) for name, values in times.items()}


def resnet18_library(image_size: int, forwards: int) -> dict[str, Any]:
    import mininn
    import models
    from mininn import nn

    model = models.create("resnet18", num_classes=1000, image_size=image_size).eval()
    x = mininn.randn(1, 3, image_size, image_size)

    def plain() -> Any:
        with mininn.no_grad():
            return model(x)

    def captured(**kwargs: Any) -> Callable[[], Any]:
        def run() -> Any:
            with mininn.no_grad(), nn.ActivationCapture(model, "*", **kwargs) as cap:
                model(x)
            return cap.results

        return run

    with nn.ActivationCapture(model, "*") as cap:
        with mininn.no_grad():
            model(x)
    records = len(cap.activations)
    elements = cap.total_elements
    medians = _rounds(
        {
            "plain": plain,
            "capture_output": captured(),
            "capture_both": captured(capture="both"),
            "capture_stats": captured(reduce="stats"),
        },
        forwards,
    )
    return {
        "image_size": image_size,
        "modules": len([n for n, _ in model.named_modules() if n]),
        "records_of_capture_output": records,
        "elements_of_capture_output": elements,
        "median_ms": {k: v * 1e3 for k, v in medians.items()},
        "ratio_to_plain": {k: v / medians["plain"] for k, v in medians.items()},
    }


# ---- 1. and 2. over HTTP ---------------------------------------------------------------------
def _repository(root: Path, image_size: int) -> None:
    from safetensors.numpy import save_file

    import models

    for name, architecture, config in (
        ("mlp", "mlp", {"in_features": 4, "hidden_sizes": [8], "out_features": 3}),
        ("resnet", "resnet18", {"num_classes": 1000, "image_size": image_size}),
    ):
        module = models.create(architecture, **config)
        folder = root / name / "1"
        folder.mkdir(parents=True)
        (root / name / "model.json").write_text(json.dumps({"architecture": architecture, "config": config}))
        state = {k: np.ascontiguousarray(v.detach().numpy()) for k, v in module.state_dict().items()}
        save_file(state, str(folder / "weights.safetensors"))


def _client(root: Path) -> Any:
    from fastapi.testclient import TestClient

    from app import Settings, create_app

    app = create_app(Settings(model_repository=root, seed_repository=False, log_level="warning"))
    client = TestClient(app, raise_server_exceptions=True)
    client.__enter__()
    deadline = time.monotonic() + 120
    while client.get("/v2/health/ready").status_code != 200:
        if time.monotonic() > deadline:
            raise TimeoutError("the models did not load within 120 s")
        time.sleep(0.05)
    return client


def _body(name: str, x: np.ndarray, **extra: Any) -> tuple[bytes, dict[str, str]]:
    header = json.dumps({
        "inputs": [{"name": name, "shape": list(x.shape), "datatype": "FP32",
                    "parameters": {"binary_data_size": x.nbytes}}],
        "parameters": {"binary_data_output": True},
        **extra,
    }).encode()
    # identity: time the capture, not gzip of a many-megabyte response (httpx asks for gzip)
    return header + x.tobytes(), {
        "Inference-Header-Content-Length": str(len(header)),
        "Accept-Encoding": "identity",
    }


def _post(client: Any, path: str, body: bytes, headers: dict[str, str]) -> None:
    response = client.post(path, content=body, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"{path} -> {response.status_code}: {response.text[:300]}")


def plain_requests(client: Any, requests: int) -> dict[str, Any]:
    """Plain ``/infer`` latency of the tiny mlp without and with the capture machinery."""
    import app.routes.infer as infer_route

    shipped = getattr(infer_route, "infer_capture", None)
    x = np.random.default_rng(0).standard_normal((1, 4)).astype(np.float32)
    body, headers = _body("input", x)

    def without() -> None:
        if shipped is not None:
            infer_route.infer_capture = lambda *a, **k: None  # type: ignore[attr-defined]
        try:
            _post(client, "/v2/models/mlp/infer", body, headers)
        finally:
            if shipped is not None:
                infer_route.infer_capture = shipped  # type: ignore[attr-defined]

    def with_machinery() -> None:
        _post(client, "/v2/models/mlp/infer", body, headers)

    capture = _body("input", x, modules=["*"], capture="both")
    for _ in range(20):
        without(), with_machinery()
    times: dict[str, list[float]] = {"without_machinery": [], "with_machinery": [], "after_a_capture": []}
    for i in range(requests):  # interleaved, order alternating; plus one (untimed) capture request
        first, second = ("without_machinery", without), ("with_machinery", with_machinery)
        for name, fn in (first, second) if i % 2 else (second, first):
            times[name].append(_time(fn))
        _post(client, "/v2/models/mlp/activations", *capture)
        times["after_a_capture"].append(_time(with_machinery))
    medians = {k: statistics.median(v) for k, v in times.items()}
    base = medians["without_machinery"]
    check_ns = _capture_check_ns(client) if shipped is not None else 0.0
    return {
        "model": "mlp (4 -> 8 -> 3), batch 1, binary tensors",
        "requests_per_case": requests,
        "machinery_present": shipped is not None,
        "median_us": {k: v * 1e6 for k, v in medians.items()},
        "overhead_pct": {k: (v / base - 1) * 100 for k, v in medians.items() if k != "without_machinery"},
        # with_machinery and after_a_capture run the very same code: their gap is the noise
        "noise_pct": abs(medians["with_machinery"] / medians["after_a_capture"] - 1) * 100,
        "capture_check_ns_per_plain_request": check_ns,
        "capture_check_pct_of_request": check_ns / (base * 1e9) * 100,
    }


def _capture_check_ns(client: Any) -> float:
    """What the machinery adds to a plain request, timed directly: the infer route's check."""
    import app.routes.infer as infer_route
    from app.v2 import InferenceRequest

    module = client.app.state.service.manager.version("mlp").module
    request = InferenceRequest(id=None, parameters={"binary_data_output": True}, inputs={}, outputs=[])
    n = 100_000
    started = time.perf_counter()
    for _ in range(n):
        infer_route.infer_capture(request, module, max_elements=10)
    return (time.perf_counter() - started) / n * 1e9


def resnet18_http(client: Any, image_size: int, requests: int) -> dict[str, Any]:
    x = np.random.default_rng(1).standard_normal((1, 3, image_size, image_size)).astype(np.float32)
    plain = _body("image", x)
    every = _body("image", x, modules=["*"])
    stats = _body("image", x, modules=["*"], reduce="stats")
    medians = _rounds(
        {
            "infer": lambda: _post(client, "/v2/models/resnet/infer", *plain),
            "activations_all_modules": lambda: _post(client, "/v2/models/resnet/activations", *every),
            "activations_all_modules_stats": lambda: _post(client, "/v2/models/resnet/activations", *stats),
        },
        requests,
    )
    return {
        "median_ms": {k: v * 1e3 for k, v in medians.items()},
        "ratio_to_infer": {k: v / medians["infer"] for k, v in medians.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=600, help="plain requests per case")
    parser.add_argument("--forwards", type=int, default=30, help="ResNet-18 forwards per case")
    parser.add_argument("--image-size", type=int, default=112, help="ResNet-18 input side")
    args = parser.parse_args()

    import mininn

    report: dict[str, Any] = {
        "what": "median latencies; overhead_pct and ratios are relative to plain inference",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "mininn": mininn.__version__,
        "args": vars(args),
    }
    report["resnet18_capture_library"] = resnet18_library(args.image_size, args.forwards)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "model_repository"
        _repository(root, args.image_size)
        client = _client(root)
        try:
            report["plain_request"] = plain_requests(client, args.requests)
            report["resnet18_capture_http"] = resnet18_http(client, args.image_size, args.forwards)
        finally:
            client.__exit__(None, None, None)
    plain = report["plain_request"]
    report["target_plain_overhead_under_3pct"] = (
        plain["capture_check_pct_of_request"] < 3.0
        and plain["overhead_pct"]["with_machinery"] < max(3.0, plain["noise_pct"])
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
