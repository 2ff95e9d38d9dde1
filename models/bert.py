"""``bert_encoder`` / ``minilm``: Hugging Face's ``BertModel`` with sentence-transformers pooling.

The module tree is ``transformers.BertModel``'s, name for name (``embeddings.word_embeddings``,
``encoder.layer.N.attention.self.query``, ``...attention.output.LayerNorm``,
``intermediate.dense``, ``output.dense``, ``pooler.dense``), with ``position_ids`` and
``token_type_ids`` as non-persistent buffers as in transformers 5, so a ``BertModel``
state dict loads strictly. :class:`SentenceEncoder` adds sentence-transformers' pooling
(attention-mask-weighted mean, then L2 normalisation) without adding any state.

Texts arrive as V2 ``BYTES`` and are tokenised with the model's own ``tokenizer.json``
(truncated to ``max_seq_length``, padded to the longest text in the batch).

RoBERTa (``RobertaModel``, and XLM-R and CamemBERT, which copy it) has the same module tree
and differs only in how positions are numbered: set ``"position_ids": "roberta"``. A config
with RoBERTa's sizes but BERT positions is refused rather than served wrong. A Hugging Face
``config.json`` is accepted as a config as it is; :class:`BertConfig` lists the keys it maps,
the ones it ignores and the values it refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal, TypeVar

import numpy as np

import mininn
import mininn.nn.functional as F
from mininn import Tensor, nn
from models.config import ConfigValueError, require
from models.processing import Processor
from models.registry import Architecture, register
from models.signature import Signature, TensorSpec
from models.tokenizer import TextTokenizer, decode_texts, resource_path

__all__ = [
    "BertConfig",
    "BertModel",
    "HF_IGNORED_KEYS",
    "MiniLMConfig",
    "SentenceEmbeddingProcessor",
    "SentenceEncoder",
    "map_bert_keys",
]

T = TypeVar("T")


# Hugging Face ``model_type`` -> the position layout of that family (the module tree is BertModel's).
_POSITION_IDS_OF_MODEL_TYPE: dict[str, str] = {
    "bert": "bert", "roberta": "roberta", "xlm-roberta": "roberta", "camembert": "roberta",
}
_LAYOUTS = {"bert": "0..T-1", "roberta": "pad_token_id + 1 onwards, skipping padding tokens"}

# Hugging Face keys whose other values change the computation in a way not implemented here.
_HF_FIXED_VALUES: dict[str, tuple[Any, str]] = {
    "position_embedding_type": ("absolute", "'absolute' (relative position embeddings are not implemented)"),
    "is_decoder": (False, "false (a decoder's causal self-attention is not implemented)"),
    "add_cross_attention": (False, "false (cross-attention layers are not implemented)"),
    "pruned_heads": ({}, "{} (pruned attention heads are not implemented)"),
}

HF_IGNORED_KEYS = frozenset({
    # provenance
    "_name_or_path", "_commit_hash", "architectures", "transformers_version", "torch_dtype", "dtype",
    "use_bfloat16",
    # task heads, training, initialisation and the tokenizer
    "id2label", "label2id", "num_labels", "problem_type", "finetuning_task", "classifier_dropout",
    "initializer_range", "gradient_checkpointing", "tf_legacy_loss", "tie_word_embeddings",
    "tokenizer_class", "prefix", "task_specific_params", "bos_token_id", "eos_token_id", "sep_token_id",
    "decoder_start_token_id",
    # what transformers' forward returns, its cache and feed-forward chunking
    "return_dict", "output_attentions", "output_hidden_states", "torchscript", "use_cache",
    "chunk_size_feed_forward", "is_encoder_decoder", "tie_encoder_decoder", "cross_attention_hidden_size",
    # transformers 4's generation settings
    "max_length", "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups",
    "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty",
    "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences",
    "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
})


@dataclass(frozen=True)
class BertConfig:
    """The ``bert_encoder`` config: Hugging Face ``BertConfig``'s sizes plus serving keys.

    A Hugging Face ``config.json`` (``BertConfig`` / ``RobertaConfig`` ``to_dict()``, transformers
    4 or 5) is accepted as it is, alone or with this config's own keys added
    (:meth:`prepare_mapping`):

    - Mapped: ``vocab_size``, ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads``,
      ``intermediate_size``, ``hidden_act``, ``hidden_dropout_prob``, ``attention_probs_dropout_prob``,
      ``max_position_embeddings``, ``type_vocab_size``, ``layer_norm_eps``, ``pad_token_id`` (the
      fields of the same name), and ``model_type`` (``"bert"``; ``"roberta"``, ``"xlm-roberta"``,
      ``"camembert"``), which sets ``position_ids``.
    - Refused unless they have the value implemented: ``position_embedding_type`` (``"absolute"``),
      ``is_decoder`` (false), ``add_cross_attention`` (false), ``pruned_heads`` (``{}``).
    - Ignored, as they do not change the encoder's output (``HF_IGNORED_KEYS``):
      ``_name_or_path``, ``_commit_hash``, ``architectures``, ``transformers_version``,
      ``torch_dtype``, ``dtype``, ``use_bfloat16``; ``id2label``, ``label2id``, ``num_labels``,
      ``problem_type``, ``finetuning_task``, ``classifier_dropout``, ``initializer_range``,
      ``gradient_checkpointing``, ``tf_legacy_loss``, ``tie_word_embeddings``, ``tokenizer_class``,
      ``prefix``, ``task_specific_params``, ``bos_token_id``, ``eos_token_id``, ``sep_token_id``,
      ``decoder_start_token_id``; ``return_dict``, ``output_attentions``, ``output_hidden_states``,
      ``torchscript``, ``use_cache``, ``chunk_size_feed_forward``, ``is_encoder_decoder``,
      ``tie_encoder_decoder``, ``cross_attention_hidden_size``; and transformers 4's generation
      settings ``max_length``, ``min_length``, ``do_sample``, ``early_stopping``, ``num_beams``,
      ``num_beam_groups``, ``diversity_penalty``, ``temperature``, ``top_k``, ``top_p``,
      ``typical_p``, ``repetition_penalty``, ``length_penalty``, ``no_repeat_ngram_size``,
      ``encoder_no_repeat_ngram_size``, ``bad_words_ids``, ``num_return_sequences``,
      ``output_scores``, ``return_dict_in_generate``, ``forced_bos_token_id``,
      ``forced_eos_token_id``, ``remove_invalid_values``, ``exponential_decay_length_penalty``,
      ``suppress_tokens``, ``begin_suppress_tokens``.
    - Any other key is refused, naming it and the accepted keys.

    ``position_ids="bert"`` is refused for sizes laid out like RoBERTa's, ``max_position_embeddings
    = pad_token_id + 1 + a power of two`` with ``pad_token_id > 0`` (roberta-base: 514 with pad 1):
    such a checkpoint runs with BERT positions, without an error, and gives wrong embeddings.
    """

    vocab_size: int = 30522  # rows of embeddings.word_embeddings
    hidden_size: int = 768  # width of every hidden state
    num_hidden_layers: int = 12  # encoder.layer.0 .. N-1
    num_attention_heads: int = 12  # must divide hidden_size
    intermediate_size: int = 3072  # width of the feed-forward layer
    hidden_act: Literal["gelu", "gelu_new", "relu"] = "gelu"  # gelu is exact (erf), gelu_new the tanh form
    hidden_dropout_prob: float = 0.1  # after embeddings and each sub-layer (training only)
    attention_probs_dropout_prob: float = 0.1  # on attention probabilities (training only)
    max_position_embeddings: int = 512  # rows of embeddings.position_embeddings
    type_vocab_size: int = 2  # rows of embeddings.token_type_embeddings
    layer_norm_eps: float = 1e-12  # epsilon of every LayerNorm
    pad_token_id: int = 0  # padding row of word_embeddings and the tokenizer's pad id
    position_ids: Literal["bert", "roberta"] = "bert"  # bert: 0..T-1; roberta: pad+1.., padding at pad
    add_pooling_layer: bool = True  # whether the model has pooler.dense
    pooling: Literal["mean", "cls", "pooler"] = "mean"  # how token states become one embedding
    normalize: bool = True  # L2-normalise the embedding (sentence-transformers' Normalize)
    max_seq_length: int = 512  # tokens kept per text, [CLS] and [SEP] included
    tokenizer: str = "tokenizer.json"  # tokenizer file, relative to the model's folder

    def __post_init__(self) -> None:
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size", "max_seq_length"):
            require(getattr(self, key) > 0, key, getattr(self, key), "a positive integer")
        require(self.hidden_size % self.num_attention_heads == 0, "num_attention_heads",
                self.num_attention_heads, f"a divisor of hidden_size={self.hidden_size}")
        require(self.max_seq_length <= self.max_position_embeddings, "max_seq_length", self.max_seq_length,
                f"at most max_position_embeddings={self.max_position_embeddings}")
        require(0 <= self.pad_token_id < self.vocab_size, "pad_token_id", self.pad_token_id,
                f"a token id below vocab_size={self.vocab_size}")
        self._check_position_ids()
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            require(0.0 <= getattr(self, key) <= 1.0, key, getattr(self, key), "a probability in [0, 1]")
        require(self.layer_norm_eps > 0, "layer_norm_eps", self.layer_norm_eps, "a positive number")
        require(self.pooling != "pooler" or self.add_pooling_layer, "pooling", self.pooling,
                "'mean' or 'cls' when add_pooling_layer is false")
        parts = PurePosixPath(self.tokenizer).parts
        require(bool(parts) and not PurePosixPath(self.tokenizer).is_absolute() and ".." not in parts,
                "tokenizer", self.tokenizer, "a file name relative to the model's folder")

    def _check_position_ids(self) -> None:
        pad, rows = self.pad_token_id, self.max_position_embeddings
        if self.position_ids == "roberta":
            last = rows - pad - 1  # the position of the last token of the longest text
            require(self.max_seq_length <= last, "max_seq_length", self.max_seq_length,
                    f"at most max_position_embeddings - pad_token_id - 1 = {last} with RoBERTa positions")
            return
        context = rows - pad - 1
        looks_like_roberta = pad > 0 and context > 1 and (context & (context - 1)) == 0  # a power of two
        require(not looks_like_roberta, "position_ids", self.position_ids,
                f"'roberta' for max_position_embeddings={rows} with pad_token_id={pad}, RoBERTa's layout: "
                f"its position ids run from pad_token_id + 1 = {pad + 1} and skip padding, BERT's run "
                "0..T-1, and a RoBERTa checkpoint served with BERT positions gives wrong embeddings "
                "without an error; set \"position_ids\": \"roberta\"")

    @classmethod
    def prepare_mapping(cls, values: Mapping[str, Any]) -> dict[str, Any]:
        """``values`` in this config's keys: a Hugging Face ``config.json``'s keys mapped or dropped.

        Keys of neither kind are left in place, for the caller to refuse as unknown.

        Raises:
            ConfigValueError: A Hugging Face value whose computation is not implemented, an unknown
                ``model_type``, or a ``position_ids`` that contradicts ``model_type``.
        """
        values = dict(values)
        for key, (implemented, expected) in _HF_FIXED_VALUES.items():
            value = values.pop(key, implemented)
            require(type(value) is type(implemented) and value == implemented, key, value, expected)
        model_type = values.pop("model_type", None)
        if model_type is not None:
            values["position_ids"] = _position_ids_of(model_type, values.get("position_ids"))
        return {key: value for key, value in values.items() if key not in HF_IGNORED_KEYS}


def _position_ids_of(model_type: Any, position_ids: Any) -> str:
    """The position layout of a Hugging Face ``model_type``, checked against an explicit ``position_ids``."""
    layout = _POSITION_IDS_OF_MODEL_TYPE.get(model_type) if isinstance(model_type, str) else None
    if layout is None:
        known = ", ".join(repr(name) for name in _POSITION_IDS_OF_MODEL_TYPE)
        raise ConfigValueError("model_type", model_type, f"one of {known} (BertModel's module tree)")
    require(position_ids in (None, layout), "position_ids", position_ids,
            f"{layout!r} for model_type={model_type!r}, whose position ids run {_LAYOUTS[layout]}")
    return layout


@dataclass(frozen=True)
class MiniLMConfig(BertConfig):
    """all-MiniLM-L6-v2: 6 layers of width 384, texts truncated to 256 tokens."""

    hidden_size: int = 384
    num_hidden_layers: int = 6
    intermediate_size: int = 1536
    max_seq_length: int = 256


def _activation(name: str) -> nn.Module:
    """The module for a Hugging Face ``hidden_act`` name."""
    if name == "relu":
        return nn.ReLU()
    return nn.GELU(approximate="tanh" if name == "gelu_new" else "none")


class BertEmbeddings(nn.Module):
    """Word + token-type + position embeddings, then LayerNorm and dropout.

    Positions are BERT's ``0..T-1``, or with ``position_ids="roberta"`` RoBERTa's
    (``RobertaEmbeddings.create_position_ids_from_input_ids``): ``pad_token_id + 1`` onwards,
    counting only the tokens that are not ``pad_token_id``, which themselves get ``pad_token_id``.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        pad = config.pad_token_id
        self.position_layout = config.position_ids
        self.padding_idx = pad
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=pad)
        position_pad = pad if self.position_layout == "roberta" else None
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size,
                                                padding_idx=position_pad)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        positions = mininn.arange(config.max_position_embeddings).reshape(1, -1)
        self.register_buffer("position_ids", positions, persistent=False)
        self.register_buffer("token_type_ids", mininn.zeros_like(positions), persistent=False)

    def forward(self, input_ids: Tensor, token_type_ids: Tensor | None = None) -> Tensor:
        B, T = input_ids.shape  # noqa: N806
        if token_type_ids is None:
            token_type_ids = self.token_type_ids[:, :T].expand(B, T)  # (B, T)
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)  # (B, T, C)
        x = x + self.position_embeddings(self._position_ids(input_ids))  # (B, T, C)
        return self.dropout(self.LayerNorm(x))

    def _position_ids(self, input_ids: Tensor) -> Tensor:
        if self.position_layout == "bert":
            return self.position_ids[:, : input_ids.shape[1]]  # (1, T)
        keep = input_ids.ne(self.padding_idx).to(mininn.int64)  # (B, T)
        return keep.cumsum(1) * keep + self.padding_idx  # (B, T)


