"""Tokenizers of language models: text to ids and back, and chat messages to a prompt, as transformers does.

A :class:`ChatTokenizer` wraps a ``tokenizers.Tokenizer`` with the model's special tokens, its
end-of-sequence ids and its chat template. Two loaders build one:

- :func:`load_gguf_tokenizer` from a GGUF file's metadata (``tokenizer.ggml.*``), as
  transformers' ``AutoTokenizer.from_pretrained(folder, gguf_file=...)`` converts it: a
  byte-level BPE (``tokenizer.ggml.model == "gpt2"``: Llama 3, Qwen, SmolLM) over the file's
  tokens and merges, or a SentencePiece-style BPE (``"llama"``: Llama 2, TinyLlama, Mistral) with
  byte fallback and merges recovered from the scores; control tokens as special added tokens,
  user-defined ones as plain added tokens, the pre-tokenizer split chosen by
  ``tokenizer.ggml.pre``, BOS/EOS added as ``add_bos_token``/``add_eos_token`` say.
- :func:`load_folder_tokenizer` from a Hugging Face model folder: ``tokenizer.json`` (whose
  post-processor adds BOS/EOS, if any), with ``tokenizer_config.json`` (special tokens, ``chat_template``),
  ``chat_template.jinja``, and the end-of-sequence ids of ``generation_config.json`` or
  ``config.json``.

Ids, decoded text and rendered chat templates equal transformers' on the same files
(tests/models/test_text_tokenizer.py checks them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.chat_template import ChatTemplate
from models.errors import ArchitectureError, InputError, ResourceError

__all__ = ["ChatTokenizer", "SpecialTokens", "load_folder_tokenizer", "load_gguf_tokenizer"]

logger = logging.getLogger("models.text_tokenizer")

_CONTROL, _USER_DEFINED = 3, 4  # GGUF token types (llama.cpp's llama_token_type)
_OWN_SENTENCEPIECE = ("gemma", "gemma2", "gemma3", "phi3")  # transformers builds these differently

# The split each ``tokenizer.ggml.pre`` names (as transformers maps them); any other value keeps
# byte-level BPE's own GPT-2 split.
_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN35_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
    r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_TEKKEN_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT4O_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_PRE_TOKENIZER_SPLITS = {
    **dict.fromkeys(("llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
                     "jina-v5-nano", "dbrx", "smaug-bpe"), _LLAMA3_SPLIT),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "megrez"), _QWEN2_SPLIT),
    "qwen35": _QWEN35_SPLIT,
    "tekken": _TEKKEN_SPLIT,
    **dict.fromkeys(("gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"), _GPT4O_SPLIT),
}


@dataclass(frozen=True)
class SpecialTokens:
    """The named special tokens (their text), as chat templates see them."""

    bos_token: str | None = None
    eos_token: str | None = None
    unk_token: str | None = None
    pad_token: str | None = None

    def as_template_variables(self) -> dict[str, str]:
        """``{"bos_token": ..., ...}`` for the tokens the model has."""
        names = ("bos_token", "eos_token", "unk_token", "pad_token")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


class ChatTokenizer:
    """A language model's tokenizer: ``encode``/``decode`` and its chat template.

    Build one with :func:`load_gguf_tokenizer` or :func:`load_folder_tokenizer`.

    Args:
        tokenizer: The ``tokenizers.Tokenizer``, with its added tokens and post-processor set.
        special_tokens: The named special tokens.
        eos_token_ids: Every id that ends a sequence.
        chat_template: The Jinja chat template, or None.
        clean_up_spaces: Whether ``decode`` removes spaces before punctuation (transformers'
            ``clean_up_tokenization_spaces``; never for BPE).

    Attributes:
        eos_token_ids: Every id that ends a sequence.
        bos_token_id: The BOS token's id, or None.
        special_tokens: The named special tokens.
        chat_template: The chat template's source, or None.

    Raises:
        ArchitectureError: the chat template does not parse.
    """

    def __init__(
        self,
        tokenizer: Any,
        special_tokens: SpecialTokens,
        eos_token_ids: Iterable[int],
        chat_template: str | None = None,
        clean_up_spaces: bool = False,
    ) -> None:
        self._tokenizer = tokenizer
        self.special_tokens = special_tokens
        self.eos_token_ids: tuple[int, ...] = tuple(dict.fromkeys(int(i) for i in eos_token_ids))
        self.bos_token_id: int | None = self.token_to_id(special_tokens.bos_token)
        self.chat_template = chat_template
        self._template = (
            None if chat_template is None
            else ChatTemplate(chat_template, special_tokens.as_template_variables())
        )
        self._clean_up_spaces = clean_up_spaces and type(tokenizer.model).__name__ != "BPE"

    @property
    def has_chat_template(self) -> bool:
        """Whether the model has a chat template."""
        return self._template is not None

    @property
    def vocab_size(self) -> int:
        """How many ids the tokenizer knows, added tokens included."""
        return int(self._tokenizer.get_vocab_size(with_added_tokens=True))

    @property
    def backend(self) -> Any:
        """The ``tokenizers.Tokenizer``."""
        return self._tokenizer

    def encode(self, text: str, *, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text``; equals transformers' ``tokenizer(text).input_ids``.

        Raises:
            InputError: ``text`` is not a string.
        """
        if not isinstance(text, str):
            raise InputError(f"text to encode must be a string, not {type(text).__name__}")
        return list(self._tokenizer.encode(text, add_special_tokens=add_special_tokens).ids)

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """The text of ``ids``; equals transformers' ``decode`` with the same ``skip_special_tokens``."""
        text = str(self._tokenizer.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens))
        return _clean_up_spaces(text) if self._clean_up_spaces else text

    def apply_chat_template(
        self, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True
    ) -> str:
        """The conversation rendered with the model's chat template.

        Equals transformers' ``apply_chat_template(messages, tokenize=False, add_generation_prompt=...)``.

        Raises:
            InputError: a malformed message (its index and the fix are named), a template that refuses
                the conversation, or a model without a chat template.
        """
        if self._template is None:
            raise InputError(
                "this model has no chat template: send a plain text prompt (completions) instead"
            )
        return self._template.render(messages, add_generation_prompt=add_generation_prompt)

    def encode_chat(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool = True) -> list[int]:
        """Token ids of the rendered conversation (no special tokens added: the template writes them).

        Equals transformers' ``apply_chat_template(messages, tokenize=True, ...)`` ids.
        """
        text = self.apply_chat_template(messages, add_generation_prompt=add_generation_prompt)
        return self.encode(text, add_special_tokens=False)

    def token_to_id(self, token: str | None) -> int | None:
        """The id of ``token``'s text, or None."""
        if token is None:
            return None
        found = self._tokenizer.token_to_id(token)
        return None if found is None else int(found)

    def __repr__(self) -> str:
        return (f"ChatTokenizer(vocab_size={self.vocab_size}, eos_token_ids={self.eos_token_ids}, "
                f"chat_template={self.has_chat_template})")


