"""The gRPC servicer in-process: keys on metadata, status codes, the port, and the codec's own checks."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from _app_support import free_port, make_repository
from tritonclient.grpc import service_pb2, service_pb2_grpc

from app.auth import WRITES_DISABLED
from app.errors import BadRequestError, UnprocessableError
from app.grpc import GrpcPortError, GrpcServer
from app.grpc import inference_pb2 as pb
from app.grpc.codec import request_document
from app.grpc.servicer import grpc_status
from app.runtime.service import Service
from app.settings import Settings

Body = Callable[[Any], Awaitable[Any]]


def serve(repository: Path, body: Body, **settings: Any) -> Any:
    """Run ``body(stub)`` against an in-process gRPC server over ``repository``."""

    async def main() -> Any:
        port = free_port()
        service = Service.from_settings(
            Settings(model_repository=repository, seed_repository=False, grpc_port=port, **settings)
        )
        await service.start()
        server = await GrpcServer.start(service)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                return await body(service_pb2_grpc.GRPCInferenceServiceStub(channel))
        finally:
            await server.stop(0)
            service.close()

    return asyncio.run(main())


async def _code(call: Awaitable[Any]) -> tuple[grpc.StatusCode, str]:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc.code(), exc.details() or ""
    return grpc.StatusCode.OK, ""


def _bearer(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"),)


def test_a_read_key_guards_every_call_but_health(tmp_path: Path) -> None:
    metadata = service_pb2.ModelMetadataRequest(name="mlp")

    async def body(stub: Any) -> list[tuple[grpc.StatusCode, str]]:
        return [
            await _code(stub.ServerLive(service_pb2.ServerLiveRequest())),
            await _code(stub.ServerReady(service_pb2.ServerReadyRequest())),
            await _code(stub.ModelMetadata(metadata)),
            await _code(stub.ModelMetadata(metadata, metadata=_bearer("reader"))),
            await _code(stub.ModelMetadata(metadata, metadata=_bearer("writer"))),
            await _code(stub.ModelMetadata(metadata, metadata=_bearer("wrong"))),
        ]

    results = serve(make_repository(tmp_path / "repo"), body, api_key="writer", read_api_key="reader")
    assert results == [
        (grpc.StatusCode.OK, ""),
        (grpc.StatusCode.OK, ""),
        (
            grpc.StatusCode.UNAUTHENTICATED,
            "this read endpoint needs 'Authorization: Bearer <key>' (MININN_READ_API_KEY is set)",
        ),
        (grpc.StatusCode.OK, ""),
        (grpc.StatusCode.OK, ""),
        (grpc.StatusCode.PERMISSION_DENIED, "the bearer key is not valid for this read endpoint"),
    ]


def test_writes_are_closed_without_a_write_key(tmp_path: Path) -> None:
    async def body(stub: Any) -> tuple[grpc.StatusCode, str]:
        request = service_pb2.RepositoryModelUnloadRequest(model_name="mlp")
        return await _code(stub.RepositoryModelUnload(request, metadata=_bearer("anything")))

    refused = serve(make_repository(tmp_path / "repo"), body)
    assert refused == (grpc.StatusCode.PERMISSION_DENIED, WRITES_DISABLED)


def test_a_port_in_use_stops_start_up_with_what_to_do(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = Settings(model_repository=tmp_path, seed_repository=False, grpc_port=port)
        service = Service.from_settings(settings)
        with pytest.raises(GrpcPortError, match="MININN_GRPC_PORT to a free port, or to 0"):
            asyncio.run(GrpcServer.start(service))
        service.close()


@pytest.mark.parametrize(
    ("http", "code"),
    [
        (400, grpc.StatusCode.INVALID_ARGUMENT),
        (401, grpc.StatusCode.UNAUTHENTICATED),
        (403, grpc.StatusCode.PERMISSION_DENIED),
        (404, grpc.StatusCode.NOT_FOUND),
        (413, grpc.StatusCode.RESOURCE_EXHAUSTED),
        (418, grpc.StatusCode.INVALID_ARGUMENT),
        (422, grpc.StatusCode.INVALID_ARGUMENT),
        (503, grpc.StatusCode.UNAVAILABLE),
        (504, grpc.StatusCode.DEADLINE_EXCEEDED),
        (500, grpc.StatusCode.INTERNAL),
    ],
)
def test_http_statuses_map_to_tritons_grpc_codes(http: int, code: grpc.StatusCode) -> None:
    assert grpc_status(http) is code


# ---- the codec ------------------------------------------------------------------------------------
def test_raw_contents_become_binary_inputs_in_input_order() -> None:
    request = pb.ModelInferRequest(id="7", raw_input_contents=[b"ab", b"cde"])
    request.inputs.add(name="a", datatype="UINT8", shape=[2])
    request.inputs.add(name="b", datatype="UINT8", shape=[3]).parameters["binary_data_size"].int64_param = 99
    request.outputs.add(name="y").parameters["classification"].int64_param = 2
    request.parameters["timeout"].int64_param = 5
    document, tail = request_document(request)
    assert tail == b"abcde"
    assert document == {
        "id": "7",
        "parameters": {"timeout": 5},
        "inputs": [
            {"name": "a", "datatype": "UINT8", "shape": [2], "parameters": {"binary_data_size": 2}},
            {"name": "b", "datatype": "UINT8", "shape": [3], "parameters": {"binary_data_size": 3}},
        ],
        "outputs": [{"name": "y", "parameters": {"classification": 2}}],
    }


def test_typed_contents_become_data_and_bytes_contents_are_framed() -> None:
    request = pb.ModelInferRequest()
    request.inputs.add(name="n", datatype="INT8", shape=[2]).contents.int_contents.extend([1, -2])
    request.inputs.add(name="s", datatype="BYTES", shape=[2]).contents.bytes_contents.extend([b"x", b""])
    document, tail = request_document(request)
    assert document["inputs"][0]["data"] == [1, -2]
    assert document["inputs"][1]["parameters"] == {"binary_data_size": 9}
    assert tail == b"\x01\x00\x00\x00x\x00\x00\x00\x00"


def test_raw_contents_must_match_the_inputs_one_to_one() -> None:
    request = pb.ModelInferRequest(raw_input_contents=[b"a"])
    request.inputs.add(name="a", datatype="UINT8", shape=[1])
    request.inputs.add(name="b", datatype="UINT8", shape=[1])
    with pytest.raises(BadRequestError, match="2 inputs but 1 raw_input_contents"):
        request_document(request)
    mixed = pb.ModelInferRequest(raw_input_contents=[b"a"])
    mixed.inputs.add(name="a", datatype="UINT8", shape=[1]).contents.uint_contents.append(1)
    with pytest.raises(BadRequestError, match="'a' has contents while the request sends raw_input_contents"):
        request_document(mixed)


def test_fp16_has_no_typed_contents() -> None:
    request = pb.ModelInferRequest()
    request.inputs.add(name="h", datatype="FP16", shape=[1])
    with pytest.raises(UnprocessableError, match="FP16 has no typed contents field; send it in raw_input"):
        request_document(request)


def test_request_ids_follow_the_http_rule(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A client's x-request-id is kept when HTTP would keep it, else replaced by 32 hex digits."""
    make_repository(tmp_path)

    async def body(stub: Any) -> None:
        for sent in ("r-1:a/b", 'bad"id', "a b"):
            request = service_pb2.ModelMetadataRequest(name="nope")
            code, _ = await _code(stub.ModelMetadata(request, metadata=(("x-request-id", sent),)))
            assert code is grpc.StatusCode.NOT_FOUND

    caplog.set_level(logging.INFO, logger="app.errors")
    serve(tmp_path, body)
    ids = [m.split()[1].rstrip(":") for m in caplog.messages if "ModelMetadata" in m]
    assert ids[0] == "r-1:a/b"
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids[1:]) and len(ids) == 3
