"""``mininn-serve add-model``: a checked model folder, or nothing written and a message naming the fix."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pytest

from app.store.model_folder import main
from mininn.serialization import load

torch = pytest.importorskip("torch")

NET = '''
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, hidden=4):
        super().__init__()
        self.fc1 = nn.Linear(3, hidden)
        self.fc2 = nn.Linear(hidden, 2)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's training folder: net.py and net.pt (torch.save of a hidden=4 state dict)."""
    (tmp_path / "net.py").write_text(NET)
    torch.manual_seed(0)
    state = {"fc1.weight": torch.randn(4, 3), "fc1.bias": torch.randn(4),
             "fc2.weight": torch.randn(2, 4), "fc2.bias": torch.randn(2)}
    torch.save(state, tmp_path / "net.pt")
    return tmp_path


def add(project: Path, *extra: str) -> list[str]:
    return ["net", "--code", str(project / "net.py") + ":Net", "--weights", str(project / "net.pt"),
            "--input", "x:FP32:-1,3", "--repository", str(project / "repo"), *extra]


def test_add_model_writes_code_model_json_and_version_1(project: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(add(project, "--max-batch-size", "8")) == 0
    folder = project / "repo" / "net"
    assert sorted(os.listdir(folder)) == ["1", "model.json", "net.py"]
    assert json.loads((folder / "model.json").read_text()) == {
        "module": "net.py:Net", "init": {}, "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3]}],
        "max_batch_size": 8,
    }
    stored = load(folder / "1" / "weights.safetensors")
    trained = torch.load(project / "net.pt")["fc1.weight"].numpy()
    np.testing.assert_array_equal(stored["fc1.weight"].numpy(), trained)
    out = capsys.readouterr().out
    assert "output output: FP32 [-1, 2]" in out and "/v2/models/net/infer" in out
    assert main(["net", "--check", "--repository", str(project / "repo")]) == 0
    assert "loads and serves" in capsys.readouterr().out


def test_weights_that_do_not_fit_are_reported_and_nothing_is_written(project: Path, capsys) -> None:
    assert main(add(project, "--init", '{"hidden": 5}')) == 1
    error = capsys.readouterr().err
    assert "loading the state dict" in error and "size mismatch for fc1.weight" in error
    assert not (project / "repo").exists() or os.listdir(project / "repo") == []


def test_missing_and_unexpected_keys_are_named(project: Path, capsys) -> None:
    state = torch.load(project / "net.pt")
    state["extra.weight"] = state.pop("fc2.bias")
    buffer = io.BytesIO()
    torch.save(state, buffer)
    (project / "net.pt").write_bytes(buffer.getvalue())
    assert main(add(project)) == 1
    error = capsys.readouterr().err
    assert 'Missing key(s) in state_dict: "fc2.bias"' in error
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in error


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (["--input", "x:FP32:-1,three"], "SHAPE must be integers"),
        (["--init", "[1]"], "--init must be a JSON object"),
        (["--code", "net.py"], "--code FILE.py:NAME is required"),
    ],
)
def test_bad_arguments_say_what_to_write(project: Path, capsys, change: list[str], message: str) -> None:
    args = add(project)
    index = args.index(change[0]) if change[0] in args else len(args)
    args[index:index + 2] = change
    assert main(args) == 1
    assert message in capsys.readouterr().err


def test_an_existing_model_is_not_replaced(project: Path, capsys) -> None:
    assert main(add(project)) == 0
    before = (project / "repo" / "net" / "model.json").read_bytes()
    assert main(add(project, "--init", '{"hidden": 4}')) == 1
    assert "already exists" in capsys.readouterr().err
    assert (project / "repo" / "net" / "model.json").read_bytes() == before


BIGRAM = '''
import torch.nn as nn


class Bigram(nn.Module):
    def __init__(self, vocab=300):
        super().__init__()
        self.table = nn.Embedding(vocab, vocab)

    def forward(self, idx):
        return self.table(idx)
'''


def test_add_model_for_a_language_model_takes_task_and_copies_its_tokenizer(tmp_path: Path, capsys) -> None:
    import tokenizers

    (tmp_path / "bigram.py").write_text(BIGRAM)
    torch.save({"table.weight": torch.randn(300, 300)}, tmp_path / "bigram.pt")
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=280,
                                             initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(["a tiny corpus for a tiny tokenizer"], trainer)
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    argv = ["bigram", "--code", f"{tmp_path / 'bigram.py'}:Bigram", "--weights", str(tmp_path / "bigram.pt"),
            "--task", "text-generation", "--context-length", "16", "--repository", str(tmp_path / "repo")]
    assert main(argv) == 0, capsys.readouterr().err
    folder = tmp_path / "repo" / "bigram"
    assert sorted(os.listdir(folder)) == ["1", "bigram.py", "model.json", "tokenizer.json"]
    assert json.loads((folder / "model.json").read_text()) == {
        "module": "bigram.py:Bigram", "init": {}, "task": "text-generation", "context_length": 16,
    }
    assert "output logits: FP32 [-1, -1, 300]" in capsys.readouterr().out
    assert main(["bigram", "--check", "--repository", str(tmp_path / "repo")]) == 0


def test_add_model_refuses_a_context_length_without_the_task(project: Path, capsys) -> None:
    assert main(add(project, "--context-length", "8")) == 1
    assert "'context_length' goes with 'module' code and \"task\"" in capsys.readouterr().err
    assert not (project / "repo" / "net").exists()
