"""PyTorch checkpoints written by ``torch.save``, read without importing torch.

Two layouts exist. The zip format (torch >= 1.6) holds ``<dir>/data.pkl``,
a pickle whose tensors reference storages by key through persistent ids,
and each storage's raw bytes in ``<dir>/data/<key>``. The legacy format
(``_use_new_zipfile_serialization=False``) is five pickles in a row: a magic
number, the protocol version (1001), system info, the object, the list of
storage keys; then, per key, an int64 element count and the raw bytes.

Pickles run in ``_unpickler.Unpickler`` with the allow-list below: tensor
and parameter rebuild functions, the typed storage classes (as markers in
persistent ids only), ``OrderedDict``, ``torch.Size``, and what protocol 2
needs for bytes, sets and frozensets. Tensors are NumPy views of their
storage (offset, sizes and strides as saved, bounds-checked), so tensors
that shared a storage in torch share memory here too.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from mininn._backend import device
from mininn.serialization._dtypes import numpy_dtype
from mininn.serialization._errors import CheckpointError
from mininn.serialization._io import Source, byte_view, empty_array
from mininn.serialization._tensors import to_tensor
from mininn.serialization._unpickler import Unpickler
from mininn.serialization._zip import check_sizes, open_zip, stored_data_offset
from mininn.tensor import Size, Tensor

__all__ = ["MAGIC_NUMBER", "PROTOCOL_VERSION", "STORAGE_TYPES", "load_zip", "load_legacy"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
STORAGE_TYPES = {  # torch's legacy typed storage classes -> mininn dtype names
    "BoolStorage": "bool",
    "ByteStorage": "uint8",
    "CharStorage": "int8",
    "ShortStorage": "int16",
    "IntStorage": "int32",
    "LongStorage": "int64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
}
_MAX_PICKLE_BYTES = 1 << 30
_MAX_NDIM = 64
_KEY = re.compile(r"[0-9A-Za-z_.-]{1,64}")


@dataclass(frozen=True)
class StorageType:
    """Stand-in for ``torch.FloatStorage`` and friends: only names a dtype in a persistent id."""

    name: str

    def __repr__(self) -> str:
        return f"torch.{self.name}"


@dataclass(frozen=True)
class _Storage:
    key: str
    array: np.ndarray  # 1-D, the storage's dtype


ReadStorage = Callable[[str, np.dtype, int], np.ndarray]


# ---- zip format -------------------------------------------------------------------------
def load_zip(source: Source, dev: device) -> Any:
    """Load a zip-format ``torch.save`` file."""
    with open_zip(source, "PyTorch") as zf:
        prefix = _archive_prefix(zf)
        _check_byteorder(zf, prefix)
        pickle_bytes = _read_small_member(zf, prefix + "data.pkl")

        def read_storage(key: str, dtype: np.dtype, numel: int) -> np.ndarray:
            return _read_record(source, zf, f"{prefix}data/{key}", dtype, numel)

        return _unpickle(io.BytesIO(pickle_bytes), len(pickle_bytes), _Storages(read_storage), dev)


def is_torch_zip(names: list[str]) -> bool:
    """Whether a zip's member names are those of a ``torch.save`` archive."""
    return any(_is_data_pkl(n) for n in names)


def _is_data_pkl(name: str) -> bool:
    return name == "data.pkl" or name.endswith("/data.pkl")


def _archive_prefix(zf: zipfile.ZipFile) -> str:
    names = zf.namelist()
    if any(n.endswith("/constants.pkl") for n in names):
        raise CheckpointError("this is a TorchScript archive (torch.jit.save), not a torch.save checkpoint")
    pickles = [n for n in names if _is_data_pkl(n)]
    if len(pickles) != 1:
        raise CheckpointError(f"PyTorch archive must hold exactly one data.pkl, found {pickles[:5]}")
    return pickles[0][: -len("data.pkl")]


def _check_byteorder(zf: zipfile.ZipFile, prefix: str) -> None:
    if prefix + "byteorder" not in zf.namelist():
        return  # torch < 1.11 wrote none; those files are little-endian
    order = _read_small_member(zf, prefix + "byteorder")
    if order != b"little":
        raise CheckpointError(
            f"PyTorch archive has byteorder {order[:16]!r}; only little-endian is supported"
        )


