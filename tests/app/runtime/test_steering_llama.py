"""Steering SmolLM2 while it generates, against transformers' LlamaForCausalLM with forward hooks.

One module-scoped server-side stack (repository with the ``smollm2`` demo, model manager, data
plane, generation engine) and one transformers model on the same GGUF tensors, float32. The
reference runs greedy decoding with a KV cache and a forward hook on ``model.layers.12`` that
makes the same edit.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from app.errors import PayloadTooLargeError, ServiceError, UnprocessableError
from app.runtime.dataplane import DataPlane
from app.runtime.generation import GenerationRequest, GenerationResult, TokenEvent
from app.runtime.manager import ModelManager
from app.runtime.metrics import Metrics
from app.runtime.sampling import SamplingParams
from app.settings import Settings
from app.store.repository import ModelRepository
from models.demos import seed_repository

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("gguf")

from transformers.initialization import no_init_weights  # noqa: E402

pytestmark = pytest.mark.slow

LAYER = "model.layers.12"
POSITIVE = ["I love this, it is wonderful!", "What a happy, joyful day.", "This is the best thing ever."]
NEGATIVE = ["I hate this, it is awful.", "What a sad, miserable day.", "This is the worst thing ever."]
PROMPT = "Tell me about your weekend."
TOKENS = 24


@pytest.fixture(scope="module")
def plane(gguf_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DataPlane]:
    root = tmp_path_factory.mktemp("repo")
    seed_repository(root, names=["smollm2"])
    executor = ThreadPoolExecutor(1)
    settings = Settings(model_repository=root, max_sequences=8, max_activation_elements=200_000)
    manager = ModelManager(ModelRepository(root), settings, executor, Metrics())
    asyncio.run(manager.load_all())
    yield DataPlane(manager, settings)
    manager.close()
    executor.shutdown()


@pytest.fixture(scope="module")
def reference(plane: DataPlane) -> Any:
    """transformers' model on the tensors the server read from the GGUF (read once; the GGUF
    reader itself is checked against transformers in tests/models/test_gguf.py)."""
    module = plane.manager.version("smollm2").generator.module
    config = transformers.LlamaConfig(**dataclasses.asdict(module.config))
    with no_init_weights():
        model = transformers.LlamaForCausalLM(config).eval()
    state = {k: torch.from_numpy(np.array(v.detach().cpu().numpy())) for k, v in module.state_dict().items()}
    model.load_state_dict(state, strict=True)
    return model


@pytest.fixture(scope="module")
def vector(plane: DataPlane) -> np.ndarray:
    body = {"positive": POSITIVE, "negative": NEGATIVE, "modules": [LAYER], "chat": True}
    result = asyncio.run(plane.steering.compute("smollm2", "joy", body))
    assert result["modules"] == [LAYER] and result["prompts"] == {"positive": 3, "negative": 3}
    return plane.steering.store.read("smollm2", "joy")[LAYER]


def chat_ids(plane: DataPlane, text: str) -> list[int]:
    return list(plane.encode_chat(plane.manager.version("smollm2"), [{"role": "user", "content": text}]))


def hidden(output: Any) -> Any:
    return output[0] if isinstance(output, tuple) else output


def with_hidden(output: Any, value: Any) -> Any:
    return (value, *output[1:]) if isinstance(output, tuple) else value


def hf_greedy(
    model: Any, ids: list[int], tokens: int, edit: Callable[[Any, int], Any] | None = None
) -> tuple[list[int], list[np.ndarray]]:
    """transformers' greedy tokens with ``edit(hidden, call)`` hooked on LAYER; LAYER's newest
    position after the edit at every step."""
    seen: list[np.ndarray] = []
    calls = [0]

    def hook(module: Any, args: Any, output: Any) -> Any:
        h = hidden(output)
        if edit is not None:
            h = edit(h, calls[0])
        calls[0] += 1
        seen.append(h[0, -1].detach().numpy().copy())
        return with_hidden(output, h)

    handle = model.model.layers[12].register_forward_hook(hook)
    try:
        out_ids, past, step_input = [], None, torch.tensor([ids])
        with torch.no_grad():
            for _ in range(tokens):
                out = model(input_ids=step_input, cache=past, use_cache=True)
                past = out.past_key_values
                token = int(out.logits[0, -1].argmax())
                out_ids.append(token)
                step_input = torch.tensor([[token]])
    finally:
        handle.remove()
    return out_ids, seen


async def generate(plane: DataPlane, ids: list[int], fields: dict[str, Any], tokens: int = TOKENS) -> tuple[
    list[TokenEvent], GenerationResult
]:
    model = await plane.generation_model("smollm2")
    request = GenerationRequest(
        tuple(ids),
        SamplingParams(max_tokens=tokens, temperature=0.0, ignore_eos=True),
        **plane.steering.request_fields(model, fields),
    )
    items = [item async for item in await plane.generate(model, request)]
    assert isinstance(items[-1], GenerationResult)
    return items[:-1], items[-1]


def run_ids(plane: DataPlane, ids: list[int], fields: dict[str, Any], tokens: int = TOKENS) -> list[int]:
    return list(asyncio.run(generate(plane, ids, fields, tokens))[1].token_ids)


def test_computed_vector_is_transformers_mean_difference_at_the_last_prompt_token(
    plane: DataPlane, reference: Any, vector: np.ndarray
) -> None:
    def last(text: str) -> np.ndarray:
        with torch.no_grad():
            out = reference(input_ids=torch.tensor([chat_ids(plane, text)]), output_hidden_states=True)
        return out.hidden_states[13][0, -1].numpy()  # hidden_states[i + 1]: the output of layers[i]

    expected = np.mean([last(t) for t in POSITIVE], axis=0) - np.mean([last(t) for t in NEGATIVE], axis=0)
    assert vector.shape == (576,) and vector.dtype == np.float32
    assert np.linalg.norm(vector - expected) / np.linalg.norm(expected) < 1e-4


def reference_edit(mode: str, vector: np.ndarray) -> Callable[[Any, int], Any]:
    """The hook's edit: add 6 x vector to every position (every step, or steps after the first),
    or to the newest position of each forward."""
    added = 6.0 * torch.from_numpy(vector)

    def edit(h: Any, call: int) -> Any:
        if mode == "generated" and call == 0:
            return h
        if mode == "last":
            h = h.clone()
            h[:, -1] = h[:, -1] + added
            return h
        return h + added

    return edit


@pytest.mark.parametrize(
    ("mode", "selectors"),
    [("all", {}), ("generated", {"steps": "generated"}), ("last", {"positions": "last"})],
)
def test_steered_greedy_tokens_equal_transformers_with_a_hook(
    plane: DataPlane, reference: Any, vector: np.ndarray, plain: list[int], mode: str,
    selectors: dict[str, Any],
) -> None:
    ids = chat_ids(plane, PROMPT)
    expected, _ = hf_greedy(reference, ids, TOKENS, reference_edit(mode, vector))
    steering = [{"name": "joy", "scale": 6.0, "modules": [LAYER], **selectors}]
    assert run_ids(plane, ids, {"steering": steering}) == expected
    assert expected != plain


@pytest.fixture(scope="module")
def plain(plane: DataPlane, reference: Any) -> list[int]:
    """Unsteered greedy tokens, transformers' and ours equal."""
    ids = chat_ids(plane, PROMPT)
    expected, _ = hf_greedy(reference, ids, TOKENS)
    assert run_ids(plane, ids, {}) == expected
    return expected


