"""A pickle interpreter that builds only plain data and allow-listed objects.

It never calls ``pickle.load``. It executes the opcodes that plain containers,
numbers and strings need, plus four that reach outside: ``GLOBAL`` and
``STACK_GLOBAL`` resolve a name through an allow-list (anything else is
refused, by name, before it can run), ``REDUCE`` calls only what that list
returned, ``BUILD`` only sets attributes on an ``OrderedDict`` (torch's
``state_dict._metadata``), and ``BINPERSID`` hands the id to a callback.
Every other opcode (``INST``, ``OBJ``, ``NEWOBJ``, extensions, buffers, the
text protocol's opcodes) is refused. Declared lengths are checked against the
bytes left before reading, so nothing is allocated on a lie, and each opcode
consumes input, so nothing loops.
"""

from __future__ import annotations

import _compat_pickle
import pickletools
import struct
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, BinaryIO

from mininn.serialization._errors import CheckpointError

__all__ = ["Unpickler"]

_OPNAMES = {ord(op.code): op.name for op in pickletools.opcodes}
_MAX_PROTOCOL = 5
_MAX_NAME = 1024  # bytes in a GLOBAL's module or name line
_DICTS = (dict, OrderedDict)


class Unpickler:
    """Restricted interpreter for one pickle read from ``stream``.

    Args:
        stream: binary file positioned at the pickle's first byte; after
            ``load`` it is positioned just past ``STOP``.
        limit: bytes available from the current position (reads past it are
            a truncation).
        allowed: ``(module, name) -> object`` for every global the pickle may
            reference. ``REDUCE`` may call those in ``callables``.
        callables: the allowed objects that ``REDUCE`` may call.
        persistent_load: called with the id of each ``BINPERSID``.
    """

    def __init__(
        self,
        stream: BinaryIO,
        limit: int,
        *,
        allowed: Mapping[tuple[str, str], object],
        callables: frozenset[int],
        persistent_load: Callable[[Any], Any],
    ) -> None:
        self._stream = stream
        self._left = limit
        self._pos = 0
        self._allowed = allowed
        self._callables = callables
        self._persistent_load = persistent_load
        self._stack: list[Any] = []
        self._marks: list[int] = []
        self._memo: dict[int, Any] = {}

    def load(self) -> Any:
        """Run the pickle and return its value.

        Raises:
            CheckpointError: the pickle is truncated, malformed, uses a refused
                opcode or global, or an allowed callable rejected its arguments.
        """
        while True:
            at = self._pos
            code = self._read(1)[0]
            handler = _HANDLERS.get(code)
            if code == _STOP:
                return self._finish(at)
            if handler is None:
                raise CheckpointError(f"refused pickle opcode {_OPNAMES.get(code, hex(code))} at byte {at}")
            try:
                handler(self)
            except CheckpointError:
                raise
            except (IndexError, KeyError, TypeError, ValueError, OverflowError, RecursionError) as e:
                raise CheckpointError(
                    f"malformed pickle at byte {at} ({_OPNAMES[code]}): {e!r:.200}"
                ) from None

    def _finish(self, at: int) -> Any:
        if len(self._stack) != 1 or self._marks:
            raise CheckpointError(
                f"malformed pickle: STOP at byte {at} with {len(self._stack)} values on the stack"
            )
        return self._stack.pop()

    # ---- input ----------------------------------------------------------------------
    def _read(self, n: int) -> bytes:
        if n > self._left:
            raise CheckpointError(
                f"truncated pickle: {n} bytes needed at byte {self._pos}, {self._left} left"
            )
        data = self._stream.read(n)
        if len(data) != n:
            raise CheckpointError(f"truncated pickle: {n} bytes needed at byte {self._pos}, got {len(data)}")
        self._pos += n
        self._left -= n
        return data

    def _unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self._read(struct.calcsize(fmt)))[0]

    def _line(self) -> str:
        limit = min(_MAX_NAME, self._left)
        line = self._stream.readline(limit)
        self._pos += len(line)
        self._left -= len(line)
        if not line.endswith(b"\n"):
            raise CheckpointError(
                f"malformed pickle: GLOBAL name at byte {self._pos} is unterminated or too long"
            )
        return line[:-1].decode("utf-8")

    # ---- stack ----------------------------------------------------------------------
    def _push(self, value: Any) -> None:
        self._stack.append(value)

    def _pop(self) -> Any:
        if self._marks and len(self._stack) <= self._marks[-1]:
            raise CheckpointError(f"malformed pickle: stack underflow at byte {self._pos}")
        return self._stack.pop()

    def _pop_mark(self) -> list[Any]:
        start = self._marks.pop()
        items = self._stack[start:]
        del self._stack[start:]
        return items

    def _target(self, kinds: tuple[type, ...], what: str) -> Any:
        target = self._stack[-1]
        if type(target) not in kinds:
            raise CheckpointError(f"refused pickle: {what} on {type(target).__name__} at byte {self._pos}")
        return target

    # ---- opcodes --------------------------------------------------------------------
    def _proto(self) -> None:
        version = self._read(1)[0]
        if version > _MAX_PROTOCOL:
            raise CheckpointError(f"unsupported pickle protocol {version}")

    def _frame(self) -> None:
        size = self._unpack("<Q")
        if size > self._left:
            raise CheckpointError(f"truncated pickle: frame of {size} bytes, {self._left} left")

    def _mark(self) -> None:
        self._marks.append(len(self._stack))

    def _pop_op(self) -> None:
        if self._marks and len(self._stack) == self._marks[-1]:
            self._marks.pop()
        else:
            self._pop()

    def _long(self, width: str) -> None:
        n = self._unpack(width)
        if n < 0:
            raise CheckpointError(f"malformed pickle: negative LONG length at byte {self._pos}")
        self._push(int.from_bytes(self._read(n), "little", signed=True))

    def _text(self, width: str) -> None:
        self._push(self._read(self._unpack(width)).decode("utf-8", "surrogatepass"))

    def _bytes(self, width: str) -> None:
        self._push(self._read(self._unpack(width)))

    def _tuple_n(self, n: int) -> None:
        items = self._stack[-n:]
        if len(items) != n or (self._marks and len(self._stack) - n < self._marks[-1]):
            raise CheckpointError(f"malformed pickle: stack underflow at byte {self._pos}")
        del self._stack[-n:]
        self._push(tuple(items))

    def _append(self) -> None:
        value = self._pop()
        self._target((list,), "APPEND").append(value)

    def _appends(self) -> None:
        items = self._pop_mark()
        self._target((list,), "APPENDS").extend(items)

    def _setitem(self) -> None:
        value = self._pop()
        key = self._pop()
        self._target(_DICTS, "SETITEM")[key] = value

    def _setitems(self) -> None:
        items = self._pop_mark()
        if len(items) % 2:
            raise CheckpointError(f"malformed pickle: odd number of items for SETITEMS at byte {self._pos}")
        target = self._target(_DICTS, "SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _additems(self) -> None:
        items = self._pop_mark()
        self._target((set,), "ADDITEMS").update(items)

    def _dict(self) -> None:
        items = self._pop_mark()
        if len(items) % 2:
            raise CheckpointError(f"malformed pickle: odd number of items for DICT at byte {self._pos}")
        self._push({items[i]: items[i + 1] for i in range(0, len(items), 2)})

    def _put(self, width: str) -> None:
        self._memo[self._unpack(width)] = self._stack[-1]

    def _memoize(self) -> None:
        self._memo[len(self._memo)] = self._stack[-1]

    def _get(self, width: str) -> None:
        index = self._unpack(width)
        if index not in self._memo:
            raise CheckpointError(f"malformed pickle: memo key {index} missing at byte {self._pos}")
        self._push(self._memo[index])

    def _global(self) -> None:
        module = self._line()
        self._push(self._resolve(module, self._line()))

    def _stack_global(self) -> None:
        name = self._pop()
        module = self._pop()
        if type(module) is not str or type(name) is not str:
            raise CheckpointError(f"malformed pickle: STACK_GLOBAL needs two strings at byte {self._pos}")
        self._push(self._resolve(module, name))

    def _resolve(self, module: str, name: str) -> object:
        key = _compat_pickle.NAME_MAPPING.get((module, name)) or (
            _compat_pickle.IMPORT_MAPPING.get(module, module),
            name,
        )  # Python 2 names, which Python 3 writes at protocol 2: __builtin__.set -> builtins.set
        try:
            return self._allowed[key]
        except KeyError:
            raise CheckpointError(_refusal(module, name)) from None

    def _reduce(self) -> None:
        args = self._pop()
        func = self._pop()
        if id(func) not in self._callables:
            raise CheckpointError(f"refused pickle: REDUCE calls {func!r:.80} at byte {self._pos}")
        if type(args) is not tuple:
            raise CheckpointError(f"malformed pickle: REDUCE arguments must be a tuple at byte {self._pos}")
        self._push(func(*args))

    def _build(self) -> None:
        state = self._pop()
        target = self._stack[-1]
        if type(target) is not OrderedDict:
            raise CheckpointError(f"refused pickle: BUILD on {type(target).__name__} at byte {self._pos}")
        if type(state) is not dict or not all(type(k) is str for k in state):
            raise CheckpointError(
                f"refused pickle: BUILD state must be a dict of attributes at byte {self._pos}"
            )
        vars(target).update(state)

    def _persid(self) -> None:
        self._push(self._persistent_load(self._pop()))


_STOP = ord(pickletools.pickle.STOP)


def _op(name: str) -> int:
    return ord(getattr(pickletools.pickle, name))


_U = Unpickler
_HANDLERS: dict[int, Callable[[Unpickler], None]] = {
    _op("PROTO"): _U._proto,
    _op("FRAME"): _U._frame,
    _op("MARK"): _U._mark,
    _op("POP"): _U._pop_op,
    _op("POP_MARK"): lambda u: u._pop_mark().clear(),
    _op("DUP"): lambda u: u._push(u._stack[-1]),
    _op("NONE"): lambda u: u._push(None),
    _op("NEWTRUE"): lambda u: u._push(True),
    _op("NEWFALSE"): lambda u: u._push(False),
    _op("BININT"): lambda u: u._push(u._unpack("<i")),
    _op("BININT1"): lambda u: u._push(u._unpack("<B")),
    _op("BININT2"): lambda u: u._push(u._unpack("<H")),
    _op("LONG1"): lambda u: u._long("<B"),
    _op("LONG4"): lambda u: u._long("<i"),
    _op("BINFLOAT"): lambda u: u._push(u._unpack(">d")),
    _op("SHORT_BINUNICODE"): lambda u: u._text("<B"),
    _op("BINUNICODE"): lambda u: u._text("<I"),
    _op("BINUNICODE8"): lambda u: u._text("<Q"),
    _op("SHORT_BINBYTES"): lambda u: u._bytes("<B"),
    _op("BINBYTES"): lambda u: u._bytes("<I"),
    _op("BINBYTES8"): lambda u: u._bytes("<Q"),
    _op("EMPTY_TUPLE"): lambda u: u._push(()),
    _op("TUPLE1"): lambda u: u._tuple_n(1),
    _op("TUPLE2"): lambda u: u._tuple_n(2),
    _op("TUPLE3"): lambda u: u._tuple_n(3),
    _op("TUPLE"): lambda u: u._push(tuple(u._pop_mark())),
    _op("EMPTY_LIST"): lambda u: u._push([]),
    _op("LIST"): lambda u: u._push(u._pop_mark()),
    _op("APPEND"): _U._append,
    _op("APPENDS"): _U._appends,
    _op("EMPTY_DICT"): lambda u: u._push({}),
    _op("DICT"): _U._dict,
    _op("SETITEM"): _U._setitem,
    _op("SETITEMS"): _U._setitems,
    _op("EMPTY_SET"): lambda u: u._push(set()),
    _op("ADDITEMS"): _U._additems,
    _op("FROZENSET"): lambda u: u._push(frozenset(u._pop_mark())),
    _op("BINPUT"): lambda u: u._put("<B"),
    _op("LONG_BINPUT"): lambda u: u._put("<I"),
    _op("MEMOIZE"): _U._memoize,
    _op("BINGET"): lambda u: u._get("<B"),
    _op("LONG_BINGET"): lambda u: u._get("<I"),
    _op("GLOBAL"): _U._global,
    _op("STACK_GLOBAL"): _U._stack_global,
    _op("REDUCE"): _U._reduce,
    _op("BUILD"): _U._build,
    _op("BINPERSID"): _U._persid,
}


def _refusal(module: str, name: str) -> str:
    """Why ``module.name`` is refused; for a class (a pickled model), how to save the weights instead."""
    text = (
        f"refused pickle global {module}.{name}: checkpoints may hold only tensors "
        f"and plain containers (dict, list, tuple, str, numbers)"
    )
    is_class = name[:1].isupper() and not (module == "torch" and name.endswith("Storage"))
    if is_class:
        text += (
            f"; this file holds a pickled {module}.{name} object, as torch.save(model) writes a whole "
            "model: save its weights with torch.save(model.state_dict(), path) instead"
        )
    return text
