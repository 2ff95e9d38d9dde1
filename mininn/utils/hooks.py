"""``RemovableHandle``: what every ``register_*hook`` returns."""

from __future__ import annotations

import itertools
from collections.abc import MutableMapping, MutableSequence
from typing import Any

__all__ = ["RemovableHandle"]

_next_id = itertools.count()


class RemovableHandle:
    """Removes a hook from the dict(s) or list it was registered in.

    ``handle.remove()`` is idempotent; ``with handle:`` removes on exit.
    ``hooks_dict`` may be a dict keyed by ``handle.id`` or a list holding the hook;
    ``extra_dict`` names further dicts (the ``with_kwargs`` markers) to clean.
    """

    def __init__(
        self,
        hooks_dict: MutableMapping[int, Any] | MutableSequence[Any],
        hook: Any = None,
        *,
        extra_dict: Any = None,
    ) -> None:
        self.id = next(_next_id)
        self._container = hooks_dict
        self._hook = hook
        if extra_dict is None:
            self._extra: tuple[Any, ...] = ()
        elif isinstance(extra_dict, (list, tuple)):
            self._extra = tuple(extra_dict)
        else:
            self._extra = (extra_dict,)

    def hooks_dict_ref(self) -> Any:
        """The dict (or list) the hook lives in, as torch's ``handle.hooks_dict_ref()``."""
        return self._container

    def remove(self) -> None:
        container = self._container
        if isinstance(container, MutableMapping):
            container.pop(self.id, None)
        else:
            for i, h in enumerate(container):
                if h is self._hook:
                    del container[i]
                    break
        for d in self._extra:
            d.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()
