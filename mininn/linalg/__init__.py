"""``mininn.linalg``: torch.linalg's norms, singular values, inverses, determinants and solvers."""

from mininn._functions.blas import linalg_cross as cross
from mininn._functions.legacy import multi_dot
from mininn._functions.linalg import matmul
from mininn._functions.norms import linalg_norm as norm
from mininn._functions.norms import matrix_norm, svdvals, vector_norm
from mininn._functions.solvers import (
    LinAlgError,
    cholesky,
    det,
    inv,
    matrix_power,
    pinv,
    slogdet,
    solve,
    solve_triangular,
    svd,
)

__all__ = [
    "LinAlgError",
    "cholesky",
    "cross",
    "det",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "multi_dot",
    "norm",
    "pinv",
    "slogdet",
    "solve",
    "solve_triangular",
    "svd",
    "svdvals",
    "vector_norm",
]
