"""``wrk`` as the HTTP load generator: a Lua script that POSTs one pre-encoded body, and its report parsed.

``wrk`` (C, epoll) costs a few microseconds of client CPU a request, so on a small machine the
server, not the client, is what is measured. :func:`run_wrk` runs one closed loop of
``connections`` kept-alive connections for ``seconds``; :func:`parse_wrk` turns wrk's
``--latency`` report into a :class:`WrkResult`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from _support import Body

__all__ = ["WrkError", "WrkResult", "lua_script", "parse_wrk", "run_wrk", "wrk_command"]

WRK = "/usr/bin/wrk"
TIMEOUT_S = 30  # wrk's default (2 s) would count a slow answer under overload as a socket error

_UNITS_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*([\d.]+)(us|ms|s|m|h)\s*$")
_PERCENTILE = re.compile(r"^\s*(\d+(?:\.\d+)?)%\s+([\d.]+(?:us|ms|s|m|h))\s*$")
_REQUESTS = re.compile(r"^\s*(\d+) requests in ([\d.]+(?:us|ms|s|m|h)),")
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_NON_2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")
_RATE = re.compile(r"^Requests/sec:\s+([\d.]+)")


class WrkError(RuntimeError):
    """wrk did not run, or its report could not be read."""


@dataclass(frozen=True)
class WrkResult:
    """One wrk run: answered requests, their rate and latency, and what went wrong."""

    requests: int
    seconds: float
    requests_per_s: float
    p50_ms: float
    p75_ms: float
    p90_ms: float
    p99_ms: float
    non_2xx: int
    socket_errors: dict[str, int]

    @property
    def errors(self) -> int:
        """Non-2xx answers plus socket errors of every kind (and 1 for a run that got no answer at all):
        a point with any is not a valid point."""
        return self.non_2xx + sum(self.socket_errors.values()) + (self.requests == 0)


def _seconds(text: str) -> float:
    match = _DURATION.match(text)
    if match is None:
        raise WrkError(f"unreadable duration {text!r} in wrk's report")
    return float(match.group(1)) * _UNITS_S[match.group(2)]


def parse_wrk(report: str) -> WrkResult:
    """The figures of wrk's ``--latency`` report.

    Raises:
        WrkError: the report lacks the latency distribution, the request count or the rate.
    """
    percentiles: dict[str, float] = {}
    requests, seconds, rate, non_2xx = None, None, None, 0
    sockets = {"connect": 0, "read": 0, "write": 0, "timeout": 0}
    for line in report.splitlines():
        if match := _PERCENTILE.match(line):
            percentiles[format(float(match.group(1)), "g")] = _seconds(match.group(2)) * 1e3
        elif match := _REQUESTS.match(line):
            requests, seconds = int(match.group(1)), _seconds(match.group(2))
        elif match := _SOCKET.search(line):
            sockets = dict(zip(sockets, map(int, match.groups())))
        elif match := _NON_2XX.search(line):
            non_2xx = int(match.group(1))
        elif match := _RATE.match(line):
            rate = float(match.group(1))
    missing = [p for p in ("50", "75", "90", "99") if p not in percentiles]
    if missing or requests is None or seconds is None or rate is None:
        raise WrkError(f"wrk's report lacks {missing or 'requests or Requests/sec'}:\n{report}")
    return WrkResult(requests, seconds, rate, percentiles["50"], percentiles["75"], percentiles["90"],
                     percentiles["99"], non_2xx, sockets)


def lua_script(body_file: Path, headers: dict[str, str]) -> str:
    """A wrk script that POSTs the bytes of ``body_file`` with ``headers`` on every request."""
    lines = [
        'wrk.method = "POST"',
        f'local f = assert(io.open({_lua_string(str(body_file))}, "rb"))',
        'wrk.body = f:read("*a")',
        "f:close()",
    ]
    lines += [f"wrk.headers[{_lua_string(key)}] = {_lua_string(value)}" for key, value in headers.items()]
    return "\n".join(lines) + "\n"


def _lua_string(text: str) -> str:
    """``text`` as a double-quoted Lua string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def wrk_command(url: str, script: Path, connections: int, seconds: float, threads: int = 1) -> list[str]:
    """wrk's command line: ``threads`` threads (at most one a connection) holding ``connections``."""
    return [shutil.which("wrk") or WRK, f"-t{min(threads, connections)}", f"-c{connections}",
            f"-d{max(1, round(seconds))}s", f"--timeout={TIMEOUT_S}s", "--latency", "-s", str(script), url]


def run_wrk(url: str, body: Body, connections: int, seconds: float,
            cpus: Iterable[int] | None = None) -> WrkResult:
    """One closed loop of ``connections`` connections POSTing ``body`` to ``url`` for ``seconds``.

    ``cpus``: the cores wrk may run on (the client's side of a pinned benchmark); None: any.
    """
    with tempfile.TemporaryDirectory(prefix="wrk-") as folder:
        body_file, script = Path(folder) / "body.bin", Path(folder) / "post.lua"
        body_file.write_bytes(body.content)
        script.write_text(lua_script(body_file, body.headers))
        allowed = set(cpus) if cpus is not None else None
        done = subprocess.run(
            wrk_command(url, script, connections, seconds), capture_output=True, text=True,
            timeout=seconds + TIMEOUT_S + 30,
            preexec_fn=(lambda: os.sched_setaffinity(0, allowed)) if allowed else None,
        )
    if done.returncode != 0:
        raise WrkError(f"wrk exited with {done.returncode}: {done.stderr or done.stdout}")
    return parse_wrk(done.stdout)
