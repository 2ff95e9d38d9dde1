"""``llama`` against transformers' LlamaForCausalLM: SmolLM2's GGUF and a small random config.

float32 runs compare with transformers as it is. float64 runs compare with transformers whose
two float32 islands (``LlamaRMSNorm`` and the rotary tables, which it computes in float32 even
for a float64 model) are computed in float64, as this model does for float64: with those
islands in float32 both sides round them differently (torch's and NumPy's float32 reductions
and ``cos`` differ by an ulp), which shows as 1e-5 in the logits and hides the arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mininn
import models
from models.llama import LlamaForCausalLM
from models.llama_generation import LlamaGenerator

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")
modeling_llama = pytest.importorskip("transformers.models.llama.modeling_llama")

from models.gguf import read_gguf  # noqa: E402 - after the gguf skip

CHATS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain what a neural network is in one sentence.",
    "List three prime numbers.",
    "How do I reverse a list in Python?",
    "Translate 'good morning' into Spanish.",
    "Why is the sky blue?",
    "Give me a name for a friendly robot.",
]
COMPLETIONS = ["The history of the printing press", "def fibonacci(n):\n    "]
# Greedy steps compared per prompt: the completions go 48 tokens past their prompts (the long
# case: cache positions far past the prompt); each chat 16, past a prompt that its template
# already makes 30 to 40 tokens long. Every step of every prompt is compared, teacher-forced.
COMPLETION_TOKENS = 48
CHAT_TOKENS = 16


@pytest.fixture(scope="module")
def smol(gguf_path: Path) -> Any:
    return read_gguf(gguf_path)


@pytest.fixture(scope="module")
def ours(smol: Any) -> LlamaForCausalLM:
    module = models.create("llama", **smol.config)
    module.load_state_dict(smol.tensors, strict=True)
    return module.eval()


@pytest.fixture(scope="module")
def reference(smol: Any) -> Any:
    """transformers' LlamaForCausalLM on the same dequantized tensors (float32)."""
    config = transformers.LlamaConfig(**smol.config)
    model = transformers.LlamaForCausalLM(config).eval()
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in smol.tensors.items()}, strict=True)
    return model


@pytest.fixture(scope="module")
def tokenizer(gguf_path: Path) -> Any:
    return transformers.AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)


