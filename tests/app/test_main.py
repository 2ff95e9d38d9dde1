"""app.main.create_app: the server's thread switch interval is set while it runs, and restored."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
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


class _Telemetry:
    def __init__(self) -> None:
        self.on = False
        self.asked = 0

    def enabled(self) -> bool:
        self.asked += 1
        return self.on


def test_whether_telemetry_is_on_is_asked_once_per_recheck_period(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.main

    fastapi_app = create_app(Settings(model_repository=tmp_path, seed_repository=False))
    telemetry = _Telemetry()
    monkeypatch.setattr(fastapi_app, "_native_telemetry", telemetry, raising=False)
    assert [app.main._telemetry_enabled(fastapi_app) for _ in range(3)] == [False] * 3
    assert telemetry.asked == 1
    telemetry.on = True  # OpenTelemetry set up while the server runs: seen once the period is over
    monkeypatch.setattr(app.main, "TELEMETRY_RECHECK_S", 0.0)
    monkeypatch.setattr(fastapi_app, "_telemetry_checked", (0.0, False))
    assert app.main._telemetry_enabled(fastapi_app) is True
    assert telemetry.asked == 2
