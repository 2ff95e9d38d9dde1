"""``AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for large vocabularies.

Frequent classes (below ``cutoffs[0]``) sit in the head next to one logit per
cluster; each rarer cluster gets a low-rank tail (``in -> in // div**(i+1)
-> cluster size``). A sample's log-probability is its head log-probability,
plus the in-cluster one for tail classes. Only the rows that land in a cluster
run through its tail.
"""

# ruff: noqa: A002 - torch names the forward argument `input`

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

from mininn._functions.join import cat
from mininn.nn.functional.activation import log_softmax
from mininn.nn.modules.container import ModuleList, Sequential
from mininn.nn.modules.linear import Linear
from mininn.nn.modules.module import Module
from mininn.tensor import Tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])

_CUTOFF_MESSAGE = (
    "cutoffs should be a sequence of unique, positive integers sorted in an increasing order, "
    "where each value is between 1 and n_classes-1"
)


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax: a head over frequent classes and clusters, low-rank tails for the rest.

    Args:
        in_features: Size of each input sample.
        n_classes: Number of classes.
        cutoffs: Increasing cluster boundaries in ``[1, n_classes - 1]``.
        div_value: Each tail's hidden size is ``in_features // div_value**(i + 1)``. Default: 4.0.
        head_bias: Give the head a bias. Default: False.
        device, dtype: Of the parameters.

    ``forward(input, target)`` returns ``(output, loss)``: each target's
    log-probability and their negative mean. ``log_prob`` gives all classes'
    log-probabilities, ``predict`` the most likely class.
    """

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(_CUTOFF_MESSAGE)
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList(
            Sequential(
                Linear(in_features, int(in_features // (div_value ** (i + 1))), bias=False,
                       device=device, dtype=dtype),
                Linear(int(in_features // (div_value ** (i + 1))), self.cutoffs[i + 1] - self.cutoffs[i],
                       bias=False, device=device, dtype=dtype),
            )
            for i in range(self.n_clusters)
        )

    def reset_parameters(self) -> None:
        """Re-draw the head's and every tail layer's parameters."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """``(output, loss)``: ``output[n] = log p(target[n] | input[n])``, ``loss = -output.mean()``."""
        _check_batch(input_, target_)
        batched = input_.ndim == 2
        x = input_ if batched else input_.unsqueeze(0)
        t = (target_ if batched else target_.unsqueeze(0))._data.astype(np.int64)
        if ((t < 0) | (t >= self.n_classes)).any():
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{int(t.min())}, {int(t.max())}] were found. "
            )
        cluster = np.searchsorted(np.asarray(self.cutoffs), t, side="right")  # 0: shortlist
        head_index = np.where(cluster == 0, t, self.shortlist_size + cluster - 1)
        head_logprob = log_softmax(self.head(x), 1)
        output = head_logprob.gather(1, Tensor(head_index[:, None])).reshape(-1)
        output = output + self._tail_logprobs(x, t, cluster)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.reshape(()), loss)

    def _tail_logprobs(self, x: Tensor, t: Any, cluster: Any) -> Tensor:
        """Each row's in-cluster log-probability (0 for shortlist rows), in row order."""
        n = t.shape[0]
        rows = [np.flatnonzero(cluster == 0)]
        parts = [x.new_zeros(len(rows[0]))]
        for i in range(1, self.n_clusters + 1):
            idx = np.flatnonzero(cluster == i)
            if idx.size == 0:
                continue
            local = log_softmax(self.tail[i - 1](x.index_select(0, Tensor(idx))), 1)
            relative = Tensor((t[idx] - self.cutoffs[i - 1])[:, None])
            parts.append(local.gather(1, relative).reshape(-1))
            rows.append(idx)
        order = np.empty(n, dtype=np.int64)
        order[np.concatenate(rows)] = np.arange(n)
        return cat(parts).index_select(0, Tensor(order))

    def _full_logprob(self, x: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = log_softmax(head_output, 1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i, tail in enumerate(self.tail):
            cluster_logprob = log_softmax(tail(x), 1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` classes: ``(N, in_features) -> (N, n_classes)``."""
        return self._full_logprob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row: ``(N, in_features) -> (N)`` int64."""
        return self.log_prob(input).argmax(dim=1)


def _check_batch(input: Tensor, target: Tensor) -> None:
    if target.ndim == 1:
        if input.shape[0] != target.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch dimension.")
        if input.ndim != 2:
            raise RuntimeError(
                f"1D target tensor expects 2D input tensors, but found inputs with size {input.shape!r}"
            )
    elif target.ndim == 0:
        if input.ndim != 1:
            raise RuntimeError(
                f"0D target tensor expects 1D input tensors, but found inputs with size {input.shape!r}"
            )
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
