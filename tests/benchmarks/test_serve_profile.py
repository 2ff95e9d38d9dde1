"""``benchmarks/serve_profile.py``: py-spy's raw stacks given to request steps, per thread group."""

from __future__ import annotations

import pytest
from _benchmark_modules import benchmark_module

profile = benchmark_module("serve_profile")

LOOP = "_run_module_as_main (<frozen runpy>:198);Runner.run (asyncio/runners.py:118)"
HANDLER = f"{LOOP};InferenceFastPath.__call__ (app/routes/infer.py:128);infer (app/routes/infer.py:58)"
WORKER = "Thread._bootstrap (threading.py:1002);_worker (concurrent/futures/thread.py:81)"
RAW = "\n".join([
    f"thread (100);{HANDLER};parse_json (app/http/json_limits.py:58) 30",
    f"thread (100);{HANDLER};_decode_input (app/v2/request.py:269);_all (numpy/_core/_methods.py:70) 10",
    f"thread (100);{HANDLER};BatchQueue._dispatch (app/runtime/batching.py:455);"
    "Gauge.inc (prometheus_client/metrics.py:451);MutexValue.inc (prometheus_client/values.py:28) 20",
    f"thread (100);{LOOP} 40",
    f"thread (101);{WORKER};run (concurrent/futures/thread.py:58);"
    "_Linear.forward (mininn/nn/functional/linear.py:24) 15",
    f"thread (101);{WORKER} 5",
])


def test_raw_lines_become_frames_without_the_thread_frame() -> None:
    stacks = profile.parse_raw(RAW)
    assert len(stacks) == 6
    frames, count = stacks[3]
    assert frames == LOOP.split(";") and count == 40


def test_a_line_that_is_not_raw_format_raises_naming_it() -> None:
    with pytest.raises(ValueError, match="line 2 is not"):
        profile.parse_raw(f"{LOOP} 3\nno count here")


@pytest.mark.parametrize(("leaf", "step"), [
    ("parse_json (app/http/json_limits.py:58)", "parse and decode"),
    ("MutexValue.inc (prometheus_client/values.py:28)", "metrics and statistics"),
    ("Logger.info (logging/__init__.py:1489)", "logging"),
    ("RequestResponseCycle.send (uvicorn/protocols/http/httptools_impl.py:524)", "send"),
    ("encode_json (app/v2/tensors.py:205)", "encode"),
    ("_check_signature (app/v2/request.py:285)", "validation"),
    ("read_body (app/http/body.py:33)", "body read"),
])
def test_the_leaf_most_matching_frame_names_the_step(leaf: str, step: str) -> None:
    assert profile.step_of([*HANDLER.split(";"), leaf]) == step


def test_an_unmatched_leaf_counts_for_its_nearest_matching_caller() -> None:
    frames = [*HANDLER.split(";"), "_decode_input (app/v2/request.py:269)",
              "_all (numpy/_core/_methods.py:70)"]
    assert profile.step_of(frames) == "parse and decode"
    assert profile.step_of(["mystery (nowhere.py:1)"]) == profile.OTHER


def test_summary_splits_threads_and_gives_shares_busy_time_and_us_per_request() -> None:
    summary = profile.summarize(RAW, rate_hz=100, seconds=2, requests_per_s=50)
    assert summary["samples"] == {"event_loop_thread": 100, "other_threads": 20}
    assert summary["event_loop_busy"] == 0.5
    steps = {row["step"]: row for row in summary["event_loop_steps"]}
    assert steps["event loop"]["share"] == 0.4
    assert steps["parse and decode"]["samples"] == 40
    # 100 requests in the 2 s; 20 samples of 10 ms each: 2 ms per request
    assert steps["metrics and statistics"]["us_per_request"] == 2000.0
    assert summary["event_loop_us_per_request"] == 10000.0
    others = {row["step"]: row["samples"] for row in summary["other_thread_steps"]}
    assert others == {"forward (inference thread)": 15, "waiting for work (inference thread)": 5}
    assert summary["event_loop_top_self"][0] == {"frame": "Runner.run (asyncio/runners.py:118)",
                                                 "samples": 40, "share": 0.4}


def test_summary_without_recording_figures_leaves_busy_and_per_request_out() -> None:
    summary = profile.summarize(RAW)
    assert summary["event_loop_busy"] is None and summary["event_loop_us_per_request"] is None
    assert all("us_per_request" not in row for row in summary["event_loop_steps"])
