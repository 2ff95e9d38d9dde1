"""Bitwise ops on integer and bool tensors: and/or/xor/not (from ``elementwise``)
and the shifts ``bitwise_left_shift``/``bitwise_right_shift`` (``<<``, ``>>``).
"""

# ruff: noqa: A002 - torch's argument names (input, min, max) shadow builtins

from __future__ import annotations

import numpy as np

from mininn._functions import elementwise as E

bitwise_and = E.bitwise_and
bitwise_or = E.bitwise_or
bitwise_xor = E.bitwise_xor
bitwise_not = E.bitwise_not
bitwise_left_shift = E._bitwise(np.left_shift, "lshift")
bitwise_right_shift = E._bitwise(np.right_shift, "rshift")

__all__ = [
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift", "bitwise_right_shift",
]

