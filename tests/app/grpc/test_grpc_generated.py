"""app/grpc's committed stubs are what its .proto generates; the .proto is the protocol's wire contract."""

from __future__ import annotations

from pathlib import Path

from _app_support import REPO_ROOT
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor
from tritonclient.grpc import service_pb2

from app.grpc import inference_pb2
from app.grpc.generate import generate

TRITON = service_pb2.DESCRIPTOR.pool  # tritonclient's messages, in protobuf's default pool
OURS = inference_pb2.DESCRIPTOR


def test_the_committed_stubs_are_what_the_proto_generates(tmp_path: Path) -> None:
    written = list(generate(tmp_path))
    assert written, "generate wrote no stubs"
    for generated in written:
        committed = REPO_ROOT / generated.relative_to(tmp_path)
        stale = f"{committed} is stale: run python -m app.grpc.generate"
        assert generated.read_text() == committed.read_text(), stale


def test_our_messages_load_beside_tritonclients_in_one_process() -> None:
    assert OURS.pool is not TRITON
    request = inference_pb2.ModelInferRequest(model_name="mlp", raw_input_contents=[b"\x00" * 4])
    theirs = service_pb2.ModelInferRequest.FromString(request.SerializeToString())
    assert (theirs.model_name, list(theirs.raw_input_contents)) == ("mlp", [b"\x00" * 4])


def _field(field: FieldDescriptor) -> tuple[object, ...]:
    kind = field.message_type or field.enum_type
    return (field.number, field.type, field.is_repeated, kind.full_name if kind else None)


def _check_message(ours: Descriptor) -> int:
    theirs = TRITON.FindMessageTypeByName(ours.full_name)
    for field in ours.fields:
        assert field.name in theirs.fields_by_name, f"{ours.full_name}.{field.name} is not in the protocol"
        assert _field(field) == _field(theirs.fields_by_name[field.name]), f"{ours.full_name}.{field.name}"
    for enum in ours.enum_types:
        _check_enum(enum)
    return len(ours.fields) + sum(_check_message(nested) for nested in ours.nested_types)


def _check_enum(ours: EnumDescriptor) -> None:
    theirs = TRITON.FindEnumTypeByName(ours.full_name)
    numbers = {v.name: v.number for v in theirs.values}
    assert {v.name: v.number for v in ours.values}.items() <= numbers.items(), ours.full_name


def test_every_field_has_the_protocols_name_number_and_type() -> None:
    checked = sum(_check_message(message) for message in OURS.message_types_by_name.values())
    for enum in OURS.enum_types_by_name.values():
        _check_enum(enum)
    assert checked > 150


def test_every_method_has_the_protocols_path_and_messages() -> None:
    (service,) = OURS.services_by_name.values()
    theirs = TRITON.FindServiceByName("inference.GRPCInferenceService")
    assert service.full_name == "inference.GRPCInferenceService"
    for method in service.methods:
        other = theirs.methods_by_name[method.name]
        assert (method.input_type.full_name, method.output_type.full_name) == (
            other.input_type.full_name,
            other.output_type.full_name,
        )
    assert {m.name for m in service.methods} == {
        "ServerLive", "ServerReady", "ModelReady", "ServerMetadata", "ModelMetadata", "ModelInfer",
        "ModelConfig", "ModelStatistics", "RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload",
        "ModelStreamInfer",
    }
    streaming = service.methods_by_name["ModelStreamInfer"]
    assert streaming.client_streaming and streaming.server_streaming