class BertSelfAttention(nn.Module):
    """Multi-head scaled dot-product attention; ``attention_mask`` is additive, (B, 1, 1, T)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.scaling = self.attention_head_size**-0.5
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        B, T, C = hidden_states.shape  # noqa: N806
        nh, hs = self.num_attention_heads, self.attention_head_size
        # The final reshapes copy each head into contiguous memory, where batched matmul runs
        # at BLAS speed (a strided stack of matrices is many times slower).
        q = self.query(hidden_states).reshape(B, T, nh, hs).transpose(1, 2).reshape(B * nh, T, hs)
        k_t = self.key(hidden_states).reshape(B, T, nh, hs).permute(0, 2, 3, 1).reshape(B * nh, hs, T)
        v = self.value(hidden_states).reshape(B, T, nh, hs).transpose(1, 2).reshape(B * nh, T, hs)
        scores = ((q @ k_t) * self.scaling).reshape(B, nh, T, T)  # (B, nh, T, T)
        if attention_mask is not None:
            scores = scores + attention_mask  # (B, nh, T, T)
        probs = self.dropout(F.softmax(scores, dim=-1)).reshape(B * nh, T, T)  # (B*nh, T, T)
        context = (probs @ v).reshape(B, nh, T, hs)  # (B, nh, T, hs)
        return context.transpose(1, 2).reshape(B, T, C)  # (B, T, C)


class _DenseResidualNorm(nn.Module):
    """``LayerNorm(dropout(dense(hidden_states)) + input_tensor)``: how both halves of a layer end."""

    def __init__(self, in_features: int, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states: Tensor, input_tensor: Tensor) -> Tensor:
        return self.LayerNorm(self.dropout(self.dense(hidden_states)) + input_tensor)  # (B, T, C)


class BertSelfOutput(_DenseResidualNorm):
    """Projection of the attention result, dropout, residual, LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config.hidden_size, config)


