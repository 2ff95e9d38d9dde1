"""Upload-to-served time for a 100 MB state dict, and the server's peak extra memory meanwhile.

Usage::

    python benchmarks/upload.py [--repeats 3] [--formats safetensors,pt] [--shapes even,one-large]

For each model shape, starts ``python -m app`` on a free port of 127.0.0.1 with a
temporary repository holding one ``mlp`` of about 100 MB of float32 weights,
version 1 loaded:

- ``even``: 2048 -> 2048 (x6): seven equal layers, the largest tensor 17 % of the file;
- ``one-large``: 4096 -> 4096 -> 2048 -> 256, the largest tensor 65 % of the file.

Then, ``--repeats`` times per format:

- the server's peak-RSS mark is reset (``/proc/<pid>/clear_refs``, 5) and its
  settled resident size read (``VmRSS``): the baseline, with one version served;
- a new state dict is ``PUT`` from memory on a fresh connection; the clock runs
  from the first byte sent to the ``201`` (by then the new version is checked,
  written, fsynced and swapped in: the next request is served by it, which the
  script checks with one inference);
- the peak extra memory is ``VmHWM`` (peak resident size) minus the baseline.

Targets: upload-to-served under 2 s; peak extra memory at most twice the file
(the body is streamed to disk, never held whole). The fresh instance the upload
is checked against costs the file's size plus what ``mininn.nn.init`` draws
while building it (float64 samples of each tensor in turn), which is why the
shape matters. The CPU load average is recorded: on a shared machine times vary
with it. Results go to ``benchmarks/results/upload.json``.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save as safetensors_bytes
from safetensors.numpy import save_file

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _support import free_port, mlp_weights  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "upload.json"
SHAPES = {
    "even": {"in_features": 2048, "hidden_sizes": [2048] * 5, "out_features": 2048},
    "one-large": {"in_features": 4096, "hidden_sizes": [4096, 2048], "out_features": 256},
}
KEY = "benchmark-key"


def encode(weights: dict[str, np.ndarray], fmt: str) -> bytes:
    """The bytes of a checkpoint file in ``fmt`` (``pt`` needs torch)."""
    if fmt == "safetensors":
        return safetensors_bytes(weights)
    import torch

    buffer = io.BytesIO()
    torch.save({k: torch.from_numpy(v) for k, v in weights.items()}, buffer)
    return buffer.getvalue()



def status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for pid {pid}")


def request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Authorization": f"Bearer {KEY}"}
    if body is not None:
        headers["Content-Type"] = "application/octet-stream"
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    return response.status, json.loads(data) if data else None


def start_server(repository: Path, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MININN_")}
    env.update(
        MININN_PORT=str(port),
        MININN_MODEL_REPOSITORY=str(repository),
        MININN_SEED_REPOSITORY="false",
        MININN_API_KEY=KEY,
        MININN_LOG_LEVEL="warning",
        PYTHONPATH=str(ROOT),
    )
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "app"], cwd=ROOT, env=env, stdout=out, stderr=out)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{log.read_text()}")
        try:
            if request(port, "GET", "/v2/health/ready")[0] == 200:
                return process, port
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError("the server did not become ready")


def one_upload(process: subprocess.Popen[bytes], port: int, body: bytes, x: list[float]) -> dict[str, Any]:
    time.sleep(1.0)  # the previous version is freed on the manager's next tick
    Path(f"/proc/{process.pid}/clear_refs").write_text("5")  # reset the peak-RSS mark
    baseline = status_kib(process.pid, "VmRSS")
    started = time.perf_counter()
    status, document = request(port, "PUT", "/v2/models/big/state_dict", body)
    seconds = time.perf_counter() - started
    assert status == 201, document
    peak = status_kib(process.pid, "VmHWM")
    infer = {"inputs": [{"name": "input", "shape": [1, len(x)], "datatype": "FP32", "data": x}]}
    status, answer = request(port, "POST", "/v2/models/big/infer", json.dumps(infer).encode())
    assert status == 200 and answer["model_version"] == document["model_version"], answer
    return {
        "version": document["model_version"],
        "upload_to_served_s": round(seconds, 4),
        "server_seconds": document["seconds"],
        "baseline_rss_bytes": baseline,
        "peak_rss_bytes": peak,
        "peak_extra_bytes": peak - baseline,
        "peak_extra_over_file": round((peak - baseline) / len(body), 3),
    }


def run_shape(config: dict[str, Any], formats: list[str], repeats: int) -> dict[str, Any]:
    """Start a server on one model of ``config`` and upload to it ``repeats`` times per format."""
    x = np.linspace(-1, 1, config["in_features"], dtype=np.float32).tolist()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        repository = Path(tmp) / "repository"
        (repository / "big" / "1").mkdir(parents=True)
        (repository / "big" / "model.json").write_text(json.dumps({"architecture": "mlp", "config": config}))
        save_file(mlp_weights(config, 0), str(repository / "big" / "1" / "weights.safetensors"))
        process, port = start_server(repository, Path(tmp) / "server.log")
        try:
            for fmt in formats:
                runs = []
                for repeat in range(repeats):
                    body = encode(mlp_weights(config, 1 + repeat), fmt)
                    runs.append(one_upload(process, port, body, x))
                    print(f"{fmt} {len(body) / 1e6:.0f} MB: {runs[-1]}", flush=True)
                times = [r["upload_to_served_s"] for r in runs]
                ratios = [r["peak_extra_over_file"] for r in runs]
                results[fmt] = {
                    "file_bytes": len(body),
                    "upload_to_served_s": {
                        "median": statistics.median(times),
                        "min": min(times),
                        "max": max(times),
                    },
                    "peak_extra_over_file": {"median": statistics.median(ratios), "max": max(ratios)},
                    "runs": runs,
                }
        finally:
            process.terminate()
            process.wait(timeout=30)
    weights = mlp_weights(config, 0)
    largest = max(v.nbytes for v in weights.values()) / sum(v.nbytes for v in weights.values())
    return {"config": config, "largest_tensor_share": round(largest, 3), "formats": results}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", default="safetensors,pt")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    args = parser.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    results = {}
    for shape in [s for s in args.shapes.split(",") if s]:
        print(f"-- {shape}: {SHAPES[shape]}", flush=True)
        results[shape] = run_shape(SHAPES[shape], formats, args.repeats)
    report = {
        "benchmark": "upload",
        "targets": {"upload_to_served_s": 2.0, "peak_extra_over_file": 2.0},
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average": [round(v, 2) for v in os.getloadavg()],
            "python": platform.python_version(),
        },
        "results": results,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    summary = {
        shape: {fmt: {k: v for k, v in r.items() if k != "runs"} for fmt, r in result["formats"].items()}
        for shape, result in results.items()
    }
    print(json.dumps(summary, indent=2))
    return report


if __name__ == "__main__":
    main()
