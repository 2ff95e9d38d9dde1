"""A user's nanoGPT-style model (tests/models/text_models/nanogpt), trained in torch, generating through
models.causal_lm: greedy output equal to the same greedy loop in torch, with and without the cache."""

from __future__ import annotations

import copy
import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
from models.causal_lm import CausalLMGenerator, causal_lm_servable
from models.code import CodeSpec, ModelCodeError
from models.errors import ArchitectureError, InputError
from models.text_tokenizer import load_folder_tokenizer

torch = pytest.importorskip("torch")
tokenizers = pytest.importorskip("tokenizers")

MODEL_FILE = Path(__file__).parent / "text_models" / "nanogpt" / "model.py"
INIT = {"block_size": 64, "vocab_size": 384, "n_layer": 2, "n_head": 2, "n_embd": 32}
CORPUS = (
    "The cat sat on the mat. The dog sat on the log. A bird sang in the tree. "
    "The cat saw the bird and the dog saw the cat. Every morning the sun rose over the hill, "
    "and every evening it set behind the old mill. The miller baked bread; the baker milled flour. "
) * 4
PROMPTS = ["The cat", "Every morning the", "A bird sang", "The miller baked"]
STEPS = 24
Trained = tuple[Path, Any]  # the model's folder and the torch model


def _torch_code() -> Any:
    """The fixture's model.py imported with real torch, as its author ran it."""
    name = "nanogpt_fixture_model"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, MODEL_FILE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _train_tokenizer() -> Any:
    tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE())
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=320, special_tokens=["<|endoftext|>"],
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([CORPUS], trainer)
    return tokenizer


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A model folder (model.py, tokenizer.json, weights) and the torch model trained 150 steps on CORPUS."""
    folder = tmp_path_factory.mktemp("nanogpt")
    shutil.copy(MODEL_FILE, folder / "model.py")
    tokenizer = _train_tokenizer()
    tokenizer.save(str(folder / "tokenizer.json"))
    ids = torch.tensor(tokenizer.encode(CORPUS).ids, dtype=torch.long)
    torch.manual_seed(0)
    model = _torch_code().GPT(**INIT)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(0)
    for _ in range(150):
        starts = torch.randint(0, len(ids) - 33, (8,), generator=generator)
        x = torch.stack([ids[s:s + 32] for s in starts])
        y = torch.stack([ids[s + 1:s + 33] for s in starts])
        _, loss = model(x, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    np.savez(folder / "weights.npz", **state)
    return folder, model


def _serve(folder: Path, name: str = "GPT", dtype: Any = None, **spec: Any) -> Any:
    """Build, load the weights strictly, move, eval and warm up, as the server's loader does."""
    servable = causal_lm_servable(folder, CodeSpec(f"model.py:{name}", INIT, task="text-generation", **spec))
    servable.module.load_state_dict(mininn.load(folder / "weights.npz"), strict=True)
    servable.module.to("cpu", dtype or mininn.float32).eval()
    with mininn.no_grad():
        servable.predict(servable.example_inputs(1))
    return servable


Run = tuple[list[int], list[np.ndarray]]  # greedy tokens, and the logits before each


def _greedy(generator: CausalLMGenerator, prompt: list[int], steps: int) -> Run:
    """The engine's greedy loop: prefill, then one decode per token."""
    with mininn.no_grad():
        seq = generator.new_sequence()
        logits = generator.prefill(seq, prompt)
        tokens, rows = [], [logits]
        for _ in range(steps):
            tokens.append(int(np.argmax(logits)))
            logits = generator.decode([seq], [tokens[-1]])[0]
            rows.append(logits)
        generator.release(seq)
    return tokens, rows


def _torch_greedy(model: Any, prompt: list[int], steps: int) -> Run:
    """nanoGPT's greedy loop in torch: the whole sequence each step, argmax of the last logits."""
    ids = torch.tensor([prompt], dtype=torch.long)
    tokens, rows = [], []
    with torch.no_grad():
        for _ in range(steps + 1):
            last = model(ids)[0][0, -1]
            rows.append(last.numpy())
            if len(tokens) == steps:
                break
            tokens.append(int(last.argmax()))
            ids = torch.cat([ids, torch.tensor([[tokens[-1]]])], dim=1)
    return tokens, rows