class BertAttention(nn.Module):
    """``self`` (the attention) followed by ``output`` (projection and residual)."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        return self.output(self.self(hidden_states, attention_mask), hidden_states)  # (B, T, C)


class BertIntermediate(nn.Module):
    """The widening half of the feed-forward block."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = _activation(config.hidden_act)

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.intermediate_act_fn(self.dense(hidden_states))  # (B, T, intermediate_size)


class BertOutput(_DenseResidualNorm):
    """The narrowing half of the feed-forward block, dropout, residual, LayerNorm."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__(config.intermediate_size, config)


class BertLayer(nn.Module):
    """One transformer block: attention, then feed-forward."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        attention_output = self.attention(hidden_states, attention_mask)  # (B, T, C)
        return self.output(self.intermediate(attention_output), attention_output)  # (B, T, C)


class BertEncoder(nn.Module):
    """``layer``: the stack of :class:`BertLayer`."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states: Tensor, attention_mask: Tensor | None = None) -> Tensor:
        for layer in self.layer:
            hidden_states = layer(hidden_states, attention_mask)  # (B, T, C)
        return hidden_states


class BertPooler(nn.Module):
    """``tanh(dense(first token))``."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states: Tensor) -> Tensor:
        return self.activation(self.dense(hidden_states[:, 0]))  # (B, C)