def test_per_step_captures_equal_transformers_hook_values(plane: DataPlane, reference: Any) -> None:
    ids = chat_ids(plane, PROMPT)
    tokens = 8
    expected_ids, seen = hf_greedy(reference, ids, tokens)
    events, result = asyncio.run(generate(plane, ids, {"capture": {"modules": [LAYER]}}, tokens))
    assert list(result.token_ids) == expected_ids
    assert len(events) == tokens
    for step, event in enumerate(events):
        assert event.captures is not None
        record = event.captures[LAYER]
        assert record.positions == (len(ids) - 1 + step,)
        got = record.values[0]
        assert np.abs(got - seen[step]).max() <= 1e-4 * max(1.0, np.abs(seen[step]).max())


def test_concurrent_streams_each_equal_their_own_single_request_reference(
    plane: DataPlane, vector: np.ndarray
) -> None:
    prompts = [chat_ids(plane, text) for text in ("Hi!", "Name a color.", "Count to five.", "Say hello.")]
    asyncio.run(plane.steering.upload("smollm2", "noise", _safetensors({
        LAYER: np.random.default_rng(0).standard_normal(576).astype(np.float32)
    })))
    cases = []
    for i, ids in enumerate(prompts):
        cases.append((ids, {}))
        name, scale = ("joy", 4.0 + i) if i % 2 else ("noise", 3.0 * (i + 1))
        cases.append((ids, {"steering": [{"name": name, "scale": scale}]}))
    tokens = 6
    alone = [run_ids(plane, ids, fields, tokens) for ids, fields in cases]

    async def together() -> list[list[int]]:
        results = await asyncio.gather(*(generate(plane, ids, fields, tokens) for ids, fields in cases))
        return [list(result.token_ids) for _, result in results]

    assert asyncio.run(together()) == alone
    assert alone[0] != alone[1] or alone[2] != alone[3]


