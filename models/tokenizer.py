"""Text to token ids with the ``tokenizers`` package and a model's own ``tokenizer.json``.

Settings follow sentence-transformers: truncate each text to ``max_length`` tokens
(special tokens included) and pad the batch to its longest text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from models.errors import ArchitectureError, InputError, ResourceError

__all__ = ["Encoded", "TextTokenizer", "decode_texts", "resource_path"]


@dataclass(frozen=True)
class Encoded:
    """A tokenised batch; each array is int64 of shape (B, T)."""

    input_ids: np.ndarray
    attention_mask: np.ndarray
    token_type_ids: np.ndarray


class TextTokenizer:
    """A ``tokenizers.Tokenizer`` set to truncate to ``max_length`` and pad to the longest.

    Args:
        path: The ``tokenizer.json`` file.
        max_length: Longest sequence in tokens, special tokens included.
        pad_id: Token id used for padding (its token is looked up in the vocabulary).

    Raises:
        ArchitectureError: The ``tokenizers`` package is missing or the file cannot be read.
    """

    def __init__(self, path: Path, max_length: int, pad_id: int = 0) -> None:
        tokenizers = _import_tokenizers()
        try:
            self._tokenizer = tokenizers.Tokenizer.from_file(str(path))
        except Exception as exc:  # tokenizers raises a bare Exception for bad files
            raise ArchitectureError(f"cannot read tokenizer file {str(path)!r}: {exc}") from None
        self._tokenizer.enable_truncation(max_length=max_length)
        pad_token = self._tokenizer.id_to_token(pad_id) or "[PAD]"
        self._tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)
        self.max_length = max_length

    def __call__(self, texts: Sequence[str]) -> Encoded:
        """Token ids, attention mask and token type ids for a batch of texts."""
        encodings = self._tokenizer.encode_batch(list(texts))
        width = len(encodings[0].ids) if encodings else 0

        def stack(field: str) -> np.ndarray:
            rows = [getattr(e, field) for e in encodings]
            return np.array(rows, dtype=np.int64).reshape(len(encodings), width)

        return Encoded(stack("ids"), stack("attention_mask"), stack("type_ids"))


def resource_path(resource_dir: Path | None, name: str) -> Path:
    """The existing file ``name`` inside ``resource_dir``.

    Raises:
        ArchitectureError: No ``resource_dir``, or the file does not exist there.
    """
    if resource_dir is None:
        raise ArchitectureError(
            f"this architecture needs the resource file {name!r} from the model's folder, "
            "but no resource_dir was given"
        )
    path = Path(resource_dir) / PurePosixPath(name)
    if not path.is_file():
        raise ResourceError(f"resource file {name!r} not found at {str(path)!r}", name)
    return path


def decode_texts(array: np.ndarray, input_name: str = "text") -> list[str]:
    """UTF-8 strings from a 1-D array of ``bytes`` (or ``str``).

    Raises:
        InputError: An element that is not bytes or str, or bytes that are not UTF-8.
    """
    texts = []
    for index, item in enumerate(np.asarray(array, dtype=object).reshape(-1)):
        if isinstance(item, (bytes, bytearray, np.bytes_)):
            try:
                item = bytes(item).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"input {input_name!r} element {index} is not valid UTF-8: {exc}") from None
        elif not isinstance(item, str):
            raise InputError(
                f"input {input_name!r} element {index} is {type(item).__name__}; expected bytes (BYTES)"
            )
        texts.append(str(item))
    return texts


def _import_tokenizers() -> Any:
    try:
        import tokenizers
    except ImportError:
        raise ArchitectureError(
            "text models need the 'tokenizers' package: pip install tokenizers"
        ) from None
    return tokenizers
