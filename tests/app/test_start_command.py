"""``python -m app``: settings checked before start, demo repository, start-up time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from _app_support import REPO_ROOT, make_repository, run_server, server_env, wait_until

from models.demos import minilm_package_dir, smollm2_gguf_path


def run_app(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app", *args],
        cwd=REPO_ROOT,
        env=server_env(1, tmp_path / "repo", **env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bad_settings_stop_start_up_with_exit_code_2(tmp_path: Path) -> None:
    result = run_app(tmp_path, MININN_PORT="abc", MININN_DTYPE="int8")
    assert result.returncode == 2
    assert result.stderr == (
        "mininn-serve: invalid configuration\n"
        "MININN_PORT: Input should be a valid integer, unable to parse string as an integer\n"
        "MININN_DTYPE: 'int8' is not a floating-point dtype; use float16, bfloat16, float32 or float64\n"
    )
    assert result.stdout == ""
    assert not (tmp_path / "repo").exists()


def test_help_lists_every_variable(tmp_path: Path) -> None:
    result = run_app(tmp_path, "--help")
    assert result.returncode == 0
    for variable in (
        "MININN_HOST",
        "MININN_PORT",
        "MININN_WORKERS",
        "MININN_MODEL_REPOSITORY",
        "MININN_API_KEY",
    ):
        assert variable in result.stdout


@pytest.mark.slow
def test_the_demo_repository_is_seeded_and_ready_within_3_seconds(tmp_path: Path) -> None:
    repository = tmp_path / "model_repository"
    expected = ["digits", "minilm"] if minilm_package_dir() is not None else ["digits"]
    expected += ["smollm2"] if smollm2_gguf_path() is not None else []
    with run_server(repository, tmp_path / "first.log") as first:  # seeds the empty repository
        first.wait_ready(300)
        index = httpx.post(f"{first.base_url}/v2/repository/index").json()
        assert [(row["name"], row["state"]) for row in index] == [(name, "READY") for name in expected]
    assert sorted(p.name for p in repository.iterdir()) == expected
    # The 3-second start is the small demos' promise: reading and dequantizing smollm2's 93 MB GGUF
    # file takes tens of CPU seconds by itself.
    shutil.rmtree(repository / "smollm2", ignore_errors=True)
    with run_server(repository, tmp_path / "second.log") as second:
        seconds = second.wait_ready(30)
        cpu = second.cpu_seconds()
        assert httpx.get(f"{second.base_url}/v2/models/digits/ready").status_code == 200
    # On a shared, oversubscribed machine the wall clock also counts time spent waiting for a
    # CPU; the server's own CPU time until ready is what it would take on an idle machine.
    assert min(seconds, cpu if cpu is not None else seconds) < 3.0, (
        f"ready after {seconds:.2f} s ({cpu} s CPU)"
    )


@pytest.mark.slow
def test_several_workers_serve_through_the_app_factory(tmp_path: Path) -> None:
    from _app_support import make_repository

    repository = make_repository(tmp_path / "model_repository")
    with run_server(
        repository, tmp_path / "workers.log", MININN_WORKERS="2", MININN_SEED_REPOSITORY="0"
    ) as server:
        server.wait_ready(60)  # one worker is ready; the other may still be loading (503)
        body = {"inputs": [{"name": "input", "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]}]}
        deadline = time.monotonic() + 60
        while True:
            statuses = {
                httpx.post(f"{server.base_url}/v2/models/mlp/infer", json=body).status_code
                for _ in range(6)
            }
            if statuses == {200} or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        workers = _children(server.process.pid)
    assert statuses == {200}
    if Path("/proc").is_dir():
        assert len(workers) == 2, workers


def test_start_up_logs_where_the_explorer_and_the_api_docs_are(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "model_repository")
    with run_server(
        repository, tmp_path / "server.log", MININN_LOG_LEVEL="info", MININN_SEED_REPOSITORY="0"
    ) as server:
        server.wait_ready(60)
        assert httpx.get(f"{server.base_url}/ui/").status_code == 200
        assert httpx.get(f"{server.base_url}/docs").status_code == 200
    lines, url = server.log.read_text().splitlines(), server.base_url
    assert lines.count(f"INFO:     app [-] Model explorer at {url}/ui/, API docs at {url}/docs") == 1, lines
    assert "INFO:     uvicorn [-] Application startup complete." in lines
    assert not [line for line in lines if "uvicorn.error" in line]


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("127.0.0.1", "http://127.0.0.1:8000"),
        ("0.0.0.0", "http://localhost:8000"),  # every interface: the browser's way in is localhost
        ("::", "http://localhost:8000"),
        ("::1", "http://[::1]:8000"),
        ("models.example.org", "http://models.example.org:8000"),
    ],
)
def test_the_logged_urls_are_ones_a_browser_can_open(host: str, url: str) -> None:
    from app.__main__ import _base_url

    assert _base_url(host, 8000) == url


@pytest.mark.slow
def test_several_workers_log_the_explorer_and_docs_urls_once(tmp_path: Path) -> None:
    repository = make_repository(tmp_path / "model_repository")
    env = {"MININN_WORKERS": "2", "MININN_SEED_REPOSITORY": "0", "MININN_LOG_LEVEL": "info"}
    with run_server(repository, tmp_path / "workers.log", **env) as server:
        server.wait_ready(60)
        log = server.log
        wait_until(lambda: log.read_text().count("Application startup complete.") == 2, 60, "both workers")
    assert log.read_text().count(f"Model explorer at {server.base_url}/ui/") == 1


def _children(pid: int) -> list[int]:
    """Worker processes that ``pid`` spawned (uvicorn's workers), from /proc."""
    children = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
            spawned = b"spawn_main" in (entry.parent / "cmdline").read_bytes()  # not the resource tracker
        except OSError:
            continue
        if int(fields[1]) == pid and spawned:  # field 4 of proc(5): the parent's pid
            children.append(int(entry.parent.name))
    return children