class BertModel(nn.Module):
    """Hugging Face's ``BertModel`` (encoder only, eager attention).

    ``forward(input_ids, attention_mask, token_type_ids)`` returns
    ``(last_hidden_state (B, T, C), pooler_output (B, C) or None)``.
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config) if config.add_pooling_layer else None

    def forward(
        self, input_ids: Tensor, attention_mask: Tensor | None = None, token_type_ids: Tensor | None = None
    ) -> tuple[Tensor, Tensor | None]:
        hidden = self.embeddings(input_ids, token_type_ids)  # (B, T, C)
        mask = None if attention_mask is None else additive_mask(attention_mask, hidden.dtype)  # (B, 1, 1, T)
        hidden = self.encoder(hidden, mask)  # (B, T, C)
        pooled = self.pooler(hidden) if self.pooler is not None else None  # (B, C)
        return hidden, pooled


class SentenceEncoder(BertModel):
    """:class:`BertModel` followed by sentence-transformers' pooling and normalisation.

    Same state dict as ``BertModel``; ``forward`` returns the sentence embeddings (B, C).
    """

    def forward(  # type: ignore[override]
        self, input_ids: Tensor, attention_mask: Tensor | None = None, token_type_ids: Tensor | None = None
    ) -> Tensor:
        if attention_mask is None:
            attention_mask = mininn.ones_like(input_ids)
        hidden, pooled = super().forward(input_ids, attention_mask, token_type_ids)  # (B, T, C), (B, C)
        if self.config.pooling == "mean":
            embedding = mean_pool(hidden, attention_mask)  # (B, C)
        elif self.config.pooling == "cls":
            embedding = hidden[:, 0]  # (B, C)
        else:
            embedding = pooled
        return F.normalize(embedding, p=2.0, dim=1) if self.config.normalize else embedding


def additive_mask(attention_mask: Tensor, dtype: mininn.dtype) -> Tensor:
    """(B, T) of 1 (attend) / 0 (padding) -> (B, 1, 1, T) of 0 / half the dtype's lowest value.

    Hugging Face adds the lowest value itself; half of it gives the same probabilities (exactly
    zero after softmax) without overflowing to -inf, and its warnings, in float16.
    """
    keep = attention_mask.to(dtype).unsqueeze(1).unsqueeze(2)  # (B, 1, 1, T)
    return (1.0 - keep) * (float(np.finfo(dtype.np).min) / 2)


def mean_pool(hidden: Tensor, attention_mask: Tensor) -> Tensor:
    """Mean of the token states that ``attention_mask`` keeps: (B, T, C), (B, T) -> (B, C)."""
    mask = attention_mask.to(hidden.dtype).unsqueeze(-1)  # (B, T, 1)
    summed = (hidden * mask).sum(1)  # (B, C)
    counts = mask.sum(1).clamp(min=1e-9)  # (B, 1)
    return summed / counts


class SentenceEmbeddingProcessor(Processor):
    """``text`` (BYTES) -> token ids, mask and type ids -> ``embedding`` (FP32)."""

    def __init__(self, config: BertConfig, signature: Signature, resource_dir: Path | None = None) -> None:
        super().__init__(config, signature, resource_dir)
        path = resource_path(resource_dir, config.tokenizer)
        self.tokenizer = TextTokenizer(path, max_length=config.max_seq_length, pad_id=config.pad_token_id)

    def preprocess(self, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, ...]:
        encoded = self.tokenizer(decode_texts(inputs["text"]))
        return encoded.input_ids, encoded.attention_mask, encoded.token_type_ids


def map_bert_keys(tensors: Mapping[str, T]) -> dict[str, T]:
    """A Hugging Face / sentence-transformers BERT or RoBERTa state dict in :class:`BertModel` keys.

    Strips a leading ``0.auto_model.``, ``bert.`` or ``roberta.`` and drops ``embeddings.position_ids``
    (a persistent buffer in transformers 4, which wrote the MiniLM checkpoint; a
    non-persistent one now).
    """
    mapped = {}
    for key, value in tensors.items():
        for prefix in ("0.auto_model.", "bert.", "roberta."):
            key = key.removeprefix(prefix)
        if key != "embeddings.position_ids":
            mapped[key] = value
    return mapped


def signature(config: BertConfig) -> Signature:
    """``text`` BYTES [-1] -> ``embedding`` FP32 [-1, hidden_size]."""
    return Signature(
        inputs=[TensorSpec("text", "BYTES", (-1,))],
        outputs=[TensorSpec("embedding", "FP32", (-1, config.hidden_size))],
    )


for _name, _config_cls, _description in (
    ("bert_encoder", BertConfig, "BERT encoder (Hugging Face BertModel) with mean pooling"),
    ("minilm", MiniLMConfig, "all-MiniLM-L6-v2 sentence embeddings (384-d, normalised)"),
):
    register(
        Architecture(
            name=_name,
            config_cls=_config_cls,
            build=SentenceEncoder,
            signature=signature,
            processor=SentenceEmbeddingProcessor,
            description=_description,
        )
    )