# -- GGUF -------------------------------------------------------------------------------------------


def load_gguf_tokenizer(reader: Any) -> ChatTokenizer:
    """The tokenizer a GGUF file's metadata describes, as transformers converts it.

    Args:
        reader: A ``gguf.GGUFReader`` on the file.

    Raises:
        ArchitectureError: the file has no tokenizer, or one of a kind not supported here
            (``tokenizer.ggml.model`` other than ``"gpt2"`` and ``"llama"``, or a Gemma or Phi-3
            SentencePiece vocabulary), or broken metadata.
    """
    meta = _GGUFMetadata(reader)
    kind = meta.get("tokenizer.ggml.model")
    if kind is None:
        raise ArchitectureError("the GGUF file has no tokenizer (no 'tokenizer.ggml.model' key)")
    tokens = meta.require_list("tokenizer.ggml.tokens", str)
    types = meta.get("tokenizer.ggml.token_type") or []
    if kind == "gpt2":
        tokenizer = _byte_level_bpe(tokens, meta.require_list("tokenizer.ggml.merges", str))
    elif kind == "llama":
        tokenizer = _sentencepiece_bpe(meta, tokens)
    else:
        raise ArchitectureError(
            f"the GGUF file's tokenizer is {kind!r} (tokenizer.ggml.model); supported: 'gpt2' (byte-level "
            "BPE) and 'llama' (SentencePiece BPE): serve a tokenizer.json instead"
        )
    _add_gguf_tokens(tokenizer, tokens, types, byte_level=kind == "gpt2")
    split = _split_pre_tokenizer(meta.get("tokenizer.ggml.pre"))
    if split is not None:
        tokenizer.pre_tokenizer = split
    special = SpecialTokens(*(_token_at(meta, tokens, key) for key in ("bos", "eos", "unknown", "padding")))
    _add_named_special_tokens(tokenizer, special)
    add_bos = meta.get("tokenizer.ggml.add_bos_token", kind == "llama")  # SentencePiece: BOS unless told
    add_eos = meta.get("tokenizer.ggml.add_eos_token", False)
    _set_post_processor(tokenizer, special, bool(add_bos), bool(add_eos))
    eos_ids = [meta.get(f"tokenizer.ggml.{k}_token_id") for k in ("eos", "eot", "eom")]
    return ChatTokenizer(tokenizer, special, [i for i in eos_ids if i is not None],
                         meta.get("tokenizer.chat_template"))