@pytest.mark.parametrize("name", ["GPT", "CachedGPT", "LastTokenGPT"])
def test_greedy_generation_equals_the_torch_greedy_loop(trained: Trained, name: str) -> None:
    folder, model = trained
    generator = _serve(folder, name).generator
    assert generator.uses_cache == (name == "CachedGPT")
    tokenizer = load_folder_tokenizer(folder)
    for text in PROMPTS:
        prompt = tokenizer.encode(text)
        expected, expected_rows = _torch_greedy(model, prompt, STEPS)
        margins = [np.sort(r)[-1] - np.sort(r)[-2] for r in expected_rows]
        assert min(margins) > 1e-4, "a near tie: float32 rounding may pick either token"
        tokens, rows = _greedy(generator, prompt, STEPS)
        assert tokens == expected, text
        np.testing.assert_allclose(np.stack(rows), np.stack(expected_rows), rtol=1e-4, atol=1e-4)
        assert generator.tokenizer.decode(tokens) == tokenizer.decode(expected)


@pytest.mark.parametrize("name", ["GPT", "CachedGPT"])
def test_in_float64_every_steps_logits_equal_torch_to_1e_10(trained: Trained, name: str) -> None:
    folder, model = trained
    servable = _serve(folder, name, dtype=mininn.float64)
    assert servable.outputs[0].datatype == "FP64"
    prompt = servable.generator.tokenizer.encode(PROMPTS[0])
    tokens, rows = _greedy(servable.generator, prompt, STEPS)
    expected, expected_rows = _torch_greedy(copy.deepcopy(model).double(), prompt, STEPS)
    assert tokens == expected
    assert rows[0].dtype == np.float64
    np.testing.assert_allclose(np.stack(rows), np.stack(expected_rows), rtol=0, atol=1e-10)


def test_what_a_sequence_gets_does_not_depend_on_its_decode_neighbours(trained: Trained) -> None:
    folder, _ = trained
    generator = _serve(folder).generator
    tokenizer = generator.tokenizer
    alone = [_greedy(generator, tokenizer.encode(text), 6)[1] for text in PROMPTS[:2]]
    with mininn.no_grad():
        seqs = [generator.new_sequence() for _ in PROMPTS[:2]]
        last = [generator.prefill(s, tokenizer.encode(t)) for s, t in zip(seqs, PROMPTS[:2])]
        together: list[list[np.ndarray]] = [[row] for row in last]
        for _ in range(6):
            nxt = [int(np.argmax(row[-1])) for row in together]
            for rows, logits in zip(together, generator.decode(seqs, nxt)):
                rows.append(logits)
    for mine, theirs in zip(together, alone):
        np.testing.assert_array_equal(np.stack(mine), np.stack(theirs))


def test_infer_serves_one_forward_of_input_ids_to_logits(trained: Trained) -> None:
    folder, model = trained
    servable = _serve(folder)
    ids = np.array([[5, 9, 17, 3], [1, 2, 3, 4]], dtype=np.int64)
    with mininn.no_grad():
        out = servable.predict({"input_ids": ids})
    with torch.no_grad():
        expected = model(torch.from_numpy(ids))[0].numpy()
    assert [(s.name, s.datatype, s.shape) for s in servable.outputs] == [("logits", "FP32", (-1, -1, 384))]
    assert [(s.name, s.datatype, s.shape) for s in servable.inputs] == [("input_ids", "INT64", (-1, -1))]
    assert out["logits"].dtype == np.float32
    np.testing.assert_allclose(out["logits"], expected, rtol=1e-4, atol=1e-5)


def test_context_length_defaults_to_the_models_block_size(trained: Trained) -> None:
    folder, _ = trained
    assert _serve(folder).generator.context_length == 64
    assert _serve(folder, context_length=20).generator.context_length == 20


def test_without_tokenizer_json_the_model_takes_token_ids_only(trained: Trained, tmp_path: Path) -> None:
    folder, _ = trained
    for name in ("model.py", "weights.npz"):
        shutil.copy(folder / name, tmp_path / name)
    generator = _serve(tmp_path).generator
    assert generator.tokenizer is None
    assert generator.vocab_size == 384
    assert len(_greedy(generator, [1, 2, 3], 3)[0]) == 3


# -- bad paths --------------------------------------------------------------------------------------------