def _read_small_member(zf: zipfile.ZipFile, name: str) -> bytes:
    info = zf.getinfo(name)
    check_sizes(info, "PyTorch")
    if info.file_size > _MAX_PICKLE_BYTES:
        raise CheckpointError(f"PyTorch archive member {name!r} is {info.file_size} bytes, over the limit")
    return zf.read(info)


def _read_record(source: Source, zf: zipfile.ZipFile, name: str, dtype: np.dtype, numel: int) -> np.ndarray:
    """A storage's bytes as a fresh 1-D array, after checking its size against the archive."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise CheckpointError(
            f"PyTorch archive has no record {name!r} for a storage its pickle uses"
        ) from None
    check_sizes(info, "PyTorch")
    if info.file_size != numel * dtype.itemsize:
        raise CheckpointError(
            f"PyTorch storage {name!r} holds {info.file_size} bytes but is declared as "
            f"{numel} elements of {dtype} ({numel * dtype.itemsize} bytes)"
        )
    array = empty_array((numel,), dtype)
    buffer = byte_view(array)
    if info.compress_type == zipfile.ZIP_STORED:
        source.readinto_at(stored_data_offset(source, info), buffer, f"PyTorch storage {name!r}")
        if zlib.crc32(buffer) != info.CRC:
            raise CheckpointError(f"PyTorch storage {name!r} is corrupt: CRC mismatch")
    else:
        with zf.open(info) as f:  # zipfile checks the CRC at the end
            if f.readinto(buffer) != len(buffer) or f.read(1):
                raise CheckpointError(f"PyTorch storage {name!r} does not hold its declared size")
    return array


# ---- legacy format ----------------------------------------------------------------------
def load_legacy(source: Source, dev: device) -> Any:
    """Load a legacy (pre-1.6, ``_use_new_zipfile_serialization=False``) ``torch.save`` file."""
    f = source.fileobj
    f.seek(0)
    if _plain_pickle(source) != MAGIC_NUMBER:
        raise CheckpointError("not a PyTorch checkpoint: the legacy magic number is wrong")
    version = _plain_pickle(source)
    if version != PROTOCOL_VERSION:
        raise CheckpointError(f"unsupported legacy PyTorch protocol version {version!r:.40}")
    _check_sys_info(_plain_pickle(source))
    allocated = 0

    def new_storage(key: str, dtype: np.dtype, numel: int) -> np.ndarray:
        nonlocal allocated
        allocated += numel * dtype.itemsize
        if allocated > source.size - f.tell():
            raise CheckpointError(
                f"legacy PyTorch storage {key!r} declares {numel} elements of {dtype}: "
                f"{allocated} storage bytes in all, more than the file's remaining {source.size - f.tell()}"
            )
        return empty_array((numel,), dtype)

    storages = _Storages(new_storage)
    result = _unpickle(f, source.size - f.tell(), storages, dev)
    _fill_legacy_storages(source, _plain_pickle(source), storages.roots)
    return result


def _plain_pickle(source: Source) -> Any:
    """One pickle of plain data (no globals, no persistent ids) from the current position."""
    f = source.fileobj
    return Unpickler(
        f, source.size - f.tell(), allowed={}, callables=frozenset(), persistent_load=_no_persistent_ids
    ).load()


def _no_persistent_ids(pid: object) -> Any:
    raise CheckpointError(f"unexpected persistent id {pid!r:.80} in a legacy PyTorch header")


def _check_sys_info(info: object) -> None:
    if not isinstance(info, dict):
        raise CheckpointError(f"legacy PyTorch system info must be a dict, got {type(info).__name__}")
    if info.get("little_endian") is not True:
        raise CheckpointError("legacy PyTorch checkpoint is big-endian; only little-endian is supported")


def _fill_legacy_storages(source: Source, keys: object, roots: dict[str, _Storage]) -> None:
    if not isinstance(keys, list) or not all(type(k) is str for k in keys) or sorted(keys) != sorted(roots):
        raise CheckpointError(
            f"legacy PyTorch storage keys {keys!r:.200} do not match the storages the pickle uses"
        )
    offset = source.fileobj.tell()
    for key in keys:
        array = roots[key].array
        (numel,) = struct.unpack("<q", source.read_at(offset, 8, f"legacy storage {key!r} size"))
        if numel != array.size:
            raise CheckpointError(
                f"legacy PyTorch storage {key!r} holds {numel} elements, declared {array.size}"
            )
        source.readinto_at(offset + 8, byte_view(array), f"legacy storage {key!r}")
        offset += 8 + array.nbytes


# ---- persistent ids: storages -----------------------------------------------------------
class _Storages:
    """``persistent_load`` for torch's ``("storage", type, key, location, numel[, view])`` ids."""

    def __init__(self, read: ReadStorage) -> None:
        self._read = read
        self.roots: dict[str, _Storage] = {}
        self._views: dict[str, _Storage] = {}

    def __call__(self, pid: object) -> _Storage:
        if type(pid) is not tuple or len(pid) not in (5, 6) or pid[0] != "storage":
            raise CheckpointError(f"unsupported persistent id {pid!r:.120} in PyTorch pickle")
        storage_type, key, _location, numel = pid[1:5]
        if not isinstance(storage_type, StorageType):
            raise CheckpointError(f"persistent id names {storage_type!r:.80} instead of a storage type")
        if type(key) is not str or not _KEY.fullmatch(key) or type(numel) is not int or numel < 0:
            raise CheckpointError(f"malformed storage id: key {key!r:.80}, numel {numel!r:.40}")
        dtype = numpy_dtype(STORAGE_TYPES[storage_type.name], where=f"storage {key!r}")
        root = self._root(key, dtype, numel)
        view = pid[5] if len(pid) == 6 else None
        return root if view is None else self._view(root, view)

    def _root(self, key: str, dtype: np.dtype, numel: int) -> _Storage:
        if key in self.roots:
            root = self.roots[key]
            if root.array.dtype != dtype or root.array.size != numel:
                raise CheckpointError(
                    f"storage {key!r} is used as {numel} x {dtype} "
                    f"and as {root.array.size} x {root.array.dtype}"
                )
            return root
        root = _Storage(key, self._read(key, dtype, numel))
        self.roots[key] = root
        return root

    def _view(self, root: _Storage, view: object) -> _Storage:
        """A legacy storage view: ``(view_key, offset, size)`` elements of ``root``."""
        if (
            type(view) is not tuple
            or len(view) != 3
            or not all(type(v) is t for v, t in zip(view, (str, int, int)))
        ):
            raise CheckpointError(f"malformed storage view {view!r:.120}")
        key, offset, size = view
        if offset < 0 or size < 0 or offset + size > root.array.size:
            raise CheckpointError(
                f"storage view {key!r} [{offset}, {offset + size}) exceeds storage {root.key!r} "
                f"of {root.array.size} elements"
            )
        if key not in self._views:
            self._views[key] = _Storage(key, root.array[offset : offset + size])
        return self._views[key]


