"""app.main.create_app: the server's thread switch interval is set while it runs, and restored."""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi.testclient import TestClient

from app.main import SWITCH_INTERVAL_S, create_app
from app.settings import Settings


def test_the_switch_interval_is_shortened_while_the_app_runs(tmp_path: Path) -> None:
    outer = sys.getswitchinterval()  # another app of this process may still be running
    before = 0.005  # CPython's default
    sys.setswitchinterval(before)
    try:
        app = create_app(Settings(model_repository=tmp_path, seed_repository=False))
        with TestClient(app) as client:
            assert client.get("/v2/health/live").status_code == 200
            assert sys.getswitchinterval() == SWITCH_INTERVAL_S
        assert sys.getswitchinterval() == before
    finally:
        sys.setswitchinterval(outer)
