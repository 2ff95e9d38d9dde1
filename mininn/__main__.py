"""``python -m mininn``: a short demo that the library works (fits y = 3x + 2)."""

from __future__ import annotations

import logging

import mininn

log = logging.getLogger("mininn.demo")


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    mininn.manual_seed(0)
    x = mininn.randn(256, 1)
    y = 3 * x + 2
    w = mininn.zeros(1, 1, requires_grad=True)
    b = mininn.zeros(1, requires_grad=True)
    for _ in range(200):
        loss = ((x @ w + b - y) ** 2).mean()
        w.grad = b.grad = None
        loss.backward()
        with mininn.no_grad():
            w.add_(w.grad, alpha=-0.1)
            b.add_(b.grad, alpha=-0.1)
    log.info("fitted y = %.4f x + %.4f (loss %.2e)", w.item(), b.item(), loss.item())


if __name__ == "__main__":
    main()
