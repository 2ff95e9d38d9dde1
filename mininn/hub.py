"""``torch.hub`` on mininn: weights from the local hub cache; nothing is downloaded, no code fetched.

Model files often build a pretrained model with
``torch.hub.load_state_dict_from_url(url)`` (or ``torch.utils.model_zoo.load_url``).
mininn reads the file where torch keeps its downloads,
``<hub dir>/checkpoints/<file name from the URL>`` (the hub dir is
``$TORCH_HOME/hub``, ``TORCH_HOME`` defaulting to ``$XDG_CACHE_HOME/torch``,
i.e. ``~/.cache/torch``; ``model_dir=`` and ``file_name=`` as torch's), with
mininn's checkpoint loader (:func:`mininn.load`: torch's zip and legacy formats,
safetensors, npz; weights only). When the file is not there it raises
:class:`DownloadRefusedError`: a server does not download; upload the weights as
the model's state dict instead, or put the file in the cache.

``torch.hub.load``/``list``/``help`` fetch and run a repository's code; mininn
refuses them (:class:`DownloadRefusedError` too).
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlparse

from mininn.serialization import load as _load_checkpoint

__all__ = [
    "DownloadRefusedError",
    "download_url_to_file",
    "get_dir",
    "help",
    "list",
    "load",
    "load_state_dict_from_url",
    "set_dir",
]

HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")  # torch's: the sha256 prefix in 'resnet18-f37072fd.pth'

_hub_dir: str | None = None


class DownloadRefusedError(RuntimeError):
    """A download (or a hub repository's code) was asked for; mininn reads only local files."""


def _get_torch_home() -> str:
    """``$TORCH_HOME``, else ``$XDG_CACHE_HOME/torch``, else ``~/.cache/torch``."""
    default = os.path.join(os.getenv("XDG_CACHE_HOME", "~/.cache"), "torch")
    return os.path.expanduser(os.getenv("TORCH_HOME", default))


def get_dir() -> str:
    """The hub cache folder: what ``set_dir`` set, else ``$TORCH_HOME/hub``."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike[str]) -> None:
    """Use ``d`` (``~`` expanded) as the hub cache folder from now on, in this process."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def load_state_dict_from_url(
    url: str,
    model_dir: str | None = None,
    map_location: Any = None,
    progress: bool = True,
    check_hash: bool = False,
    file_name: str | None = None,
    weights_only: bool = False,
) -> dict[str, Any]:
    """The checkpoint that torch would have downloaded from ``url``, read from the local hub cache.

    Args:
        url: where torch downloads it from; only its file name is used here.
        model_dir: the folder to look in (default ``<get_dir()>/checkpoints``).
        map_location: a device or its name (default CPU). torch's per-storage forms
            (a function or a dict, e.g. ``lambda storage, loc: storage``) load onto
            the CPU.
        progress: accepted (nothing is downloaded).
        check_hash: accepted; torch checks the hash only when it downloads.
        file_name: the cached file's name, instead of the one in ``url``.
        weights_only: accepted; mininn always loads tensors and plain containers only.

    Returns:
        What :func:`mininn.load` returns for the file (usually a state dict).

    Raises:
        DownloadRefusedError: the file is not in the cache (the message names the
            path it looked for and says to upload the weights instead).
        CheckpointError: the cached file is not a checkpoint mininn reads.
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    filename = file_name if file_name is not None else os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.isfile(cached_file):
        raise DownloadRefusedError(
            f"{url} is not in the hub cache ({cached_file} does not exist), and mininn does not download: "
            "upload the weights as the model's state dict instead, or put the file at that path"
        )
    device = _device_of(map_location)
    legacy = _legacy_zip_member(cached_file)
    if legacy is not None:
        return _load_checkpoint(io.BytesIO(legacy), map_location=device)  # type: ignore[no-any-return]
    return _load_checkpoint(cached_file, map_location=device)  # type: ignore[no-any-return]


def _device_of(map_location: Any) -> Any:
    """``map_location`` as mininn.load takes it: torch's per-storage forms (a function, a dict) mean CPU."""
    return None if callable(map_location) or isinstance(map_location, Mapping) else map_location


def _legacy_zip_member(path: str) -> bytes | None:
    """The checkpoint inside an old-style hub zip (one file zipped, not torch's zip format), else None."""
    if not zipfile.is_zipfile(path):
        return None
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
        if len(members) != 1 or members[0].is_dir() or members[0].filename.endswith(".npy"):
            return None  # torch's own zip has several members; a one-array .npz is an npz
        return archive.read(members[0])


def _refuse_code(what: str, repo: str) -> DownloadRefusedError:
    return DownloadRefusedError(
        f"torch.hub.{what} fetches and runs the code of {repo!r}, which mininn does not do: put the model's "
        "code in model.py beside the weights (build it there), and upload its state dict"
    )


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github", trust_repo: Any = "check",
         force_reload: bool = False, verbose: bool = True, skip_validation: bool = False,
         **kwargs: Any) -> Any:
    """Refuse: mininn runs no code from a hub repository.

    Raises:
        DownloadRefusedError: always; the message says what to do instead.
    """
    raise _refuse_code("load", repo_or_dir)


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001 - torch's name
         trust_repo: Any = "check", verbose: bool = True) -> Any:
    """Refuse: mininn fetches no hub repository.

    Raises:
        DownloadRefusedError: always.
    """
    raise _refuse_code("list", github)


def help(github: str, model: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check") -> Any:
    """Refuse: mininn fetches no hub repository.

    Raises:
        DownloadRefusedError: always.
    """
    raise _refuse_code("help", github)


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None, progress: bool = True) -> None:
    """Refuse: mininn downloads nothing.

    Raises:
        DownloadRefusedError: always; the message names the destination to fill by hand.
    """
    raise DownloadRefusedError(
        f"mininn does not download {url}: upload the weights as the model's state dict instead, "
        f"or put the file at {dst}"
    )
