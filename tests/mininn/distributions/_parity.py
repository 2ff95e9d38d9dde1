"""``run_both`` for distributions whose gradients go through digamma's derivative: torch's trigamma is
accurate to ~5e-10 relative (checked against scipy), and entropies subtract trigamma terms ~300
times larger than their difference, so those gradients are compared at 1e-7 (atol 1e-9) while the
values keep the 1e-10 float64 tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np

from tests.mininn._tensor_parity import run_both


def run_both_trigamma(fn: Any, *arrays: np.ndarray, **kwargs: Any) -> None:
    """Values at the usual tolerance, then gradients at 1000x it in float64."""
    run_both(fn, *arrays, check_grad=False, **kwargs)
    float64 = any(a.dtype == np.float64 for a in arrays)
    run_both(fn, *arrays, scale=1000 if float64 else 1, **kwargs)