# ---- the allow-list: what a pickle may call ---------------------------------------------
def _unpickle(stream: Any, limit: int, storages: _Storages, dev: device) -> Any:
    rebuild = _Rebuild(dev)
    allowed = rebuild.allowed()
    callables = frozenset(id(obj) for obj in allowed.values() if not isinstance(obj, StorageType))
    unpickler = Unpickler(stream, limit, allowed=allowed, callables=callables, persistent_load=storages)
    return unpickler.load()


class _Rebuild:
    """The functions a torch pickle may call, as mininn implements them."""

    def __init__(self, dev: device) -> None:
        self._device = dev

    def allowed(self) -> dict[tuple[str, str], object]:
        table: dict[tuple[str, str], object] = {
            ("torch._utils", "_rebuild_tensor_v2"): self.tensor_v2,
            ("torch._utils", "_rebuild_tensor"): self.tensor,
            ("torch._utils", "_rebuild_parameter"): self.parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): self.parameter_with_state,
            ("torch", "Size"): _size,
            ("collections", "OrderedDict"): _ordered_dict,
            ("_codecs", "encode"): _encode,
            ("builtins", "set"): _container(set),
            ("builtins", "frozenset"): _container(frozenset),
        }
        table.update({("torch", name): StorageType(name) for name in STORAGE_TYPES})
        return table

    def tensor_v2(
        self,
        storage: object,
        storage_offset: object,
        size: object,
        stride: object,
        requires_grad: object = False,
        backward_hooks: object = None,
        metadata: object = None,
    ) -> Tensor:
        """``torch._utils._rebuild_tensor_v2``: a strided view of a storage."""
        if metadata:
            raise CheckpointError(
                f"tensor metadata {metadata!r:.80} (conjugate/negative bits) is not supported"
            )
        if type(requires_grad) is not bool:
            raise CheckpointError(f"requires_grad must be a bool, got {requires_grad!r:.40}")
        array = _strided_view(storage, storage_offset, size, stride)
        return to_tensor(
            array, self._device, requires_grad=requires_grad, where=f"tensor in storage {storage.key!r}"
        )

    def tensor(self, storage: object, storage_offset: object, size: object, stride: object) -> Tensor:
        """``torch._utils._rebuild_tensor`` (older files)."""
        return self.tensor_v2(storage, storage_offset, size, stride)

    def parameter(self, data: object, requires_grad: object, backward_hooks: object) -> Tensor:
        """``torch._utils._rebuild_parameter``: loaded as a Tensor that keeps ``requires_grad``."""
        if not isinstance(data, Tensor) or type(requires_grad) is not bool:
            raise CheckpointError(
                f"malformed parameter: data {type(data).__name__}, requires_grad {requires_grad!r:.40}"
            )
        if requires_grad and not (data.dtype.is_floating_point):
            raise CheckpointError(f"only floating point parameters can require gradients, got {data.dtype}")
        data.requires_grad = requires_grad
        return data

    def parameter_with_state(
        self, data: object, requires_grad: object, backward_hooks: object, state: object
    ) -> Tensor:
        """``torch._utils._rebuild_parameter_with_state``; Python attributes on parameters are refused."""
        if state:
            raise CheckpointError(f"parameter attributes {state!r:.80} are not supported")
        return self.parameter(data, requires_grad, backward_hooks)


