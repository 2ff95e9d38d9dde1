"""The README's examples run as written, each in the environment it names, against the first command's server.

The server is started as the README's first command starts it: in ``.venv`` (without
PyTorch), with the environment variables that command sets (``MININN_API_KEY=secret``), in a
clean temporary working folder whose ``./model_repository`` it seeds (the repository root
of the README's examples). Only the port differs (tests run in parallel): the blocks'
``localhost:8000`` is rewritten to it, and their gRPC ``localhost:8001`` to a free gRPC port.
``.venv`` and ``.venv-test`` are the stand-ins of :mod:`_readme_envs`: ``.venv`` refuses
every package that no install command of the README puts there. Every block under
``<!-- readme-test: bash -->`` runs in that folder with ``bash`` (``set -euo pipefail``;
``curl`` fails on an HTTP error status) with ``.venv/bin`` first on ``PATH`` (activated);
every block under ``<!-- readme-test: python -->`` runs there with ``.venv/bin/python``,
from standard input as pasted code would. Each block's first line names that environment.
They run in README order, so files a block makes are the ones the next block uses. The
configuration table in ``docs/http-api.md`` must list every setting with its default.
"""

from __future__ import annotations

import importlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from _app_support import REPO_ROOT, free_port, run_server
from _readme_envs import make_environments

from app.settings import Settings
from mininn.torch_alias import TorchNameError, torch_module

README = (REPO_ROOT / "README.md").read_text()
BLOCK = re.compile(r"<!-- readme-test: (?P<kind>\w+) -->\n```\w*\n(?P<code>.*?)```", re.S)
BLOCKS = [(m["kind"], m["code"]) for m in BLOCK.finditer(README)]
CURL_FAILS_ON_HTTP_ERRORS = 'curl() { command curl --fail-with-body "$@"; }\n'


def first_command_environment() -> dict[str, str]:
    """The variables the README's first command sets for ``python -m app``."""
    first = README.split("```bash\n", 1)[1].splitlines()[0]
    serve = first.rsplit("&&", 1)[1].strip()
    *assignments, python, dash_m, module = shlex.split(serve)
    assert (python, dash_m, module) == ("python", "-m", "app"), first
    return dict(a.split("=", 1) for a in assignments)


def test_the_readme_is_short_and_has_examples_of_each_kind() -> None:
    assert len(README.splitlines()) <= 420  # 350, then each example naming its environment and Generate text
    kinds = [kind for kind, _ in BLOCKS]
    assert kinds.count("bash") >= 4 and kinds.count("python") >= 3
    assert set(kinds) == {"bash", "python"}


ENVIRONMENT_LINE = {
    "bash": "# bash in the repository root, .venv activated",
    "python": "# in .venv",
}
CLIENT_INSTALL = "`. .venv/bin/activate && pip install -e '.[client]'`"


def test_every_example_says_where_it_runs() -> None:
    assert CLIENT_INSTALL in " ".join(README.split())
    for index, (kind, code) in enumerate(BLOCKS):
        first = code.splitlines()[0]
        assert first.startswith(ENVIRONMENT_LINE[kind]), f"README {kind} block {index} starts {first!r}"
        if "import torch" in code:  # torch only in the training environment's python
            assert kind == "bash" and ".venv-test/bin/python" in code, f"README block {index} needs torch"


@pytest.mark.slow
def test_every_example_runs_in_its_environment_against_the_first_commands_server(tmp_path: Path) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    make_environments(folder)
    env = first_command_environment()
    assert env == {"MININN_API_KEY": "secret"}
    grpc_port = free_port()  # the README's gRPC example talks to localhost:8001
    with run_server(
        folder / "model_repository",
        tmp_path / "server.log",
        command=[str(folder / ".venv" / "bin" / "python"), "-m", "app"],
        cwd=folder,
        MININN_GRPC_PORT=str(grpc_port),
        **env,
    ) as server:
        server.wait_ready(300)  # smollm2 (when installed) reads its GGUF file for tens of seconds
        bin_dir = str(folder / ".venv" / "bin")
        activated = {**os.environ, "PATH": os.pathsep.join([bin_dir, os.environ["PATH"]])}
        for index, (kind, code) in enumerate(BLOCKS):
            code = code.replace("localhost:8000", server.url).replace("127.0.0.1:8000", server.url)
            code = code.replace("localhost:8001", f"{server.host}:{grpc_port}")
            if kind == "bash":
                command = ["bash", "-c", "set -euo pipefail\n" + CURL_FAILS_ON_HTTP_ERRORS + code]
                run = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300,
                                     env=activated)
            else:
                run = subprocess.run([str(folder / ".venv" / "bin" / "python"), "-"], input=code, cwd=folder,
                                     capture_output=True, text=True, timeout=300, env=activated)
            assert run.returncode == 0, f"README {kind} block {index} failed:\n{code}\n{run.stderr}"
            assert run.stdout.strip(), f"README {kind} block {index} printed nothing"
        rows = httpx.post(f"{server.base_url}/v2/repository/index").json()
        states = {row["name"]: row["state"] for row in rows}
        assert states["my-mlp"] == states["my-net"] == states["smollm2"] == "READY"
    repository = folder / "model_repository"
    assert (repository / "my-mlp" / "1").is_dir() and not (repository / "my-mlp" / "2").exists()
    with np.load(folder / "my-mlp-v1.npz") as downloaded:
        assert sorted(downloaded.files) == ["0.bias", "0.weight", "3.bias", "3.weight"]
    assert sorted(p.name for p in (repository / "my-net").iterdir()) == ["1", "model.json", "net.py"]


