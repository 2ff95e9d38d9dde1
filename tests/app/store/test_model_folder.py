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


# -- which repository ---------------------------------------------------------------------------------


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder that is not the server's, as the working directory; MININN_MODEL_REPOSITORY unset."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.delenv("MININN_MODEL_REPOSITORY", raising=False)
    return folder


def without_repository(args: list[str]) -> list[str]:
    index = args.index("--repository")
    return args[:index] + args[index + 2:]


def test_outside_the_servers_folder_nothing_is_created_and_the_path_is_named(
    project: Path, elsewhere: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(without_repository(add(project))) == 1
    error = capsys.readouterr().err
    assert f"no model repository at {elsewhere / 'model_repository'}" in error
    assert "MININN_MODEL_REPOSITORY" in error and "--repository DIR" in error
    assert os.listdir(elsewhere) == []


def test_check_outside_the_servers_folder_names_the_path(
    project: Path, elsewhere: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["net", "--check"]) == 1
    assert f"no model repository at {elsewhere / 'model_repository'}" in capsys.readouterr().err
    assert main(["net", "--check", "--repository", "new"]) == 1  # --check never creates one
    assert f"no model repository at {elsewhere / 'new'} (--repository)" in capsys.readouterr().err
    assert os.listdir(elsewhere) == []


def test_the_servers_repository_from_the_environment_is_used_and_printed_absolute(
    project: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    server = elsewhere.parent / "server"
    (server / "model_repository").mkdir(parents=True)
    monkeypatch.chdir(server)
    monkeypatch.setenv("MININN_MODEL_REPOSITORY", "model_repository")  # relative, as the server reads it
    assert main(without_repository(add(project))) == 0
    out = capsys.readouterr().out
    assert f"wrote {server / 'model_repository' / 'net'}: model.json" in out
    assert f"MININN_MODEL_REPOSITORY is {server / 'model_repository'} " in out
    assert main(["net", "--check"]) == 0
    checked = capsys.readouterr().out
    assert f"model 'net' in {server / 'model_repository' / 'net'} (version 1) loads" in checked


def test_check_of_a_model_that_is_not_there_names_the_repository_and_what_it_holds(
    project: Path, elsewhere: Path, capsys: pytest.CaptureFixture
) -> None:
    repository = elsewhere / "model_repository"
    repository.mkdir()
    assert main(["net", "--check"]) == 1
    assert f"no model 'net' in the model repository {repository} (it is empty)" in capsys.readouterr().err
    assert main(add(project)[:-2] + ["--repository", str(repository)]) == 0
    capsys.readouterr()
    assert main(["other", "--check"]) == 1
    assert f"no model 'other' in the model repository {repository} (it holds net)" in capsys.readouterr().err


def test_a_repository_path_that_is_a_file_is_refused(project: Path, elsewhere: Path, capsys) -> None:
    (elsewhere / "repo").write_text("")
    assert main(add(project)[:-2] + ["--repository", "repo"]) == 1
    assert f"the model repository {elsewhere / 'repo'} is a file, not a folder" in capsys.readouterr().err


def _spotter(tmp_path: Path) -> list[str]:
    from _spotter_support import SPOTTER_CODE, spotter_weights
    from safetensors.numpy import save_file

    (tmp_path / "spotter.py").write_text(SPOTTER_CODE)
    save_file(spotter_weights(), str(tmp_path / "spotter.safetensors"))
    return ["kws", "--code", str(tmp_path / "spotter.py") + ":KeywordSpotter", "--weights",
            str(tmp_path / "spotter.safetensors"), "--input", "mfcc:FP32:-1,40,-1",
            "--repository", str(tmp_path / "repo")]


def test_a_warm_up_at_size_1_that_fails_names_the_shape_and_the_flag(tmp_path: Path, capsys) -> None:
    assert main(_spotter(tmp_path)) == 1
    error = capsys.readouterr().err
    assert "warm-up forward on the example inputs (mfcc [1, 40, 1]): " in error
    assert "max_pool1d() Invalid computed output size: 0" in error
    assert "any-size dimensions (-1) warm up at size 1" in error
    assert "--warmup-shape mfcc:40,100" in error
    assert not (tmp_path / "repo").exists() or os.listdir(tmp_path / "repo") == []


def test_warmup_shape_gives_the_warm_up_its_size_and_goes_into_model_json(tmp_path: Path, capsys) -> None:
    assert main([*_spotter(tmp_path), "--warmup-shape", "mfcc:40,100"]) == 0
    document = json.loads((tmp_path / "repo" / "kws" / "model.json").read_text())
    assert document["model_warmup"] == [
        {"name": "--warmup-shape", "batch_size": 1, "inputs": {"mfcc": {"dims": [40, 100]}}}
    ]
    assert "output output: FP32 [-1, 4]" in capsys.readouterr().out
    assert main(["kws", "--check", "--repository", str(tmp_path / "repo")]) == 0


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("mfcc:40,zero", "--warmup-shape 'mfcc:40,zero': expected NAME:DIMS"),
        ("mfcc:1,40,100", "mfcc.dims' is [1, 40, 100]; input 'mfcc' has dims [40, -1] (without the batch"),
        ("audio:40,100", "model_warmup[0].inputs' names 'audio'; the model's inputs are mfcc"),
    ],
)
def test_a_bad_warmup_shape_says_what_to_write(tmp_path: Path, capsys, flag: str, message: str) -> None:
    assert main([*_spotter(tmp_path), "--warmup-shape", flag]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "repo").exists() or os.listdir(tmp_path / "repo") == []
