"""Writing PyTorch zip checkpoints, without torch, that ``torch.load(weights_only=True)`` accepts.

The archive is what ``torch.save`` writes: ``archive/data.pkl``,
``archive/byteorder``, one ``archive/data/<key>`` per storage (64-byte
aligned, uncompressed) and ``archive/version``. ``data.pkl`` is emitted
opcode by opcode at protocol 2, as torch does: torch's globals
(``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``, ...) are
written by name, so torch is never imported, and nothing but tensors and
plain containers can be written. Tensors that are views of one NumPy buffer
(tied weights, slices, transposes) share one storage, as in torch.
"""

from __future__ import annotations

import io
import pickle
import struct
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from mininn.serialization._dtypes import dtype_name
from mininn.serialization._errors import CheckpointError
from mininn.serialization._tensors import as_array, is_tensor_like
from mininn.serialization._torch_load import STORAGE_TYPES

__all__ = ["save"]

_STORAGE_CLASS = {dtype: storage for storage, dtype in STORAGE_TYPES.items()}
_ALIGNMENT = 64
_BATCH = 1000  # items per APPENDS/SETITEMS, as pickle does
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed, so equal objects give equal files


def save(obj: Any, fileobj: BinaryIO) -> None:
    """Write ``obj`` (tensors in nested dicts, lists and tuples) as a torch zip checkpoint."""
    pickler = _Pickler()
    data_pkl = pickler.dump(obj)
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        origin = zf.start_dir
        _write(zf, "archive/data.pkl", data_pkl)
        _write(zf, "archive/byteorder", b"little")
        for storage in pickler.storages:
            _write(zf, f"archive/data/{storage.key}", storage.data, align_from=origin)
        _write(zf, "archive/version", b"3\n")


def _write(zf: zipfile.ZipFile, name: str, data: bytes | np.ndarray, align_from: int | None = None) -> None:
    info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = len(data)
    zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule for a member of known size
    if align_from is not None:
        info.extra = _padding(zf.start_dir - align_from + 30 + len(name.encode()) + (20 if zip64 else 0))
    with zf.open(info, "w", force_zip64=zip64) as member:
        member.write(memoryview(data))


def _padding(data_start: int) -> bytes:
    """A zip extra field that moves a member's data to the next multiple of 64 bytes (torch's "FB" record)."""
    pad = -(data_start + 4) % _ALIGNMENT
    return b"FB" + struct.pack("<H", pad) + b"Z" * pad


@dataclass
class _Storage:
    key: str
    class_name: str  # FloatStorage, ...
    numel: int
    data: np.ndarray  # the bytes to write, 1-D uint8


