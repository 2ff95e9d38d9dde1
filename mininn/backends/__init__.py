"""``torch.backends`` as model files touch it: flags set at the top of a file, availability queries.

``torch.backends.cudnn.benchmark = True`` and ``torch.backends.cuda.matmul.allow_tf32 =
False`` are kernel-selection switches for torch's vendor libraries. mininn computes with
NumPy (or CuPy) and uses none of those libraries, so the flags are kept, readable and
settable, and change nothing; the availability queries answer False.
"""

from mininn.backends import cuda, cudnn, mkldnn, mps, openmp

__all__ = ["cuda", "cudnn", "mkldnn", "mps", "openmp"]
