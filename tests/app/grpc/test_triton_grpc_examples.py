"""The calls of Triton's example clients ``simple_grpc_health_metadata`` and ``simple_grpc_infer_client``.

Rewritten as tests against a server serving Triton's ``simple`` model (``OUTPUT0 = INPUT0 + INPUT1``,
``OUTPUT1 = INPUT0 - INPUT1``, INT32 ``[-1, 16]``). The examples check every call
in turn; so do these. The one check left out is the server's name, which is
``mininn-serve`` here, not ``triton``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from _grpc_support import GrpcServer
from tritonclient.utils import InferenceServerException


@pytest.fixture
def triton_client(grpc_server: GrpcServer) -> Any:
    with grpcclient.InferenceServerClient(url=grpc_server.url) as client:
        yield client


def test_health_metadata_and_config_of_simple_over_grpc(triton_client: Any) -> None:
    assert triton_client.is_server_live(headers={"x-trace": "on", "x-attempt": "1"})
    assert triton_client.is_server_ready()
    assert triton_client.is_model_ready("simple")
    assert triton_client.get_server_metadata().name == "mininn-serve"
    metadata = triton_client.get_model_metadata("simple", headers={"x-trace": "on", "x-attempt": "1"})
    assert metadata.name == "simple"
    assert [(t.name, t.datatype, list(t.shape)) for t in metadata.inputs] == [
        ("INPUT0", "INT32", [-1, 16]),
        ("INPUT1", "INT32", [-1, 16]),
    ]
    with pytest.raises(InferenceServerException) as caught:
        triton_client.get_model_metadata("no-such-model")
    assert "Request for unknown model" in caught.value.message()
    assert triton_client.get_model_config("simple").config.name == "simple"


@pytest.mark.parametrize("compression", [None, "gzip", "deflate"])
def test_simple_adds_and_subtracts_over_grpc_with_and_without_compression(
    triton_client: Any, compression: str | None
) -> None:
    inputs = [grpcclient.InferInput(name, [1, 16], "INT32") for name in ("INPUT0", "INPUT1")]
    input0 = np.expand_dims(np.arange(start=0, stop=16, dtype=np.int32), axis=0)
    input1 = np.ones(shape=(1, 16), dtype=np.int32)
    inputs[0].set_data_from_numpy(input0)
    inputs[1].set_data_from_numpy(input1)
    outputs = [grpcclient.InferRequestedOutput("OUTPUT0"), grpcclient.InferRequestedOutput("OUTPUT1")]
    results = triton_client.infer(
        model_name="simple",
        inputs=inputs,
        outputs=outputs,
        client_timeout=10.0,
        headers={"x-trace": "on"},
        compression_algorithm=compression,
    )
    statistics = triton_client.get_inference_statistics(model_name="simple")
    assert len(statistics.model_stats) == 1
    assert statistics.model_stats[0].inference_stats.success.count >= 1
    assert results.as_numpy("OUTPUT0").tolist() == (input0 + input1).tolist()
    assert results.as_numpy("OUTPUT1").tolist() == (input0 - input1).tolist()
    results = triton_client.infer(
        model_name="simple", inputs=inputs, outputs=None, compression_algorithm=compression
    )
    assert results.as_numpy("OUTPUT0").tolist() == (input0 + input1).tolist()
    assert results.as_numpy("OUTPUT1").tolist() == (input0 - input1).tolist()
