"""``benchmarks/_wrk.py``: wrk's ``--latency`` report read into figures, and the Lua script it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from _benchmark_modules import benchmark_module

wrk = benchmark_module("_wrk")

REPORT = """Running 5s test @ http://127.0.0.1:8000/v2/models/mlp/infer
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    16.38ms    8.10ms   1.20s    55.83%
    Req/Sec     1.05k    55.45     1.20k    80.00%
  Latency Distribution
     50%  850.00us
     75%   22.94ms
     90%   27.66ms
     99%    1.50s
  5230 requests in 5.01s, 0.91MB read
  Socket errors: connect 0, read 3, write 1, timeout 2
  Non-2xx or 3xx responses: 7
Requests/sec:   1043.91
Transfer/sec:      0.89MB
"""


def test_report_gives_rate_percentiles_in_ms_and_every_error_count() -> None:
    result = wrk.parse_wrk(REPORT)
    assert (result.requests, result.seconds, result.requests_per_s) == (5230, 5.01, 1043.91)
    assert (result.p50_ms, result.p75_ms, result.p90_ms) == pytest.approx((0.85, 22.94, 27.66))
    assert result.p99_ms == pytest.approx(1500.0)
    assert result.non_2xx == 7
    assert result.socket_errors == {"connect": 0, "read": 3, "write": 1, "timeout": 2}
    assert result.errors == 13


def test_clean_report_has_no_errors() -> None:
    clean = "\n".join(line for line in REPORT.splitlines() if "errors" not in line and "Non-2xx" not in line)
    result = wrk.parse_wrk(clean)
    assert (result.non_2xx, result.errors) == (0, 0)


def test_report_without_latency_distribution_raises_naming_what_is_missing() -> None:
    without = "\n".join(line for line in REPORT.splitlines() if "%" not in line or "Stdev" in line)
    with pytest.raises(wrk.WrkError, match=r"lacks \['50', '75', '90', '99'\]"):
        wrk.parse_wrk(without)


def test_report_without_rate_raises() -> None:
    with pytest.raises(wrk.WrkError, match="Requests/sec"):
        wrk.parse_wrk(REPORT.replace("Requests/sec:   1043.91", ""))


def test_lua_script_posts_the_file_with_every_header_quoted() -> None:
    script = wrk.lua_script(Path("/tmp/a b/body.bin"), {"Inference-Header-Content-Length": "123",
                                                        "X-Quote": 'say "hi"'})
    assert 'wrk.method = "POST"' in script
    assert 'io.open("/tmp/a b/body.bin", "rb")' in script
    assert 'wrk.headers["Inference-Header-Content-Length"] = "123"' in script
    assert 'wrk.headers["X-Quote"] = "say \\"hi\\""' in script


def test_command_uses_at_most_one_thread_a_connection_and_whole_seconds() -> None:
    command = wrk.wrk_command("http://h/x", Path("s.lua"), connections=1, seconds=2.4, threads=4)
    assert command[1:4] == ["-t1", "-c1", "-d2s"]
    assert "--latency" in command and command[-1] == "http://h/x"


def test_a_run_without_any_answer_counts_as_an_error() -> None:
    silent = REPORT.replace("5230 requests in 5.01s", "0 requests in 5.01s")
    clean = "\n".join(line for line in silent.splitlines() if "errors" not in line and "Non-2xx" not in line)
    assert wrk.parse_wrk(clean).errors == 1
