"""``torch.backends``: the switches model and training files set at import (``cudnn.benchmark = True``).

mininn runs NumPy on the cpu (CuPy on cuda) and has no cuDNN, cuBLAS TF32 or MPS backend: the
flags keep what a file sets (so reading them back answers as torch would on a machine without
those backends), and ``is_available()`` answers False. Setting a flag to a non-bool raises, and an
unknown name on ``cuda.matmul`` raises, as in torch.
"""

from __future__ import annotations

from mininn.backends import cuda, cudnn, mps

__all__ = ["cuda", "cudnn", "mps"]