@pytest.fixture
def float64_islands(monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers' RMSNorm and rotary tables in the model's dtype (see the module docstring)."""

    def norm(self: Any, hidden: Any) -> Any:
        variance = hidden.pow(2).mean(-1, keepdim=True)
        return self.weight * (hidden * torch.rsqrt(variance + self.variance_epsilon))

    def rotary(self: Any, x: Any, position_ids: Any) -> Any:
        freqs = (self.inv_freq.double()[None, :, None] @ position_ids[:, None, :].double()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        scale = self.attention_scaling
        return (emb.cos() * scale).to(x.dtype), (emb.sin() * scale).to(x.dtype)

    monkeypatch.setattr(modeling_llama.LlamaRMSNorm, "forward", norm)
    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", rotary)


def _ids(encoded: Any) -> list[int]:
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


def _chat_ids(tokenizer: Any, text: str) -> list[int]:
    messages = [{"role": "user", "content": text}]
    return _ids(tokenizer.apply_chat_template(messages, add_generation_prompt=True))


# -- weights and config ------------------------------------------------------------------------


@pytest.mark.slow
def test_gguf_state_dict_and_config_equal_transformers_from_pretrained(
    gguf_path: Path, ours: Any, smol: Any
) -> None:
    hf = transformers.AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32
    )
    expected = hf.state_dict()
    got = ours.state_dict()
    assert list(got) == list(expected)
    for key, value in expected.items():
        assert np.array_equal(got[key].numpy(), value.numpy()), key
    for key, value in smol.config.items():
        if key != "rope_theta":  # transformers 5 keeps it in rope_parameters
            assert getattr(hf.config, key) == value, key
    assert hf.config.rope_parameters["rope_theta"] == smol.config["rope_theta"]


def test_gguf_config_is_smollm2s(smol: Any):
    assert smol.config["num_hidden_layers"] == 30 and smol.config["num_key_value_heads"] == 3
    assert smol.config["tie_word_embeddings"] is True
    assert smol.tensor_types["model.layers.0.self_attn.q_proj.weight"] == "Q4_1"
    assert smol.tensors["lm_head.weight"] is smol.tensors["model.embed_tokens.weight"]


# -- logits ---------------------------------------------------------------------------------------


def test_float64_logits_per_step_within_1e6_of_transformers(ours: Any, reference: Any, tokenizer: Any,
                                                            float64_islands: None):
    ids = _chat_ids(tokenizer, CHATS[0])
    model64 = models.create("llama", **ours.config.__dict__)
    model64.load_state_dict(ours.state_dict())
    model64.double().eval()
    hf64 = reference.double()
    try:
        generator = LlamaGenerator(model64)
        seq = generator.new_sequence()
        logits = generator.prefill(seq, ids)
        for step in range(3):
            with torch.no_grad():
                expected = hf64(torch.tensor([ids])).logits[0, -1].numpy()
            assert logits.dtype == np.float64
            assert np.abs(logits - expected).max() < 1e-6, step
            token = int(expected.argmax())
            ids.append(token)
            logits = generator.decode([seq], [token])[0]
    finally:
        reference.float()


def _reference_greedy(reference: Any, ids: list[int], steps: int) -> tuple[list[int], list[np.ndarray]]:
    """transformers' greedy tokens and the logits each was chosen from, for ``steps`` steps
    (through end-of-sequence tokens: every step is compared)."""
    cache = transformers.DynamicCache()
    tokens, logits = [], []
    with torch.no_grad():
        out = reference(torch.tensor([ids]), cache=cache, use_cache=True)
        for _ in range(steps):
            logits.append(out.logits[0, -1].numpy().copy())
            tokens.append(int(logits[-1].argmax()))
            out = reference(torch.tensor([[tokens[-1]]]), cache=cache, use_cache=True)
    return tokens, logits


def _check_greedy(ours: Any, reference: Any, prompts: dict[str, tuple[list[int], int]]) -> int:
    """Teacher-forced greedy comparison of every prompt (its ids, its steps); the near-tie flips seen.

    Our rows decode together in one batch (batch-invariant: each row's logits are the ones it
    gets alone), which takes half the time of one row after another; a row leaves the batch
    after its last step.
    """
    expected = {label: _reference_greedy(reference, ids, steps) for label, (ids, steps) in prompts.items()}
    generator = LlamaGenerator(ours)
    seqs = {label: generator.new_sequence() for label in prompts}
    logits = {label: generator.prefill(seqs[label], ids) for label, (ids, _) in prompts.items()}
    flips = 0
    for step in range(max(steps for _, steps in prompts.values())):
        running = [label for label, (_, steps) in prompts.items() if step < steps]
        for label in running:
            tokens, wanted = expected[label]
            want, token = wanted[step], tokens[step]
            # float32 rounding of two BLAS libraries: logits agree to it at every step
            assert np.abs(logits[label] - want).max() < 2e-3, (label, step)
            if int(logits[label].argmax()) != token:
                top2 = np.sort(want)[-2:]
                assert top2[1] - top2[0] < 1e-4, (label, step, "a flip that is not a near-tie")
                flips += 1  # continue from the reference's token (teacher forcing)
        chosen = [expected[label][0][step] for label in running]
        rows = generator.decode([seqs[label] for label in running], chosen)
        logits = dict(zip(running, rows))
    return flips


@pytest.mark.slow
def test_greedy_16_tokens_for_8_chats_and_48_for_2_completions_equal_transformers(ours: Any, reference: Any,
                                                                                 tokenizer: Any):
    prompts = {text: (_chat_ids(tokenizer, text), CHAT_TOKENS) for text in CHATS}
    prompts.update({text: (_ids(tokenizer(text)), COMPLETION_TOKENS) for text in COMPLETIONS})
    assert _check_greedy(ours, reference, prompts) <= 2


def test_decode_of_a_row_equals_it_alone_in_a_batch_of_other_lengths(ours: Any):
    generator = LlamaGenerator(ours)
    prompts = [[1, 2, 3, 4, 5, 6, 7], [9, 8], [100, 200, 300, 400]]
    alone, batched = [], []
    for prompt in prompts:
        seq = generator.new_sequence()
        generator.prefill(seq, prompt)
        alone.append(generator.decode([seq], [42])[0])
    seqs = [generator.new_sequence() for _ in prompts]
    for seq, prompt in zip(seqs, prompts):
        generator.prefill(seq, prompt)
    batched = generator.decode(seqs, [42, 42, 42])
    for row, logits in enumerate(alone):
        assert np.array_equal(batched[row], logits), row
    assert [seq.length for seq in seqs] == [8, 3, 5]


def test_layer_hooks_see_transformers_hidden_states(ours: Any, reference: Any):
    ids = [[1, 504, 3458, 282, 4744, 314]]
    with torch.no_grad():
        expected = reference(torch.tensor(ids), output_hidden_states=True).hidden_states
    seen: dict[int, np.ndarray] = {}
    handles = [ours.model.layers[i].register_forward_hook(
        lambda module, args, output, i=i: seen.__setitem__(i, output.numpy())) for i in (0, 14)]
    try:
        with mininn.no_grad():
            ours(mininn.tensor(ids))
    finally:
        for handle in handles:
            handle.remove()
    for i in (0, 14):
        np.testing.assert_allclose(seen[i], expected[i + 1].numpy(), atol=2e-4, rtol=1e-4)


# -- a small random config through the Hugging Face safetensors path -----------------------------

RANDOM_CONFIG = dict(
    vocab_size=97, hidden_size=64, intermediate_size=80, num_hidden_layers=3, num_attention_heads=8,
    num_key_value_heads=2, max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=500000.0,
    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 32},
    tie_word_embeddings=False,
)


@pytest.fixture(scope="module")
def random_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Any]]:
    from safetensors.torch import save_file

    torch.manual_seed(0)
    hf = transformers.LlamaForCausalLM(transformers.LlamaConfig(**RANDOM_CONFIG)).eval()
    folder = tmp_path_factory.mktemp("random_llama")
    save_file({k: v.contiguous() for k, v in hf.state_dict().items()}, str(folder / "model.safetensors"))
    hf.config.save_pretrained(folder)
    config = (folder / "config.json").read_text()
    import json

    module = models.create("llama", **json.loads(config))  # config.json as it is
    module.load_state_dict(mininn.load(folder / "model.safetensors"), strict=True)
    yield hf, module.eval()


def test_random_llama3_gqa_untied_float32_matches_transformers(random_pair: tuple[Any, Any]):
    hf, ours = random_pair
    head, embed = ours.lm_head.weight.detach().numpy(), ours.model.embed_tokens.weight.detach().numpy()
    assert not np.array_equal(head, embed)
    ids = np.random.default_rng(1).integers(0, 97, (2, 40))
    with torch.no_grad():
        expected = hf(torch.tensor(ids)).logits.numpy()
    with mininn.no_grad():
        got = ours(mininn.tensor(ids)).numpy()
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)


def test_random_llama3_float64_prefill_and_decode_match_transformers(random_pair: tuple[Any, Any],
                                                                     float64_islands: None):
    hf, ours = random_pair
    hf64 = hf.double()
    ours64 = models.create("llama", **ours.config.__dict__)
    ours64.load_state_dict(ours.state_dict())
    ours64.double().eval()
    try:
        ids = np.random.default_rng(2).integers(0, 97, 60)  # past original_max_position_embeddings
        with torch.no_grad():
            expected = hf64(torch.tensor(ids[None])).logits[0].numpy()
        generator = LlamaGenerator(ours64)
        seq = generator.new_sequence()
        got = [generator.prefill(seq, ids[:20].tolist())]
        got += [generator.decode([seq], [int(t)])[0] for t in ids[20:]]
        np.testing.assert_allclose(np.stack(got), expected[19:], atol=1e-10, rtol=0)
    finally:
        hf.float()


def test_tied_checkpoint_without_lm_head_loads(random_pair: tuple[Any, Any]):
    _, ours = random_pair
    tied = models.create("llama", **{**ours.config.__dict__, "tie_word_embeddings": True})
    state = {k: v for k, v in ours.state_dict().items() if k != "lm_head.weight"}
    tied.load_state_dict(state, strict=True)
    assert tied.lm_head.weight is tied.model.embed_tokens.weight


# -- config --------------------------------------------------------------------------------------


def test_transformers_4_rope_scaling_and_5_rope_parameters_give_the_same_config():
    old = {"model_type": "llama", "rope_theta": 500000.0, "rope_scaling": RANDOM_CONFIG["rope_scaling"]}
    parameters = {**RANDOM_CONFIG["rope_scaling"], "rope_theta": 500000.0}
    new = {"model_type": "llama", "rope_parameters": parameters}
    architecture = models.get_architecture("llama")
    a, b = architecture.make_config(old), architecture.make_config(new)
    assert a.rope_theta == b.rope_theta == 500000.0
    assert a.rope_scaling["rope_type"] == b.rope_scaling["rope_type"] == "llama3"
    plain = architecture.make_config({"rope_parameters": {"rope_type": "default", "rope_theta": 1.0}})
    assert plain.rope_scaling is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "other RoPE scalings are not implemented"),
        ({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, "'low_freq_factor'"),
        ({"model_type": "mistral"}, "'llama' (LlamaForCausalLM's module tree)"),
        ({"num_attention_heads": 8, "num_key_value_heads": 3}, "a positive divisor of num_attention_heads=8"),
        ({"hidden_act": "gelu"}, "hidden_act"),
        ({"sliding_window": 4096}, "unknown config key 'sliding_window'"),
    ],
)
def test_bad_config_is_refused_naming_the_key(config: dict, message: str):
    with pytest.raises(models.ArchitectureError) as info:
        models.get_architecture("llama").make_config(config)
    assert message in str(info.value)


def test_generator_refuses_bad_tokens_and_context_overflow(random_pair: tuple[Any, Any]):
    _, ours = random_pair
    generator = LlamaGenerator(ours, context_length=8)
    seq = generator.new_sequence()
    with pytest.raises(models.InputError, match="outside the vocabulary"):
        generator.prefill(seq, [1, 97])
    with pytest.raises(models.InputError, match="no tokens"):
        generator.prefill(seq, [])
    with pytest.raises(models.InputError, match="over the context length of 8"):
        generator.prefill(seq, list(range(9)))
    assert seq.length == 0  # nothing was cached
    generator.prefill(seq, list(range(7)))
    generator.decode([seq], [3])
    with pytest.raises(models.InputError, match="9 tokens are over the context length of 8"):
        generator.decode([seq], [3])
    with pytest.raises(models.InputError, match="same sequence twice"):
        generator.decode([seq, seq], [1, 2])
    generator.release(seq)
    assert seq.length == 0 and seq.keys == []


def test_batched_decode_without_batch_invariance_agrees_to_float32_rounding(ours: Any):
    prompts = [[1, 2, 3, 4, 5, 6, 7], [9, 8], [100, 200, 300, 400]]
    results = []
    for invariant in (True, False):
        generator = LlamaGenerator(ours, batch_invariant=invariant)
        seqs = [generator.new_sequence() for _ in prompts]
        for seq, prompt in zip(seqs, prompts):
            generator.prefill(seq, prompt)
        results.append(generator.decode(seqs, [42, 42, 42]))
    np.testing.assert_allclose(results[1], results[0], atol=1e-3, rtol=0)
    assert (results[1].argmax(axis=1) == results[0].argmax(axis=1)).all()
