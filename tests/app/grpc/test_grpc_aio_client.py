"""``tritonclient.grpc.aio`` against a real server: the asyncio client's calls, concurrency and errors."""

from __future__ import annotations

import asyncio

import numpy as np
import tritonclient.grpc.aio as aioclient
from _app_support import WRITE_KEY, mlp_weights, numpy_mlp
from _grpc_support import GrpcServer
from tritonclient.utils import InferenceServerException


def _input(name: str, array: np.ndarray, datatype: str = "FP32") -> aioclient.InferInput:
    tensor = aioclient.InferInput(name, list(array.shape), datatype)
    tensor.set_data_from_numpy(array)
    return tensor


async def _status(call: object) -> tuple[str, str]:
    try:
        await call  # type: ignore[misc]
    except InferenceServerException as exc:
        return exc.status(), exc.message()
    raise AssertionError("the call succeeded")


def test_health_metadata_config_statistics_and_index(grpc_server: GrpcServer) -> None:
    async def run() -> None:
        async with aioclient.InferenceServerClient(grpc_server.url) as client:
            assert await client.is_server_live() and await client.is_server_ready()
            assert await client.is_model_ready("mlp") and not await client.is_model_ready("nope")
            assert (await client.get_server_metadata()).name == "mininn-serve"
            assert [t.name for t in (await client.get_model_metadata("mlp")).inputs] == ["input"]
            assert (await client.get_model_config("mlp")).config.max_batch_size == 32
            stats = await client.get_inference_statistics("mlp")
            assert {s.version for s in stats.model_stats} == {"1", "2"}
            index = await client.get_model_repository_index()
            assert "mlp" in {row.name for row in index.models}

    asyncio.run(run())


def test_concurrent_inferences_each_get_their_own_answer(grpc_server: GrpcServer) -> None:
    weights = mlp_weights(1)
    rows = [np.random.default_rng(i).standard_normal((1, 4)).astype(np.float32) for i in range(24)]

    async def run() -> list[np.ndarray]:
        async with aioclient.InferenceServerClient(grpc_server.url) as client:
            results = await asyncio.gather(
                *(client.infer("mlp", [_input("input", x)], model_version="1") for x in rows)
            )
            return [result.as_numpy("output") for result in results]

    for x, output in zip(rows, asyncio.run(run())):
        np.testing.assert_allclose(output, numpy_mlp(weights, x), rtol=1e-5, atol=1e-5)


def test_errors_keys_and_deadlines(grpc_server: GrpcServer) -> None:
    async def run() -> None:
        async with aioclient.InferenceServerClient(grpc_server.url) as client:
            x = np.ones((1, 4), np.float32)
            status, message = await _status(client.infer("nope", [_input("input", x)]))
            assert status == "StatusCode.NOT_FOUND" and "'nope'" in message
            status, _ = await _status(client.infer("mlp", [_input("input", np.ones((1, 3), np.float32))]))
            assert status == "StatusCode.INVALID_ARGUMENT"
            status, _ = await _status(client.unload_model("mlp-spare"))
            assert status == "StatusCode.UNAUTHENTICATED"
            slow = [_input("x", np.full((1, 2), -1.0, np.float32))]
            status, _ = await _status(client.infer("sleepy", slow, client_timeout=0.3))
            assert status == "StatusCode.DEADLINE_EXCEEDED"
            headers = {"authorization": f"Bearer {WRITE_KEY}"}
            await client.load_model("mlp-spare", headers=headers)
            assert await client.is_model_ready("mlp-spare")

    asyncio.run(run())


def test_compressed_bytes_inference(grpc_server: GrpcServer) -> None:
    async def run() -> np.ndarray:
        async with aioclient.InferenceServerClient(grpc_server.url) as client:
            texts = np.array([b"a" * 1000, b"bc"], dtype=object)
            inputs = [_input("text", texts, "BYTES")]
            result = await client.infer("text", inputs, compression_algorithm="gzip")
            return result.as_numpy("label")

    assert asyncio.run(run()).tolist() == [b"1000 bytes", b"2 bytes"]