def test_a_model_without_context_length_needs_one_in_model_json(trained: Trained, tmp_path: Path) -> None:
    folder, _ = trained
    (tmp_path / "model.py").write_text(
        "import torch.nn as nn\n\nclass Bigram(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.table = nn.Embedding(10, 10)\n\n"
        "    def forward(self, idx):\n        return self.table(idx)\n"
    )
    with pytest.raises(ArchitectureError, match="needs 'context_length' in model.json"):
        causal_lm_servable(tmp_path, CodeSpec("model.py:Bigram", task="text-generation"))
    spec = CodeSpec("model.py:Bigram", task="text-generation", context_length=8)
    servable = causal_lm_servable(tmp_path, spec)
    assert servable.generator.context_length == 8


def test_a_context_length_beyond_the_models_block_size_is_refused(trained: Trained) -> None:
    folder, _ = trained
    with pytest.raises(ArchitectureError, match="'context_length' 65 is more than the model's own 64"):
        causal_lm_servable(folder, CodeSpec("model.py:GPT", INIT, task="text-generation", context_length=65))


def test_a_forward_of_the_wrong_shape_is_refused_at_warm_up(trained: Trained) -> None:
    folder, _ = trained
    words = r"forward gave logits float32 \[1, 384\] for input_ids \[1, 2\].*\[batch, tokens, vocab\]"
    with pytest.raises(ModelCodeError, match=words):
        _serve(folder, "BrokenGPT")


def test_inputs_and_outputs_do_not_go_with_text_generation(trained: Trained) -> None:
    folder, _ = trained
    spec = CodeSpec("model.py:GPT", INIT, inputs=[{"name": "idx", "datatype": "INT64", "shape": [-1, -1]}],
                    task="text-generation")
    with pytest.raises(ArchitectureError, match="leave 'inputs' out"):
        causal_lm_servable(folder, spec)


def test_an_unknown_task_is_refused(trained: Trained) -> None:
    folder, _ = trained
    with pytest.raises(ArchitectureError, match="unknown task 'chat'"):
        causal_lm_servable(folder, CodeSpec("model.py:GPT", INIT, task="chat"))


def test_a_malformed_tokenizer_json_is_refused_at_load(trained: Trained, tmp_path: Path) -> None:
    folder, _ = trained
    shutil.copy(folder / "model.py", tmp_path / "model.py")
    (tmp_path / "tokenizer.json").write_text(json.dumps({"model": {"type": "BPE", "vocab": 3}}))
    with pytest.raises(ArchitectureError, match="cannot read tokenizer.json"):
        causal_lm_servable(tmp_path, CodeSpec("model.py:GPT", INIT, task="text-generation"))


def test_a_tokenizer_larger_than_the_models_vocabulary_is_refused(trained: Trained, tmp_path: Path) -> None:
    folder, _ = trained
    for name in ("model.py", "weights.npz", "tokenizer.json"):
        shutil.copy(folder / name, tmp_path / name)
    small = {**INIT, "vocab_size": 300}
    servable = causal_lm_servable(tmp_path, CodeSpec("model.py:GPT", small, task="text-generation"))
    with pytest.raises(ModelCodeError, match="tokenizer.json has 320 tokens but the model gives 300 logits"):
        with mininn.no_grad():
            servable.predict(servable.example_inputs(1))


@pytest.mark.parametrize(
    ("ids", "words"),
    [
        ([], "at least one token"),
        ([1, 500], "token id 500 is outside the vocabulary [0, 384)"),
        ([-1], "token id -1 is outside"),
        (list(range(65)), "65 tokens do not fit this model's context length of 64"),
    ],
)
def test_bad_prompts_raise_input_error_and_leave_the_sequence_empty(
    trained: Trained, ids: list[int], words: str
) -> None:
    folder, _ = trained
    generator = _serve(folder).generator
    seq = generator.new_sequence()
    with pytest.raises(InputError) as caught:
        generator.prefill(seq, ids)
    assert words in str(caught.value)
    assert seq.tokens == []


def test_decoding_past_the_context_length_is_refused(trained: Trained) -> None:
    folder, _ = trained
    generator = _serve(folder, context_length=4).generator
    seq = generator.new_sequence()
    with mininn.no_grad():
        generator.prefill(seq, [1, 2, 3, 4])
        with pytest.raises(InputError, match="5 tokens do not fit this model's context length of 4"):
            generator.decode([seq], [5])


def test_infer_refuses_ids_outside_the_vocabulary(trained: Trained) -> None:
    folder, _ = trained
    servable = _serve(folder)
    with pytest.raises(InputError, match="token id 384, outside the vocabulary"):
        servable.predict({"input_ids": np.array([[1, 384]], dtype=np.int64)})
