"""Fixtures of the gRPC tests: ``grpc_server``, one per session and xdist worker (see ``_grpc_support``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _grpc_support import GrpcServer, start_grpc_server


@pytest.fixture(scope="session")
def grpc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GrpcServer]:
    """The shared gRPC test server (default limits)."""
    yield from start_grpc_server(tmp_path_factory.mktemp("grpc"))