def _strided_view(storage: object, offset: object, size: object, stride: object) -> np.ndarray:
    """``storage[offset]`` viewed with torch sizes and strides (in elements), bounds-checked."""
    if not isinstance(storage, _Storage):
        raise CheckpointError(f"tensor storage must come from a persistent id, got {type(storage).__name__}")
    if not (_is_dims(size) and _is_dims(stride) and len(size) == len(stride)):
        raise CheckpointError(
            f"tensor in storage {storage.key!r} has invalid size {size!r:.80} / stride {stride!r:.80}"
        )
    if type(offset) is not int or offset < 0:
        raise CheckpointError(f"tensor in storage {storage.key!r} has invalid storage offset {offset!r:.40}")
    numel = storage.array.size
    if 0 in size:
        last = offset - 1  # an empty tensor reads nothing; its offset may be the storage's end
    else:
        last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if offset > numel or last >= numel:
        raise CheckpointError(
            f"tensor of size {tuple(size)}, stride {tuple(stride)}, offset {offset} reads element {last} "
            f"of storage {storage.key!r}, which has {numel}"
        )
    itemsize = storage.array.itemsize
    return np.lib.stride_tricks.as_strided(
        storage.array[offset:], shape=tuple(size), strides=tuple(s * itemsize for s in stride)
    )


def _is_dims(value: object) -> bool:
    return (
        isinstance(value, tuple) and len(value) <= _MAX_NDIM and all(type(v) is int and v >= 0 for v in value)
    )


def _size(dims: object = ()) -> Size:
    """``torch.Size``."""
    if not _is_dims(dims):
        raise CheckpointError(f"torch.Size needs a tuple of non-negative ints, got {dims!r:.80}")
    return Size(dims)


def _ordered_dict(items: object = ()) -> OrderedDict[Any, Any]:
    """``collections.OrderedDict``; items usually arrive afterwards through SETITEMS."""
    if type(items) not in (tuple, list) or not all(type(p) is tuple and len(p) == 2 for p in items):
        raise CheckpointError(f"OrderedDict needs (key, value) pairs, got {items!r:.80}")
    return OrderedDict(items)


def _encode(text: object, encoding: object = "utf-8") -> bytes:
    """``_codecs.encode``: how protocol 2 pickles bytes."""
    if type(text) is not str or encoding not in ("latin1", "latin-1"):
        raise CheckpointError(f"_codecs.encode is allowed only for bytes (latin1), got {encoding!r:.40}")
    return text.encode("latin1")


def _container(kind: type) -> Callable[..., Any]:
    def make(items: object = ()) -> Any:
        if type(items) not in (list, tuple):
            raise CheckpointError(f"{kind.__name__} needs a list, got {type(items).__name__}")
        return kind(items)

    make.__name__ = kind.__name__
    return make
