"""A user's causal language model (``"task": "text-generation"``): serve its ``forward`` and generate with it.

The model's file needs no change: ``forward(input_ids)`` maps token ids ``[B, T]`` to logits
``[B, T, V]``. A tuple result is fine (its first element is the logits, as nanoGPT's
``(logits, loss)``), and so is a dict or an object with ``logits``; logits of the last
position only (``[B, 1, V]``, as nanoGPT gives without targets) are enough to generate.

:class:`CausalLMGenerator` is the ``TextGenerator`` the generation engine drives. Without a
cache it runs the whole sequence at each step. A model opts into a KV cache by accepting
a ``past_key_values`` keyword in ``forward`` (the cache protocol; docs/serving-your-own-model.md):

- the server calls ``forward(ids, past_key_values=None)`` with a sequence's prompt, then
  ``forward(ids, past_key_values=cache)`` with one new token ``[1, 1]`` at a time;
- the forward returns ``(logits, cache)``: logits for the new positions, and the cache object
  to pass back next time (the server never looks inside it). The model places the new tokens
  after the cached ones (its positions start at the cache's length).

Every sequence runs in its own forward, so what a sequence gets never depends on which other
sequences share a decode step.

``model.json``::

    {"module": "model.py:GPT", "init": {...}, "task": "text-generation", "context_length": 256}

``context_length`` defaults to the model's ``block_size`` or ``max_position_embeddings`` (an
``init`` keyword, or an attribute of the module or its ``config``). ``tokenizer.json`` in the
folder (with an optional ``tokenizer_config.json``) is its tokenizer; without one the model
takes and gives token ids only.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import mininn
from mininn.nn import Module
from models.code import CodeSpec, ModelCodeError, build_code_module, describe_error
from models.errors import ArchitectureError, InputError
from models.processing import Processor
from models.registry import Architecture
from models.serving import Servable, placement, to_host, to_tensor
from models.signature import Signature, TensorSpec
from models.text_tokenizer import ChatTokenizer, load_folder_tokenizer

__all__ = [
    "CACHE_ARGUMENT",
    "TEXT_GENERATION",
    "CausalLMGenerator",
    "CausalLMServable",
    "CausalSequence",
    "causal_lm_servable",
    "logits_of",
]

TEXT_GENERATION = "text-generation"
CACHE_ARGUMENT = "past_key_values"  # a forward with this keyword argument takes the cache protocol
_CONTEXT_KEYS = ("block_size", "max_position_embeddings")
_FLOAT_V2 = {np.dtype(np.float16): "FP16", np.dtype(np.float32): "FP32", np.dtype(np.float64): "FP64"}


def causal_lm_servable(folder: Path, spec: CodeSpec) -> CausalLMServable:
    """Import the folder's code, build the module with ``spec.init``, and serve it as a language model.

    Raises:
        ModelCodeError: the code fails to import or to build the module (file and line named).
        ArchitectureError: a task other than ``"text-generation"``, ``inputs``/``outputs`` given (the
            signature is fixed), no context length and none in the model, or a bad ``tokenizer.json``.
    """
    if spec.task != TEXT_GENERATION:
        raise ArchitectureError(f"unknown task {spec.task!r}; the one task is {TEXT_GENERATION!r}")
    for key in ("inputs", "outputs"):
        if getattr(spec, key):
            raise ArchitectureError(
                f"a text-generation model takes 'input_ids' [batch, tokens] and gives 'logits' "
                f"[batch, tokens, vocab]: leave '{key}' out of model.json"
            )
    module = build_code_module(folder, spec)
    context_length = resolve_context_length(module, spec.init, spec.context_length)
    tokenizer = load_folder_tokenizer(folder, required=False)
    return CausalLMServable(module, Path(folder), spec.module, dict(spec.init), context_length, tokenizer)


def resolve_context_length(module: Module, init: Mapping[str, Any], given: int | None) -> int:
    """``given``, else the model's own ``block_size``/``max_position_embeddings``.

    Raises:
        ArchitectureError: neither is there, a bad value, or ``given`` beyond the model's own.
    """
    own = _model_context(module, init)
    if given is None:
        if own is None:
            raise ArchitectureError(
                "a text-generation model needs 'context_length' in model.json (the longest prompt plus "
                "generated tokens, e.g. 256): the model has no block_size or max_position_embeddings"
            )
        return own
    if isinstance(given, bool) or not isinstance(given, int) or given < 1:
        raise ArchitectureError(f"'context_length' must be a positive integer, not {given!r}")
    if own is not None and given > own:
        raise ArchitectureError(
            f"'context_length' {given} is more than the model's own {own} (its block_size or "
            "max_position_embeddings): use at most that"
        )
    return given


def _model_context(module: Module, init: Mapping[str, Any]) -> int | None:
    config = getattr(module, "config", None)
    places: list[Any] = [init, config, module]
    for place in places:
        for key in _CONTEXT_KEYS:
            value = place.get(key) if isinstance(place, Mapping) else getattr(place, key, None)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return None


def logits_of(result: Any) -> Any:
    """The logits in a forward's result: the tensor itself, a tuple's first element, ``["logits"]``
    of a dict, or ``.logits``."""
    if isinstance(result, Mapping):
        return result.get("logits")
    if isinstance(result, (tuple, list)):
        return result[0] if result else None
    if hasattr(result, "logits") and not hasattr(result, "shape"):
        return result.logits
    return result


class CausalLMServable(Servable):
    """A user's causal LM: ``/infer`` runs one forward (``input_ids`` -> ``logits``); ``generator`` generates.

    Args:
        module: The user's module.
        folder: The model's folder (for error locations).
        name: The ``module`` reference, e.g. ``"model.py:GPT"``.
        init: Its keyword arguments.
        context_length: The longest sequence it serves.
        tokenizer: Its tokenizer, or None (token ids only).
    """

    def __init__(self, module: Module, folder: Path, name: str, init: Mapping[str, Any], context_length: int,
                 tokenizer: ChatTokenizer | None) -> None:
        signature = Signature([TensorSpec("input_ids", "INT64", (-1, -1))],
                              [TensorSpec("logits", "FP32", (-1, -1, -1))])
        architecture = Architecture(name=name, config_cls=dict, build=lambda _: module,
                                    signature=lambda _: signature)
        super().__init__(architecture, dict(init), module, Processor(None, signature))
        self.folder = folder
        self.context_length = context_length
        self.vocab_size: int | None = None  # found by the first forward (the warm-up)
        self.generator = CausalLMGenerator(self, tokenizer)

    def predict(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One forward: ``input_ids`` [B, T] -> ``logits`` [B, T, V] (or [B, 1, V] for last-only models).

        Raises:
            InputError: bad inputs (datatype, shape, ids outside the vocabulary, too many tokens),
                or the model's code failed on them (file and line named).
            ModelCodeError: the forward's result is not logits [B, T, V].
        """
        self._check(inputs)
        ids = np.asarray(inputs["input_ids"]).astype(np.int64)
        self._check_ids(ids)
        logits = self.forward(ids)
        return {"logits": logits.astype(_float_dtype(self.outputs[0].datatype), copy=False)}

    def example_inputs(self, batch_size: int = 1) -> dict[str, np.ndarray]:
        """Zeros ``[batch_size, 2]`` (one token when the context holds only one)."""
        return {"input_ids": np.zeros((batch_size, min(2, self.context_length)), dtype=np.int64)}

    def forward(self, ids: np.ndarray, **kwargs: Any) -> np.ndarray:
        """The model's logits for ``ids`` as a host array, checked to be [B, T or 1, V]."""
        result = self.call(ids, **kwargs)
        return self.check_logits(logits_of(result), ids.shape)

    def call(self, ids: np.ndarray, **kwargs: Any) -> Any:
        """``module(ids, **kwargs)``; an exception of the user's code becomes a located ``InputError``."""
        device, float_dtype = placement(self.module)
        try:
            return self.module(to_tensor(ids, device, float_dtype), **kwargs)
        except Exception as exc:  # the model's own code failed on these ids
            raise InputError(describe_error(exc, self.folder)) from exc

    def check_logits(self, logits: Any, ids_shape: tuple[int, ...]) -> np.ndarray:
        """``logits`` as a host float array, after checking its shape against ``ids_shape``.

        The first call (the warm-up) fixes the vocabulary size and the output's datatype.

        Raises:
            ModelCodeError: not a floating tensor of shape [B, T, V] or [B, 1, V].
        """
        array = to_host(logits) if logits is not None else None
        batch, length = ids_shape
        if (array is None or array.ndim != 3 or array.shape[0] != batch or array.shape[1] not in (length, 1)
                or array.dtype.kind != "f"):
            got = "None" if array is None else f"{array.dtype} {list(array.shape)}"
            raise ModelCodeError(
                f"{self.architecture}: forward gave logits {got} for input_ids {list(ids_shape)}; a "
                "text-generation model's forward must return logits [batch, tokens, vocab] (or a tuple "
                "whose first element they are, as (logits, loss))"
            )
        if self.vocab_size is None:
            self._fix_vocabulary(array)
        elif array.shape[2] != self.vocab_size:
            raise ModelCodeError(f"{self.architecture}: forward gave {array.shape[2]} logits per token, "
                                 f"then {self.vocab_size} before; the vocabulary size must not change")
        return array

    def _fix_vocabulary(self, logits: np.ndarray) -> None:
        vocab = int(logits.shape[2])
        tokenizer = self.generator.tokenizer
        if tokenizer is not None and tokenizer.vocab_size > vocab:
            raise ModelCodeError(
                f"tokenizer.json has {tokenizer.vocab_size} tokens but the model gives {vocab} logits per "
                "token: use the tokenizer the model was trained with"
            )
        datatype = _FLOAT_V2.get(np.dtype(logits.dtype), "FP32")
        self.vocab_size = vocab
        self.outputs = [TensorSpec("logits", datatype, (-1, -1, vocab))]
        self.processor.signature = Signature(self.inputs, self.outputs)

    def _check_ids(self, ids: np.ndarray) -> None:
        if ids.shape[1] < 1:
            raise InputError("input 'input_ids' has no tokens; give at least one token id per row")
        if ids.shape[1] > self.context_length:
            raise InputError(f"input 'input_ids' has {ids.shape[1]} tokens per row; this model's context "
                             f"length is {self.context_length}")
        limit = self.vocab_size
        bad = ids[(ids < 0) | (ids >= limit)] if limit is not None else ids[ids < 0]
        if bad.size:
            raise InputError(f"input 'input_ids' holds token id {int(bad[0])}, outside the vocabulary "
                             f"[0, {limit if limit is not None else 'V'})")


