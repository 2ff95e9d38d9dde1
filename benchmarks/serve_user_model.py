"""The zoo's ``resnet18`` against the same network as a repository ``model.py``, served side by side.

Both models live in one server's repository with the same weights: ``resnet18``
(``"architecture": "resnet18"``) and ``resnet18-code`` (``"module":
"model.py:resnet18"``, ``benchmarks/user_models/resnet18/model.py``, written for
torch). Closed-loop clients send batch-1 binary requests for ``logits`` (64x64
images, dynamic batching on) to one model and then the other, in interleaved rounds so that the
machine's load hits both alike; BLAS is pinned to one thread. Target: the code
model's throughput within 5% of the zoo's.

    python benchmarks/serve_user_model.py [--seconds 5] [--rounds 3] [--concurrency 1 8]

Writes ``benchmarks/results/serve_user_model.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _support import Body, free_port  # noqa: E402
from serve_load import RESNET, closed_loop, first_output, mininn_server, resnet_weights  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "serve_user_model.json"
CODE = ROOT / "benchmarks" / "user_models" / "resnet18"
IMAGE = (1, 3, RESNET["image_size"], RESNET["image_size"])
MODELS = ("resnet18", "resnet18-code")


def write_repository(root: Path) -> None:
    from safetensors.numpy import save_file

    weights = resnet_weights()
    specs = {
        "resnet18": {"architecture": "resnet18", "config": RESNET, "max_batch_size": 32},
        "resnet18-code": {
            "module": "model.py:resnet18",
            "init": {"num_classes": RESNET["num_classes"]},
            "inputs": [{"name": "image", "datatype": "FP32", "shape": [-1, *IMAGE[1:]]}],
            "outputs": [{"name": "logits", "datatype": "FP32", "shape": [-1, RESNET["num_classes"]]}],
            "max_batch_size": 32,
        },
    }
    for name, spec in specs.items():
        folder = root / name
        (folder / "1").mkdir(parents=True)
        if "module" in spec:
            shutil.copy(CODE / "model.py", folder / "model.py")
        (folder / "model.json").write_text(json.dumps(spec))
        save_file(weights, str(folder / "1" / "weights.safetensors"))


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="measured seconds per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per model")
    parser.add_argument("--warmup", type=float, default=1.0, help="unmeasured seconds before each round")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    opts = parse(argv)
    image = np.random.default_rng(1).standard_normal(IMAGE).astype(np.float32)
    header = {"inputs": [{"name": "image", "shape": list(IMAGE), "datatype": "FP32",
                          "parameters": {"binary_data_size": image.nbytes}}],
              "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]}  # both models have it
    raw = json.dumps(header).encode()
    body = Body(raw + image.tobytes(), {"Inference-Header-Content-Length": str(len(raw))})
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        write_repository(work / "repository")
        port = free_port()
        with mininn_server(work / "repository", port, work / "server.log"):
            base = f"http://127.0.0.1:{port}"
            answers = [first_output(httpx.post(f"{base}/v2/models/{m}/infer", content=body.content,
                                               headers=body.headers, timeout=60)) for m in MODELS]
            same = bool(np.allclose(answers[0], answers[1], rtol=1e-5, atol=1e-5))
            print(f"same logits from both: {same}", flush=True)
            for clients in opts.concurrency:
                served = {m: [] for m in MODELS}
                for _ in range(opts.rounds):
                    for model in MODELS:
                        url = f"{base}/v2/models/{model}/infer"
                        latencies, statuses = asyncio.run(
                            closed_loop(url, body, clients, opts.warmup, opts.seconds)
                        )
                        served[model].append(statuses.get(200, 0) / opts.seconds)
                        p99 = np.percentile(latencies, 99) * 1e3
                        print(f"  c={clients:<3d} {model:14s} {served[model][-1]:7.1f} req/s  "
                              f"p99 {p99:6.1f} ms  {dict(statuses)}", flush=True)
                zoo, code = (float(np.mean(served[m])) for m in MODELS)
                rows.append({"concurrency": clients, "rounds_req_s": served, "zoo_req_s": zoo,
                             "code_req_s": code, "code_over_zoo": code / zoo})
                print(f"c={clients}: zoo {zoo:.1f} req/s, model.py {code:.1f} req/s, ratio {code / zoo:.3f}",
                      flush=True)
    result = {
        "benchmark": "serve_user_model",
        "machine": {"cpus": __import__("os").cpu_count(), "python": platform.python_version(),
                    "numpy": np.__version__},
        "settings": {"image": list(IMAGE), "seconds": opts.seconds, "rounds": opts.rounds,
                     "warmup_s": opts.warmup, "protocol": "binary", "max_batch_size": 32, "blas_threads": 1},
        "same_outputs": same,
        "rows": rows,
        "target": "code_over_zoo within 0.95-1.05 at every concurrency",
        "met": all(0.95 <= r["code_over_zoo"] <= 1.05 for r in rows),
    }
    RESULTS.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
