"""Text out of a token stream: incremental detokenisation and stop strings.

:class:`IncrementalDetokenizer` turns generated token ids into text one token
at a time. Decoding a token alone is wrong twice over: a byte-level BPE token
may hold half a UTF-8 character (it decodes to U+FFFD until the rest arrives),
and SentencePiece-style tokenizers drop a word's leading space at the start of
a decode. So, as vLLM does, each step decodes a short window of the tokens
before the new one (starting with the prompt's last few) with and without the
new token, and releases the difference once it no longer ends in U+FFFD.

:class:`StopStrings` holds text back while it could still be the start of a
stop string, so a stop string split across tokens is found, and never
released: the text ends just before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["IncrementalDetokenizer", "StopStrings"]

_REPLACEMENT = "\ufffd"
# context tokens decoded before the new ones (vLLM's INITIAL_INCREMENTAL_DETOKENIZATION_OFFSET)
_PREFIX_TOKENS = 5


class IncrementalDetokenizer:
    """The text each new token adds, decoded in the context of the tokens before it.

    Args:
        tokenizer: has ``decode(ids, skip_special_tokens=...)``; None: every text is ``""``.
        prompt_ids: the prompt; its last tokens are the first decoding context.
    """

    def __init__(self, tokenizer: Any, prompt_ids: Sequence[int]) -> None:
        self._tokenizer = tokenizer
        self._ids = list(prompt_ids[-_PREFIX_TOKENS:])
        self._prefix = 0  # start of the decoding window in self._ids
        self._read = len(self._ids)  # tokens before this one are released

    def add(self, token_id: int) -> str:
        """Record ``token_id``; the text it releases ("" while a character is incomplete)."""
        if self._tokenizer is None:
            return ""
        self._ids.append(token_id)
        before = self._decode(self._ids[self._prefix : self._read])
        after = self._decode(self._ids[self._prefix :])
        if len(after) <= len(before) or after.endswith(_REPLACEMENT):
            return ""  # nothing new yet, or half a character: wait for the next token
        new = after[len(before) :]
        self._prefix, self._read = self._read, len(self._ids)
        if self._prefix > 4 * _PREFIX_TOKENS:  # keep the list short
            drop = self._prefix - _PREFIX_TOKENS
            del self._ids[:drop]
            self._prefix -= drop
            self._read -= drop
        return new

    def flush(self) -> str:
        """The text of tokens still held back (a character left incomplete at the end decodes to U+FFFD)."""
        if self._tokenizer is None or self._read == len(self._ids):
            return ""
        before = self._decode(self._ids[self._prefix : self._read])
        after = self._decode(self._ids[self._prefix :])
        self._prefix = self._read = len(self._ids)
        return after[len(before) :] if len(after) > len(before) else ""

    def _decode(self, ids: Sequence[int]) -> str:
        return str(self._tokenizer.decode(ids, skip_special_tokens=True)) if ids else ""


class StopStrings:
    """Releases text that can no longer be part of a stop string; finds the first stop string.

    Args:
        stops: the stop strings (none: text passes straight through).
    """

    def __init__(self, stops: Sequence[str]) -> None:
        self._stops = tuple(stops)
        self._pending = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        """Add ``text``; the text now safe to release. After a stop string, :attr:`stopped` is True."""
        if not self._stops:
            return text
        pending = self._pending + text
        cut = min((i for i in (pending.find(s) for s in self._stops) if i >= 0), default=-1)
        if cut >= 0:
            self._pending, self.stopped = "", True
            return pending[:cut]
        keep = self._held_back(pending)
        self._pending = pending[len(pending) - keep :] if keep else ""
        return pending[: len(pending) - keep]

    def flush(self) -> str:
        """The text held back, released at the end of the generation (no stop string came)."""
        pending, self._pending = self._pending, ""
        return pending

    def _held_back(self, text: str) -> int:
        """Length of the longest end of ``text`` that a stop string starts with."""
        longest = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(text)), longest, -1):
                if text.endswith(stop[:n]):
                    longest = n
                    break
        return longest
