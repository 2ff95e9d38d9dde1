"""The 60-second soak: mixed traffic against two workers, one SIGKILLed midway (``benchmarks/soak.py``).

``python benchmarks/soak.py`` runs the same for ten minutes; SECURITY.md has
its figures. Every promise is checked by the soak itself (its report lists
what did not hold); this test runs it and asserts them one by one, so a
failure names the promise.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SOAK_SECONDS = 60


def _soak_module() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"
    spec = importlib.util.spec_from_file_location("benchmarks_soak", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds and measures workers through /proc")
def test_a_minute_of_mixed_traffic_survives_a_worker_kill() -> None:
    soak = _soak_module()
    report = soak.run(SOAK_SECONDS, workers=2, clients=3, upload_every=2.0, kill_at=0.4)
    text = soak.summary(report)
    assert report.killed_pid and report.replacement_pid, text
    assert report.requests > 500, text
    assert report.uploads_acknowledged >= 10, text
    assert report.uploads_found == report.uploads_acknowledged, text
    assert report.served_versions == [report.newest_acknowledged], text
    assert report.errors_outside_window == 0, text
    assert report.kill_window_s[1] - report.kill_window_s[0] <= soak.MAX_RECOVERY_S, text
    assert report.rss_growth_second_half and max(report.rss_growth_second_half.values()) < 10, text
    assert report.ok, text