@pytest.mark.slow
def test_the_venv_stand_in_refuses_torch_and_allows_the_clients(tmp_path: Path) -> None:
    make_environments(tmp_path)
    python = str(tmp_path / ".venv" / "bin" / "python")
    allowed = subprocess.run([python, "-c", "import tritonclient.http, httpx, kserve, numpy, mininn, models"],
                             capture_output=True, text=True, timeout=120)
    assert allowed.returncode == 0, allowed.stderr
    refused = subprocess.run([python, "-c", "import torch"], capture_output=True, text=True, timeout=60)
    assert "No module named 'torch' in .venv" in refused.stderr
    training = subprocess.run([str(tmp_path / ".venv-test" / "bin" / "python"), "-c", "import torch"],
                              capture_output=True, text=True, timeout=120)
    assert training.returncode == 0, training.stderr


def test_the_configuration_table_lists_every_setting_with_its_default() -> None:
    section = (REPO_ROOT / "docs" / "http-api.md").read_text().split("## Configuration", 1)[1]
    rows = dict(re.findall(r"^\| `(MININN_\w+)` \| (.*?) \|", section, re.M))
    fields = Settings.model_fields
    assert sorted(rows) == sorted(f"MININN_{name.upper()}" for name in fields)
    for name, field in fields.items():
        assert rows[f"MININN_{name.upper()}"] == _readme_default(
            name, field.get_default(call_default_factory=True)
        )


def test_the_docs_link_to_files_that_exist() -> None:
    for page in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


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


MISSING_NAME = re.compile(r"`(?P<file>\w+\.py):(?P<line>\d+) in (?P<function>\w+): (?P<name>torch\.[\w.]+) "
                          r"is not available in mininn`")


def test_the_readmes_missing_name_is_missing_and_reported_as_shown(tmp_path: Path, capsys: Any) -> None:
    """The README's example of a name mininn lacks: used on that line of its net.py, torch runs it and
    ``add-model`` refuses it with the README's words."""
    torch = pytest.importorskip("torch")
    from app.store.model_folder import main as add_model

    shown = MISSING_NAME.search(" ".join(README.split()))
    assert shown is not None, "the README shows no missing-name error"
    namespace, _, attr = shown["name"].rpartition(".")
    assert hasattr(importlib.import_module(namespace), attr), f"torch has no {shown['name']}"
    with pytest.raises(TorchNameError):  # what model code sees for it
        getattr(torch_module(namespace), attr)
    code = re.search(r"cat > (\w+\.py) <<'PY'\n(.*?)\nPY\n", README, re.S)
    assert code is not None and code[1] == shown["file"]
    lines = code[2].splitlines()
    line = int(shown["line"])
    assert lines[line - 1].strip().startswith("return"), "the README's line is no longer forward's last"
    indent = lines[line - 1][: len(lines[line - 1]) - len(lines[line - 1].lstrip())]
    call = f"{shown['name']}(image.flatten(1), 16, window=torch.hann_window(16), return_complex=True)"
    lines.insert(line - 1, f"{indent}spectrogram = {call}")
    (tmp_path / shown["file"]).write_text("\n".join(lines) + "\n")

    sys.path.insert(0, str(tmp_path))
    try:  # it is torch code: torch runs it
        module = __import__(Path(shown["file"]).stem)
        assert module.Net(num_classes=5)(torch.zeros(1, 3, 32, 32)).shape == (1, 5)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(Path(shown["file"]).stem, None)
    args = ["stft-net", "--code", f"{tmp_path / shown['file']}:Net", "--init", '{"num_classes": 5}',
            "--input", "image:FP32:-1,3,32,32", "--repository", str(tmp_path / "model_repository")]
    assert add_model(args) == 1
    error = capsys.readouterr().err
    where = f"{shown['file']}:{line} in {shown['function']}"
    assert f"{where}: {shown['name']} is not available in mininn" in error
    assert not (tmp_path / "model_repository" / "stft-net").exists()


def test_every_documented_missing_name_is_one_torch_has_and_mininn_lacks() -> None:
    pytest.importorskip("torch")
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    shown = {m["name"] for page in pages for m in MISSING_NAME.finditer(" ".join(page.read_text().split()))}
    assert shown, "no page shows a missing-name error"
    for name in sorted(shown):
        namespace, _, attr = name.rpartition(".")
        assert hasattr(importlib.import_module(namespace), attr), f"torch has no {name}"
        with pytest.raises(TorchNameError):
            getattr(torch_module(namespace), attr)


def test_the_readme_tells_kserve_sdk_users_to_ask_for_v2() -> None:
    """``InferenceRESTClient()`` speaks KServe's v1: test_kserve_rest_client.py checks it."""
    text = " ".join(README.split())
    assert "Unsupported protocol v1" in text and 'RESTConfig(protocol="v2")' in text
    kserve_blocks = [code for kind, code in BLOCKS if kind == "python" and "InferenceRESTClient" in code]
    assert len(kserve_blocks) == 1 and 'InferenceRESTClient(RESTConfig(protocol="v2"))' in kserve_blocks[0]
