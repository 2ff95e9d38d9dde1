"""What a state dict whose keys do not fit a model gets told: the prefix to strip, or a short summary.

A checkpoint of a ``torch.compile``d model has ``_orig_mod.`` before every key, and one of
an ``nn.DataParallel`` or DDP model ``module.``: every key the model misses is then in the
checkpoint with that prefix before it. :func:`added_prefix` finds it, so the upload can say
``?strip_prefix=module.`` (and ``add-model`` ``--strip-prefix module.``) instead of listing
thousands of keys; :func:`summary` names a few keys of each list and how many there are.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["added_prefix", "prefix_advice", "summary"]

_SHOWN = 5  # keys named per list in a summary


def added_prefix(missing: Sequence[str], unexpected: Sequence[str]) -> str | None:
    """The prefix (ending in ``.``) that, put before every missing key, gives an unexpected key.

    None when there are no missing keys or no such prefix. Of several, the shortest.
    """
    if not missing or not unexpected:
        return None
    first, present = missing[0], set(unexpected)
    candidates = {key[: len(key) - len(first)] for key in unexpected if key.endswith("." + first)}
    for prefix in sorted(candidates, key=len):
        if all(prefix + key in present for key in missing):
            return prefix
    return None


def prefix_advice(prefix: str, count: int, fix: str) -> str:
    """The message for keys that all carry ``prefix`` (``count`` of the model's keys); ``fix`` says how."""
    return (
        f"the checkpoint's keys start with {prefix!r} ({count} of the model's keys are there with it), "
        f"as torch.compile ('_orig_mod.') and nn.DataParallel ('module.') save them; {fix}"
    )


def summary(missing: Sequence[str], unexpected: Sequence[str]) -> str:
    """``N missing key(s): a, b, ... and M unexpected key(s): ...``, naming at most a few of each."""
    parts = []
    for label, keys in (("missing", missing), ("unexpected", unexpected)):
        if keys:
            shown = ", ".join(f'"{key}"' for key in keys[:_SHOWN])
            more = f" and {len(keys) - _SHOWN} more" if len(keys) > _SHOWN else ""
            parts.append(f"{len(keys)} {label} key(s): {shown}{more}")
    return "; ".join(parts)