class _GGUFMetadata:
    """Typed access to a ``GGUFReader``'s fields."""

    def __init__(self, reader: Any) -> None:
        self._fields = reader.fields

    def get(self, key: str, default: Any = None) -> Any:
        field = self._fields.get(key)
        if field is None:
            return default
        try:
            return field.contents()
        except UnicodeDecodeError as exc:
            raise ArchitectureError(f"GGUF metadata {key!r} is not valid UTF-8: {exc}") from None

    def require_list(self, key: str, kind: type) -> list[Any]:
        value = self.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, kind) for v in value):
            raise ArchitectureError(f"the GGUF file's {key!r} must be a non-empty list of {kind.__name__}")
        return value


def _token_at(meta: _GGUFMetadata, tokens: list[str], name: str) -> str | None:
    index = meta.get(f"tokenizer.ggml.{name}_token_id")
    if index is None:
        return None
    if not isinstance(index, int) or not 0 <= index < len(tokens):
        raise ArchitectureError(
            f"GGUF 'tokenizer.ggml.{name}_token_id' is {index!r}, outside the {len(tokens)} tokens"
        )
    return tokens[index]


def _byte_level_bpe(tokens: list[str], merges: list[str]) -> Any:
    tokenizers = _import_tokenizers()
    alphabet = _byte_alphabet()
    spelled = set(alphabet.values())
    vocab: dict[str, int] = {}
    for index, token in enumerate(tokens):
        # A token written in plain text rather than the byte alphabet is respelled into it.
        key = token if set(token) <= spelled else "".join(alphabet[b] for b in token.encode("utf-8"))
        vocab[key] = index
    pairs = [_merge_pair(index, merge) for index, merge in enumerate(merges)]
    model = tokenizers.models.BPE(vocab=vocab, merges=pairs, dropout=None, continuing_subword_prefix="",
                                  end_of_word_suffix="", fuse_unk=False)
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = tokenizers.decoders.ByteLevel()
    return tokenizer


def _sentencepiece_bpe(meta: _GGUFMetadata, tokens: list[str]) -> Any:
    """Llama's SentencePiece BPE: ``▁`` for spaces (prepended to the text), byte fallback, no normalizer."""
    architecture = meta.get("general.architecture")
    if architecture in _OWN_SENTENCEPIECE:
        raise ArchitectureError(
            f"the GGUF file's {architecture!r} SentencePiece tokenizer is not supported here: serve its "
            "tokenizer.json instead"
        )
    tokenizers = _import_tokenizers()
    vocab = {token: index for index, token in enumerate(tokens)}
    given = meta.get("tokenizer.ggml.merges")
    if given is not None:
        merges = [_merge_pair(i, m) for i, m in enumerate(meta.require_list("tokenizer.ggml.merges", str))]
    else:
        scores = meta.require_list("tokenizer.ggml.scores", float)
        merges = _merges_from_scores(vocab, dict(zip(tokens, scores)))
    model = tokenizers.models.BPE(vocab=vocab, merges=merges, fuse_unk=True, byte_fallback=True, dropout=None)
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.normalizer = None
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                                  split=False)
    decoders = tokenizers.decoders
    tokenizer.decoder = decoders.Sequence([
        decoders.Replace("▁", " "),
        decoders.ByteFallback(),
        decoders.Fuse(),
        decoders.Strip(content=" ", left=1),
    ])
    return tokenizer


def _merges_from_scores(vocab: Mapping[str, int], scores: Mapping[str, float]) -> list[tuple[str, str]]:
    """The merges a scored vocabulary implies: every split of a token into two known tokens, best
    score first (then the shorter left part), ties in vocabulary order (transformers' ``generate_merges``)."""
    found = []
    for token, score in scores.items():
        pairs = [(token[:i], token[i:]) for i in range(1, len(token))]
        known = [p for p in pairs if p[0] in vocab and p[1] in vocab]
        known.sort(key=lambda p: (vocab[p[0]], vocab[p[1]]))
        found.extend((left, right, score) for left, right in known)
    found.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    return [(left, right) for left, right, _ in found]


