"""The README's "Uploading weights" examples run as written against a real server."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from _app_support import REPO_ROOT, mlp_weights, numpy_mlp, torch_mlp
from _upload_support import X, infer, keyed_server

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

README = (REPO_ROOT / "README.md").read_text()
BLOCK = re.compile(r"<!-- upload-readme: (?P<kind>\w+) -->\n```\w*\n(?P<code>.*?)```", re.S)
KEY = "secret"  # what the examples say the server runs with


def _block(kind: str) -> str:
    blocks = [m["code"] for m in BLOCK.finditer(README) if m["kind"] == kind]
    assert len(blocks) == 1, f"one {kind} block expected under 'Uploading weights'"
    return blocks[0]


def _documents(text: str) -> list[dict[str, object]]:
    """The JSON documents curl printed one after the other."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(text):
        document, at = decoder.raw_decode(text, at)
        found.append(document)
    return found


@pytest.mark.slow
def test_the_upload_examples_run_as_written(tmp_path: Path) -> None:
    with keyed_server(tmp_path, MININN_API_KEY=KEY) as server:
        # curl: the files it names are a torch checkpoint and a DataParallel one without its head
        model = torch_mlp(mlp_weights(80))
        torch.save(model.state_dict(), tmp_path / "my_mlp.pt")
        body = {
            f"module.{k}": v for k, v in torch_mlp(mlp_weights(81)).state_dict().items() if k.startswith("0.")
        }
        safetensors_torch.save_file(body, str(tmp_path / "ddp_body.safetensors"))
        script = "set -e\n" + _block("curl").replace("localhost:8000", server.url)
        run = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        answers = _documents(run.stdout)
        assert [a.get("model_version") for a in answers[1:3]] == ["1", "2"]
        assert (answers[2]["filled_from_version"], answers[2]["stripped_keys"]) == ("1", 2)
        assert answers[3]["deleted_version"] == "2"
        assert (server.repository / "my-mlp" / "1").is_dir() and not (
            server.repository / "my-mlp" / "2"
        ).exists()
        with np.load(tmp_path / "my-mlp-v1.npz") as downloaded:
            for key, value in mlp_weights(80).items():
                np.testing.assert_array_equal(downloaded[key], value)
        version, output = infer(server, "my-mlp")
        assert version == "1"
        np.testing.assert_allclose(output, numpy_mlp(mlp_weights(80), X), rtol=1e-5, atol=1e-5)

        # python
        code = _block("python").replace('"http://127.0.0.1:8000"', repr(server.base_url))
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "README.md (Uploading weights)", "exec"), {})
        first, second = printed.getvalue().splitlines()
        assert re.fullmatch(r"1 [0-9a-f]{64} \[\] \[\]", first)
        assert second.startswith("400 the body is not a safetensors, .npz or PyTorch .pt checkpoint: ")
