"""Regenerate ``inference_pb2.py`` and ``inference_pb2_grpc.py`` from ``inference.proto``.

The generated modules are committed; after changing the ``.proto``, run from anywhere::

    python -m app.grpc.generate

which runs, from the repository root (``grpcio-tools``, in the ``test`` extra)::

    python -m grpc_tools.protoc -I . --python_out=. --grpc_python_out=. app/grpc/inference.proto

and then makes one change to ``inference_pb2.py``: its descriptors go into a
descriptor pool of their own instead of protobuf's default pool. The messages
have the protocol's names (``inference.ModelInferRequest``, ...), and so do
``tritonclient.grpc``'s and KServe's; in the default pool, the second of them
imported into one process would fail with "duplicate symbol". The wire format
does not see the pool. ``tests/app/grpc/test_grpc_generated.py`` regenerates
into a temporary folder and compares.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["PROTO", "generate"]

PROTO = "app/grpc/inference.proto"
ROOT = Path(__file__).resolve().parents[2]

_DEFAULT_POOL = "DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile("
_OWN_POOL = (
    "# mininn-serve: a pool of its own, so that tritonclient's protocol messages can be imported beside\n"
    "# these (python -m app.grpc.generate)\n"
    "_POOL = _descriptor_pool.DescriptorPool()\n"
    "DESCRIPTOR = _POOL.AddSerializedFile("
)


def generate(out: Path) -> list[Path]:
    """Write the two modules under ``out/app/grpc/``; the paths written.

    Raises:
        RuntimeError: protoc failed, or its output no longer has the line this script changes.
    """
    from grpc_tools import protoc

    out.mkdir(parents=True, exist_ok=True)
    arguments = ["grpc_tools.protoc", f"-I{ROOT}", f"--python_out={out}", f"--grpc_python_out={out}"]
    if protoc.main([*arguments, str(ROOT / PROTO)]) != 0:
        raise RuntimeError(f"protoc failed on {PROTO}")
    messages = out / "app" / "grpc" / "inference_pb2.py"
    text = messages.read_text()
    if text.count(_DEFAULT_POOL) != 1:
        raise RuntimeError(f"{messages} has no line {_DEFAULT_POOL!r} to move into a pool of its own")
    messages.write_text(text.replace(_DEFAULT_POOL, _OWN_POOL))
    return [messages, out / "app" / "grpc" / "inference_pb2_grpc.py"]


if __name__ == "__main__":
    for path in generate(ROOT):
        sys.stdout.write(f"wrote {path.relative_to(ROOT)}\n")
