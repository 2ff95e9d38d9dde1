"""The test suite's own layout: pytest imports test files here by basename (no ``__init__.py``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_file_name_is_used_once() -> None:
    """Two ``test_x.py`` in different folders stop collection with 'import file mismatch'."""
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