@dataclass
class CausalSequence:
    """One sequence's state: its tokens, and its cache when the model takes one."""

    tokens: list[int] = field(default_factory=list)
    cache: Any = None
    released: bool = False


class CausalLMGenerator:
    """The ``TextGenerator`` of a user's causal LM (docs/serving-your-own-model.md, language models).

    Attributes:
        tokenizer: The model's tokenizer, or None (token ids only).
        uses_cache: Whether the model's forward takes the cache protocol (``past_key_values``).
    """

    def __init__(self, servable: CausalLMServable, tokenizer: ChatTokenizer | None) -> None:
        self._servable = servable
        self.tokenizer = tokenizer
        self.uses_cache = _takes_cache(servable.module)

    @property
    def context_length(self) -> int:
        """The longest sequence: prompt plus generated tokens."""
        return self._servable.context_length

    @property
    def vocab_size(self) -> int:
        """Logits per token (found by one forward if the warm-up has not run)."""
        if self._servable.vocab_size is None:
            with mininn.no_grad():
                self._servable.forward(np.zeros((1, 1), dtype=np.int64))
        return int(self._servable.vocab_size or 0)

    @property
    def module(self) -> Module:
        """The model."""
        return self._servable.module

    def new_sequence(self) -> CausalSequence:
        """A new, empty sequence."""
        return CausalSequence()

    def prefill(self, seq: CausalSequence, token_ids: Sequence[int]) -> np.ndarray:
        """Append the prompt ``token_ids`` to ``seq``; the logits [V] after its last token.

        Raises:
            InputError: no tokens, ids outside the vocabulary, or more than the context length.
            ModelCodeError: the model failed or gave logits of a wrong shape.
        """
        ids = self._checked(seq, token_ids, at_least=1)
        return self._step(seq, ids)

    def decode(self, seqs: Sequence[CausalSequence], token_ids: Sequence[int]) -> np.ndarray:
        """One new token per sequence; the logits [len(seqs), V] after it.

        Raises:
            InputError: lengths differ, an id outside the vocabulary, or a full context.
            ModelCodeError: the model failed or gave logits of a wrong shape.
        """
        if len(seqs) != len(token_ids):
            raise InputError(f"decode got {len(seqs)} sequences but {len(token_ids)} tokens")
        checked = [self._checked(seq, [token], at_least=1) for seq, token in zip(seqs, token_ids)]
        rows = [self._step(seq, ids) for seq, ids in zip(seqs, checked)]
        return np.stack(rows) if rows else np.zeros((0, self.vocab_size), dtype=np.float32)

    def release(self, seq: CausalSequence) -> None:
        """Free ``seq``'s tokens and cache."""
        seq.tokens, seq.cache, seq.released = [], None, True

    def _checked(self, seq: CausalSequence, token_ids: Sequence[int], at_least: int) -> list[int]:
        if seq.released:
            raise InputError("this sequence was released; start a new one")
        ids = [int(t) for t in token_ids]
        if len(ids) < at_least:
            raise InputError("a prompt needs at least one token")
        vocab = self.vocab_size
        bad = [t for t in ids if not 0 <= t < vocab]
        if bad:
            raise InputError(f"token id {bad[0]} is outside the vocabulary [0, {vocab})")
        total = len(seq.tokens) + len(ids)
        if total > self.context_length:
            raise InputError(
                f"{total} tokens do not fit this model's context length of {self.context_length}"
            )
        return ids

    def _step(self, seq: CausalSequence, ids: list[int]) -> np.ndarray:
        with mininn.no_grad():
            if self.uses_cache:
                logits = self._cached_step(seq, ids)
            else:
                full = np.asarray([seq.tokens + ids], dtype=np.int64)
                logits = self._servable.forward(full)
        seq.tokens.extend(ids)
        return np.array(logits[0, -1])

    def _cached_step(self, seq: CausalSequence, ids: list[int]) -> np.ndarray:
        new = np.asarray([ids], dtype=np.int64)
        result = self._servable.call(new, **{CACHE_ARGUMENT: seq.cache})
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise ModelCodeError(
                f"{self._servable.architecture}: forward takes {CACHE_ARGUMENT!r}, so it must return "
                f"(logits, {CACHE_ARGUMENT}) (docs/serving-your-own-model.md), not {type(result).__name__}"
            )
        logits = self._servable.check_logits(result[0], new.shape)
        seq.cache = result[1]
        return logits


def _takes_cache(module: Module) -> bool:
    try:
        parameters = inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False
    return CACHE_ARGUMENT in parameters


def _float_dtype(datatype: str) -> np.dtype:
    return {"FP16": np.dtype(np.float16), "FP64": np.dtype(np.float64)}.get(datatype, np.dtype(np.float32))