class _Pickler:
    """Protocol-2 pickle writer for tensors, dicts, OrderedDicts, lists, tuples and scalars."""

    def __init__(self) -> None:
        self._out = io.BytesIO()
        self._memo: dict[int, int] = {}  # id(object) -> memo index
        self._globals: dict[str, int] = {}  # "module.name" -> memo index
        self._next_index = 0
        self._alive: list[Any] = []  # memoized objects stay referenced, so their ids stay unique
        self._roots: dict[int, _Storage] = {}
        self.storages: list[_Storage] = []

    def dump(self, obj: Any) -> bytes:
        """The pickle of ``obj``; fills ``storages`` with the tensor data to write beside it."""
        self._out.write(pickle.PROTO + b"\x02")
        try:
            self._save(obj, "obj")
        except RecursionError:
            raise CheckpointError("cannot save: the object is nested too deeply") from None
        self._out.write(pickle.STOP)
        return self._out.getvalue()

    # ---- dispatch -------------------------------------------------------------------
    def _save(self, obj: Any, path: str) -> None:
        if obj is None or type(obj) is bool:
            self._out.write(pickle.NONE if obj is None else pickle.NEWTRUE if obj else pickle.NEWFALSE)
        elif isinstance(obj, np.generic):
            self._save(obj.item(), path)
        elif isinstance(obj, int):
            self._int(int(obj))
        elif isinstance(obj, float):
            self._out.write(pickle.BINFLOAT + struct.pack(">d", obj))
        elif isinstance(obj, str):
            self._str(str(obj))
        elif id(obj) in self._memo:
            self._get(self._memo[id(obj)])
        elif isinstance(obj, bytes):
            self._bytes(obj)
        elif is_tensor_like(obj):
            self._tensor(obj, path)
        elif isinstance(obj, OrderedDict):
            self._ordered_dict(obj, path)
        elif isinstance(obj, dict):
            self._dict(obj, path)
        elif isinstance(obj, list):
            self._list(obj, path)
        elif isinstance(obj, tuple):
            self._tuple(obj, path)
        else:
            raise CheckpointError(
                f"cannot save {path}: {type(obj).__name__} is not supported in .pt checkpoints "
                f"(tensors, dict, OrderedDict, list, tuple, str, bytes, int, float, bool and None are)"
            )

    # ---- scalars --------------------------------------------------------------------
    def _int(self, value: int) -> None:
        if 0 <= value < 256:
            self._out.write(pickle.BININT1 + bytes([value]))
        elif 0 <= value < 65536:
            self._out.write(pickle.BININT2 + struct.pack("<H", value))
        elif -(2**31) <= value < 2**31:
            self._out.write(pickle.BININT + struct.pack("<i", value))
        else:
            encoded = pickle.encode_long(value)
            if len(encoded) > 255:
                raise CheckpointError(f"cannot save the integer {value:.3e}: too large")
            self._out.write(pickle.LONG1 + bytes([len(encoded)]) + encoded)

    def _str(self, value: str) -> None:
        data = value.encode("utf-8", "surrogatepass")
        self._out.write(pickle.BINUNICODE + struct.pack("<I", len(data)) + data)

    def _bytes(self, value: bytes) -> None:
        """Protocol 2 has no bytes opcode: ``_codecs.encode(text, "latin1")``, as pickle writes it."""
        self._global("_codecs", "encode")
        self._str(value.decode("latin1"))
        self._str("latin1")
        self._out.write(pickle.TUPLE2 + pickle.REDUCE)
        self._put(value)

    # ---- memo and globals ------------------------------------------------------------
    def _put(self, obj: Any) -> None:
        self._memo[id(obj)] = self._memoize()
        self._alive.append(obj)

    def _memoize(self) -> int:
        index = self._next_index
        self._next_index += 1
        if index < 256:
            self._out.write(pickle.BINPUT + bytes([index]))
        else:
            self._out.write(pickle.LONG_BINPUT + struct.pack("<I", index))
        return index

    def _get(self, index: int) -> None:
        if index < 256:
            self._out.write(pickle.BINGET + bytes([index]))
        else:
            self._out.write(pickle.LONG_BINGET + struct.pack("<I", index))

    def _global(self, module: str, name: str) -> None:
        """``GLOBAL module name`` the first time, a memo reference after that."""
        key = f"{module}.{name}"
        if key in self._globals:
            self._get(self._globals[key])
            return
        self._out.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self._globals[key] = self._memoize()

    # ---- containers -----------------------------------------------------------------
    def _tuple(self, obj: tuple[Any, ...], path: str) -> None:
        if not obj:
            self._out.write(pickle.EMPTY_TUPLE)
            return
        if len(obj) > 3:
            self._out.write(pickle.MARK)
        for i, item in enumerate(obj):
            self._save(item, f"{path}[{i}]")
        self._out.write({1: pickle.TUPLE1, 2: pickle.TUPLE2, 3: pickle.TUPLE3}.get(len(obj), pickle.TUPLE))
        self._put(obj)

    def _list(self, obj: list[Any], path: str) -> None:
        self._out.write(pickle.EMPTY_LIST)
        self._put(obj)
        for start in range(0, len(obj), _BATCH):
            self._out.write(pickle.MARK)
            for i in range(start, min(start + _BATCH, len(obj))):
                self._save(obj[i], f"{path}[{i}]")
            self._out.write(pickle.APPENDS)

    def _dict(self, obj: dict[Any, Any], path: str) -> None:
        self._out.write(pickle.EMPTY_DICT)
        self._put(obj)
        self._items(obj, path)

    def _ordered_dict(self, obj: OrderedDict[Any, Any], path: str) -> None:
        """``OrderedDict()`` then its items, then its attributes (a state_dict's ``_metadata``) by BUILD."""
        self._empty_ordered_dict()
        self._put(obj)
        self._items(obj, path)
        attributes = vars(obj)
        if attributes:
            self._dict(dict(attributes), f"{path}.__dict__")
            self._out.write(pickle.BUILD)

    def _empty_ordered_dict(self) -> None:
        self._global("collections", "OrderedDict")
        self._out.write(pickle.EMPTY_TUPLE + pickle.REDUCE)

    def _items(self, obj: dict[Any, Any], path: str) -> None:
        items = list(obj.items())
        for start in range(0, len(items), _BATCH):
            self._out.write(pickle.MARK)
            for key, value in items[start : start + _BATCH]:
                self._save(key, f"{path} key {key!r:.40}")
                self._save(value, f"{path}[{key!r}]")
            self._out.write(pickle.SETITEMS)

    # ---- tensors --------------------------------------------------------------------
    def _tensor(self, obj: Any, path: str) -> None:
        """``_rebuild_tensor_v2((storage id), offset, size, stride, False, OrderedDict())``."""
        array = as_array(obj)
        class_name = _STORAGE_CLASS[dtype_name(array.dtype, where=path)]
        storage, offset, stride = self._place(array, class_name)
        self._global("torch._utils", "_rebuild_tensor_v2")
        self._out.write(pickle.MARK)
        self._persistent_id(storage)
        self._int(offset)
        self._tuple(tuple(array.shape), path)
        self._tuple(stride, path)
        self._out.write(pickle.NEWFALSE)
        self._empty_ordered_dict()
        self._out.write(pickle.TUPLE + pickle.REDUCE)
        self._put(obj)

    def _persistent_id(self, storage: _Storage) -> None:
        self._out.write(pickle.MARK)
        self._str("storage")
        self._global("torch", storage.class_name)
        self._str(storage.key)
        self._str("cpu")
        self._int(storage.numel)
        self._out.write(pickle.TUPLE + pickle.BINPERSID)

    def _place(self, array: np.ndarray, class_name: str) -> tuple[_Storage, int, tuple[int, ...]]:
        """The storage that holds ``array``, its offset and strides in elements.

        A view of a contiguous buffer is placed in that buffer's storage, so views
        of one buffer share it; anything else gets a contiguous copy of its own.
        """
        root = _root(array)
        if _shares(array, root):
            storage = self._roots.get(id(root))
            if storage is None:
                storage = self._new_storage(class_name, root)
                self._roots[id(root)] = storage
                self._alive.append(root)
            itemsize = array.itemsize
            offset = (_address(array) - _address(root)) // itemsize
            return storage, offset, tuple(s // itemsize for s in array.strides)
        copy = np.require(array, requirements="C")  # unlike ascontiguousarray, keeps 0-d
        storage = self._new_storage(class_name, copy)
        return storage, 0, tuple(s // copy.itemsize for s in copy.strides)

    def _new_storage(self, class_name: str, buffer: np.ndarray) -> _Storage:
        flat = buffer.T if buffer.flags.f_contiguous and not buffer.flags.c_contiguous else buffer
        data = flat.reshape(-1).view(np.uint8)
        storage = _Storage(str(len(self.storages)), class_name, buffer.size, data)
        self.storages.append(storage)
        return storage


def _root(array: np.ndarray) -> np.ndarray:
    """The outermost ndarray whose memory ``array`` views."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _shares(array: np.ndarray, root: np.ndarray) -> bool:
    """Whether ``array`` can be described as (offset, strides) into ``root``'s memory."""
    itemsize = array.itemsize
    return (
        array.size > 0
        and root.dtype == array.dtype
        and (root.flags.c_contiguous or root.flags.f_contiguous)
        and all(s >= 0 and s % itemsize == 0 for s in array.strides)
        and (_address(array) - _address(root)) % itemsize == 0
    )


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]