def _safetensors(directions: dict[str, np.ndarray]) -> bytes:
    from safetensors.numpy import save

    return save(directions)


def test_bad_requests_are_clear_and_change_nothing(plane: DataPlane, vector: np.ndarray) -> None:
    model = plane.manager.version("smollm2")
    ids = chat_ids(plane, PROMPT)

    def refused(fields: dict[str, Any], match: str, tokens: int = 4) -> None:
        with pytest.raises(UnprocessableError, match=match):
            asyncio.run(generate(plane, ids, fields, tokens))

    refused({"steering": [{"name": "nope"}]}, "has no steering vector 'nope'")
    refused({"steering": [{"name": "joy", "modules": ["model.layers.3"]}]}, "not a module of steering vector")
    refused({"interventions": [{"module": "model.layerz.1", "op": "zero"}]}, "closest names")
    refused({"interventions": [{"module": LAYER, "op": "add", "value": [1.0, 2.0]}]}, "does not broadcast")
    refused({"steering": [{"name": "joy", "steps": {"start": 2, "stop": 9}}]}, "reaches step 8")
    refused({"steering": [{"name": "joy", "steps": [4]}]}, "reaches step 4")
    refused({"capture": {"modules": [LAYER], "reduce": "mean"}}, "capture.reduce")
    with pytest.raises(PayloadTooLargeError, match="over the limit of 200000"):  # 49152 logits x prompt
        asyncio.run(generate(plane, ids, {"capture": {"modules": ["lm_head"], "positions": "all"}}, 4))
    assert model.engine.running == 0 and model.engine.waiting == 0

    before = plane.steering.list("smollm2")
    stored = plane.steering.store.file_bytes("smollm2", "joy")
    bad_uploads = [
        (_safetensors({LAYER: np.ones(100, dtype=np.float32)}), "has 576 features per token"),
        (_safetensors({"model.layerz.1": np.ones(576, dtype=np.float32)}), "is not a module"),
        (_control_vector({3: 576, 40: 576}), "layer 40, but this model has 30 decoder layers"),
    ]
    for data, match in bad_uploads:
        with pytest.raises(ServiceError, match=match):
            asyncio.run(plane.steering.upload("smollm2", "joy", data))
    for body, match in [
        ({"positive": [], "negative": NEGATIVE, "modules": [LAYER]}, "'positive' must be a non-empty list"),
        ({"positive": POSITIVE, "modules": [LAYER]}, "'negative' must be a non-empty list"),
        ({"positive": POSITIVE, "negative": NEGATIVE, "modules": ["nope"]}, "not a module"),
    ]:
        with pytest.raises(UnprocessableError, match=match):
            asyncio.run(plane.steering.compute("smollm2", "joy", body))
    assert plane.steering.list("smollm2") == before
    assert plane.steering.store.file_bytes("smollm2", "joy") == stored


def test_a_gguf_control_vector_steers_decoder_layer_n(plane: DataPlane, vector: np.ndarray) -> None:
    data = _control_vector({12: vector})
    result = asyncio.run(plane.steering.upload("smollm2", "joy-gguf", data))
    assert result["modules"] == [LAYER]
    np.testing.assert_array_equal(plane.steering.store.read("smollm2", "joy-gguf")[LAYER], vector)


def _control_vector(directions: dict[int, Any]) -> bytes:
    import gguf

    path = Path(__import__("tempfile").mkdtemp()) / "cv.gguf"
    writer = gguf.GGUFWriter(str(path), "controlvector")
    writer.add_string("controlvector.model_hint", "llama")
    writer.add_uint32("controlvector.layer_count", len(directions))
    for layer, value in directions.items():
        array = np.ones(value, dtype=np.float32) if isinstance(value, int) else np.asarray(value, np.float32)
        writer.add_tensor(f"direction.{layer}", array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()
