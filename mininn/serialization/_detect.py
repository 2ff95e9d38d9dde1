"""Which format a checkpoint is in, decided from its bytes (never from its name)."""

from __future__ import annotations

from mininn.serialization._errors import CheckpointError
from mininn.serialization._io import Source
from mininn.serialization._safetensors import looks_like_safetensors
from mininn.serialization._torch_load import is_torch_zip
from mininn.serialization._zip import open_zip

__all__ = ["SUPPORTED_TEXT", "detect"]

SUPPORTED_TEXT = (
    "safetensors, npz (numpy.savez), PyTorch zip (torch.save) and legacy PyTorch "
    "(torch.save(..., _use_new_zipfile_serialization=False))"
)
_LEGACY_TORCH = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"  # pickle of torch's magic number
_PICKLE_PROTOCOLS = range(2, 6)


def detect(source: Source) -> str:
    """``"safetensors"``, ``"npz"``, ``"pt-zip"`` or ``"pt-legacy"``.

    Raises:
        CheckpointError: the bytes match none of them; the message lists the
            supported formats.
    """
    prefix = source.read_at(0, min(source.size, 512), "format signature")
    if not prefix:
        raise CheckpointError(f"empty file: expected a checkpoint in one of {SUPPORTED_TEXT}")
    if prefix.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_kind(source)
    if prefix.startswith(_LEGACY_TORCH):
        return "pt-legacy"
    if looks_like_safetensors(prefix):
        return "safetensors"
    if prefix[0] == 0x80 and len(prefix) > 1 and prefix[1] in _PICKLE_PROTOCOLS:
        return "pt-legacy"  # another pickle: the legacy loader checks the magic number
    if prefix[257:262] == b"ustar":
        raise CheckpointError("tar-format PyTorch checkpoints (torch < 0.4) are not supported")
    raise CheckpointError(
        f"unrecognized checkpoint format (first bytes {prefix[:16]!r}); supported formats: {SUPPORTED_TEXT}"
    )


def _zip_kind(source: Source) -> str:
    with open_zip(source, "zip") as zf:
        names = zf.namelist()
    if is_torch_zip(names):
        return "pt-zip"
    if all(name.endswith(".npy") for name in names):
        return "npz"
    raise CheckpointError(
        f"zip archive is neither a torch.save checkpoint (no data.pkl) nor an npz (members "
        f"{names[:3]} are not all .npy); supported formats: {SUPPORTED_TEXT}"
    )
