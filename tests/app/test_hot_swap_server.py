"""Hot swaps on a real server: a stream of requests during 20 uploads sees only whole versions."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import numpy as np
import pytest
from _app_support import mlp_weights, numpy_mlp
from _upload_support import X, infer, keyed_server, put_state_dict, torch_bytes

pytest.importorskip("torch")

UPLOADS = 20


@pytest.mark.slow
def test_requests_during_twenty_uploads_each_see_one_whole_version(tmp_path: Path) -> None:
    bodies = [torch_bytes(mlp_weights(100 + i)) for i in range(UPLOADS)]
    with keyed_server(tmp_path) as server:
        seen: list[list[tuple[str, np.ndarray]]] = [[], []]
        stop = threading.Event()

        def stream(log: list[tuple[str, np.ndarray]]) -> None:
            body = {
                "inputs": [{"name": "input", "shape": [3, 4], "datatype": "FP32", "data": X.ravel().tolist()}]
            }
            with httpx.Client(base_url=server.base_url, timeout=30) as client:
                while not stop.is_set():
                    document = client.post("/v2/models/mlp/infer", json=body).json()
                    output = document["outputs"][0]
                    log.append(
                        (document["model_version"], np.asarray(output["data"], np.float32).reshape(3, 3))
                    )

        readers = [threading.Thread(target=stream, args=(log,)) for log in seen]
        for reader in readers:
            reader.start()
        uploaded = {}
        try:
            for i, body in enumerate(bodies):
                version = put_state_dict(server, "mlp", body).json()["model_version"]
                uploaded[version] = i
                assert infer(server, "mlp")[0] == version  # a request after the response gets the new one
        finally:
            stop.set()
            for reader in readers:
                reader.join()
        exact = {version: infer(server, "mlp", version=int(version))[1] for version in {"2", *uploaded}}

    assert len(uploaded) == UPLOADS
    for version, i in uploaded.items():
        np.testing.assert_allclose(exact[version], numpy_mlp(mlp_weights(100 + i), X), rtol=1e-5, atol=1e-5)
    versions_seen = set()
    for log in seen:
        numbers = [int(version) for version, _ in log]
        assert numbers == sorted(numbers)  # never back to an older version
        for version, output in log:
            versions_seen.add(version)
            np.testing.assert_array_equal(output, exact[version])
            others = [np.abs(output - exact[v]).max() for v in exact if v != version]
            assert min(others) > 1e-3  # it is that version's output, not something between two
    assert len(versions_seen) >= 5, versions_seen