def _merge_pair(index: int, merge: str) -> tuple[str, str]:
    pair = merge.split(" ")
    if len(pair) != 2:
        raise ArchitectureError(f"GGUF merge {index} {merge!r} is not two tokens separated by one space")
    return pair[0], pair[1]


def _add_gguf_tokens(tokenizer: Any, tokens: list[str], types: list[int], byte_level: bool) -> None:
    """Control tokens as special added tokens, user-defined ones as plain added tokens (kept whole)."""
    tokenizers = _import_tokenizers()
    spelled = set(_byte_alphabet().values())
    control = [
        tokenizers.AddedToken(token, normalized=False, special=True)
        for token, kind in zip(tokens, types)
        # in a byte-level vocabulary, another spelling is a mislabel that would grow the vocabulary
        if kind == _CONTROL and (not byte_level or set(token) <= spelled)
    ]
    if control:
        tokenizer.add_special_tokens(control)
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    user = [
        tokenizers.AddedToken(token, normalized=False, special=False)
        for token, kind in zip(tokens, types)
        if kind == _USER_DEFINED and token in vocab
    ]
    if user:
        tokenizer.add_tokens(user)


def _split_pre_tokenizer(pre: str | None) -> Any:
    """The split ``tokenizer.ggml.pre`` names, then byte-level; None: keep the vocabulary's own."""
    pre_tokenizers = _import_tokenizers().pre_tokenizers
    split = _PRE_TOKENIZER_SPLITS.get(pre or "")
    if split is None:
        return None
    regex = _import_tokenizers().Regex(split)
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(regex, behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


def _byte_alphabet() -> dict[int, str]:
    """Byte-level BPE's printable spelling of each byte (GPT-2's ``bytes_to_unicode``)."""
    printable = [
        *range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)
    ]
    spelling = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in spelling:
            spelling[b] = chr(256 + extra)
            extra += 1
    return spelling


# -- Hugging Face folder ------------------------------------------------------------------------------


def load_folder_tokenizer(folder: Path | str, *, required: bool = True) -> ChatTokenizer | None:
    """The tokenizer of a Hugging Face model folder (``tokenizer.json`` and its companions).

    Args:
        folder: The folder holding ``tokenizer.json``; ``tokenizer_config.json``,
            ``chat_template.jinja``, ``generation_config.json`` and ``config.json`` are read when present.
        required: Whether a missing ``tokenizer.json`` is an error (else None is returned).

    Raises:
        ResourceError: no ``tokenizer.json`` (when ``required``).
        ArchitectureError: a file that cannot be read, is not valid JSON, or has bad values; the
            message names the file and the key.
    """
    folder = Path(folder)
    path = folder / "tokenizer.json"
    if not path.is_file():
        if not required:
            return None
        raise ResourceError(f"the model's folder has no tokenizer.json ({str(path)!r})", "tokenizer.json")
    tokenizer = _read_tokenizer_json(path)
    config = _read_json_object(folder / "tokenizer_config.json")
    special = SpecialTokens(*(_token_text(config, name) for name in
                              ("bos_token", "eos_token", "unk_token", "pad_token")))
    _add_named_special_tokens(tokenizer, special, _extra_special_tokens(config))
    # BOS/EOS come from tokenizer.json's post-processor alone: transformers (v5) ignores
    # tokenizer_config.json's add_bos_token/add_eos_token when it loads a tokenizer.json.
    eos_ids = _folder_eos_ids(folder, tokenizer, special)
    return ChatTokenizer(tokenizer, special, eos_ids, _folder_chat_template(folder, config),
                         clean_up_spaces=_flag(config, "clean_up_tokenization_spaces"))


def _read_tokenizer_json(path: Path) -> Any:
    tokenizers = _import_tokenizers()
    try:
        return tokenizers.Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a bad file
        raise ArchitectureError(
            f"cannot read {path.name}: {exc}; write it with tokenizers' Tokenizer.save() or transformers' "
            "save_pretrained()"
        ) from None


