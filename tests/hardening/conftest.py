"""Fixtures of the hardening tests: the ``mlp`` test repository behind a write key.

The service tests' helpers (``tests/app/_app_support.py``) are imported from
their folder, so both suites build the same repository the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "app"))

from _app_support import make_repository, start_client  # noqa: E402
from _hardening_support import API_KEY  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402


@pytest.fixture(scope="module")
def module_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh ``mlp`` test repository for one test module."""
    return make_repository(tmp_path_factory.mktemp("hardening") / "model_repository")


@pytest.fixture(scope="module")
def keyed_client(module_repository: Path) -> Iterator[TestClient]:
    """A started in-process app with ``MININN_API_KEY`` set (one per module: Hypothesis reuses it)."""
    client = start_client(module_repository, api_key=API_KEY, repository_poll_ms=0)
    yield client
    client.__exit__(None, None, None)