def _read_json_object(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ArchitectureError(f"cannot read {path.name}: {exc}") from None
    if not isinstance(document, dict):
        raise ArchitectureError(f"{path.name} must be a JSON object, not {type(document).__name__}")
    return document


def _token_text(config: Mapping[str, Any], name: str) -> str | None:
    """A special token in ``tokenizer_config.json``: a string or an ``AddedToken`` object."""
    value = config.get(name)
    if isinstance(value, Mapping):
        value = value.get("content")
    if value is not None and not isinstance(value, str):
        raise ArchitectureError(f"tokenizer_config.json key {name!r} must be a token's text, not {value!r}")
    return value


def _extra_special_tokens(config: Mapping[str, Any]) -> list[str]:
    extra = config.get("additional_special_tokens") or config.get("extra_special_tokens") or []
    if isinstance(extra, Mapping):  # transformers v5 may name them: {"name": "token"}
        extra = list(extra.values())
    if not isinstance(extra, list):
        raise ArchitectureError("tokenizer_config.json's additional_special_tokens must be a list of tokens")
    return [t for t in (_token_text({"token": item}, "token") for item in extra) if t is not None]


def _flag(config: Mapping[str, Any], key: str) -> bool:
    value = config.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ArchitectureError(f"tokenizer_config.json key {key!r} must be true or false, not {value!r}")
    return value


def _folder_chat_template(folder: Path, config: Mapping[str, Any]) -> str | None:
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        try:
            return jinja.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ArchitectureError(f"cannot read chat_template.jinja: {exc}") from None
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": ..., "template": ...}]
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, Mapping)}
        template = named.get("default")
        if template is None:
            raise ArchitectureError(
                f"tokenizer_config.json has chat templates {sorted(map(str, named))} but none named 'default'"
            )
    if template is not None and not isinstance(template, str):
        raise ArchitectureError("tokenizer_config.json's chat_template must be a string (a Jinja template)")
    return template


def _folder_eos_ids(folder: Path, tokenizer: Any, special: SpecialTokens) -> list[int]:
    ids = []
    if special.eos_token is not None and tokenizer.token_to_id(special.eos_token) is not None:
        ids.append(int(tokenizer.token_to_id(special.eos_token)))
    generation = _read_json_object(folder / "generation_config.json")
    source = generation if "eos_token_id" in generation else _read_json_object(folder / "config.json")
    value = source.get("eos_token_id")
    values = value if isinstance(value, list) else [] if value is None else [value]
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    for item in values:
        if not isinstance(item, int) or isinstance(item, bool) or not 0 <= item < size:
            raise ArchitectureError(f"eos_token_id {item!r} must be a token id below {size}")
        ids.append(item)
    return ids


# -- shared ---------------------------------------------------------------------------------------------


def _add_named_special_tokens(tokenizer: Any, special: SpecialTokens, extra: Sequence[str] = ()) -> None:
    """Register the named special tokens not added yet as special added tokens, as transformers does."""
    tokenizers = _import_tokenizers()
    present = {str(t.content) for t in tokenizer.get_added_tokens_decoder().values()}
    named = [special.bos_token, special.eos_token, special.unk_token, special.pad_token, *extra]
    missing = [t for t in dict.fromkeys(named) if t is not None and t not in present]
    if missing:
        added = [tokenizers.AddedToken(t, special=True, normalized=False) for t in missing]
        tokenizer.add_special_tokens(added)


def _set_post_processor(tokenizer: Any, special: SpecialTokens, add_bos: bool, add_eos: bool) -> None:
    """Prepend BOS and append EOS when asked (transformers' ``update_post_processor``)."""
    processors = _import_tokenizers().processors
    add_bos = add_bos and special.bos_token is not None
    add_eos = add_eos and special.eos_token is not None
    bos, eos = special.bos_token, special.eos_token
    single = f"{(bos + ':0 ') if add_bos else ''}$A:0{(' ' + eos + ':0') if add_eos else ''}"
    pair = f"{single}{(' ' + bos + ':1') if add_bos else ''} $B:1{(' ' + eos + ':1') if add_eos else ''}"
    tokens = [(t, tokenizer.token_to_id(t)) for t, on in ((bos, add_bos), (eos, add_eos)) if on]
    tokenizer.post_processor = processors.TemplateProcessing(single=single, pair=pair, special_tokens=tokens)


def _clean_up_spaces(text: str) -> str:
    """transformers' ``clean_up_tokenization``: no space before punctuation and English contractions."""
    for before, after in ((" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
                          (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")):
        text = text.replace(before, after)
    return text


def _import_tokenizers() -> Any:
    try:
        import tokenizers
        import tokenizers.decoders
        import tokenizers.models
        import tokenizers.pre_tokenizers
        import tokenizers.processors
    except ImportError:
        raise ArchitectureError(
            "language models need the 'tokenizers' package: pip install tokenizers"
        ) from None
    return tokenizers
