"""The Tensor methods of the newer tensor functions, in one table.

``_Methods`` lists them as a class body would (``tan = TR.tan``, properties,
small methods); ``install(Tensor)`` copies each onto ``Tensor`` where it does
not define that name itself, together with the in-place forms of
``inplace_math``. This keeps ``tensor.py`` to what is Tensor-specific.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mininn import _dtype
from mininn._factories import bernoulli, multinomial
from mininn._functions import arrangement as AR
from mininn._functions import bitwise as BW
from mininn._functions import blas as BL
from mininn._functions import complex as CX
from mininn._functions import cumulative as CU
from mininn._functions import inplace_math as IM
from mininn._functions import linalg as L
from mininn._functions import matrix as MX
from mininn._functions import norms as N
from mininn._functions import pointwise as PW
from mininn._functions import scatter as SC
from mininn._functions import search as SE
from mininn._functions import shape as S
from mininn._functions import solvers as SV
from mininn._functions import statistics as ST
from mininn._functions import transcendental as TR
from mininn._functions import unary as U
from mininn._functions._util import wrap_dim

if TYPE_CHECKING:
    from mininn.tensor import Tensor

__all__ = ["install"]


class _Methods:
    """Not instantiated: its attributes are the methods ``install`` binds to ``Tensor``."""

    def is_complex(self) -> bool:
        """Whether the dtype is a complex one."""
        return self._data.dtype.kind == "c"

    # ---- complex (mininn/_functions/complex.py) -------------------------------------
    real = property(CX.real)
    imag = property(CX.imag)
    conj = CX.conj
    conj_physical = CX.conj
    angle = CX.angle
    sgn = CX.sgn

    # ---- more math (transcendental.py, pointwise.py, blas.py, norms.py, matrix.py) ------
    tan = TR.tan
    asin = arcsin = TR.asin
    acos = arccos = TR.acos
    atan = arctan = TR.atan
    sinh = TR.sinh
    cosh = TR.cosh
    asinh = arcsinh = TR.asinh
    acosh = arccosh = TR.acosh
    atanh = arctanh = TR.atanh
    log2 = TR.log2
    log10 = TR.log10
    exp2 = TR.exp2
    sinc = TR.sinc
    logit = TR.logit
    atan2 = arctan2 = TR.atan2
    hypot = TR.hypot
    logaddexp = TR.logaddexp
    xlogy = TR.xlogy
    fmod = TR.fmod
    frac = TR.frac
    nan_to_num = TR.nan_to_num
    signbit = TR.signbit
    copysign = TR.copysign
    lerp = PW.lerp
    addcmul = PW.addcmul
    addcdiv = PW.addcdiv
    clamp_min = PW.clamp_min
    clamp_max = PW.clamp_max
    addmm = BL.addmm
    baddbmm = BL.baddbmm
    addbmm = BL.addbmm
    mv = BL.mv
    addmv = BL.addmv
    addr = BL.addr
    inner = BL.inner
    norm = N.norm
    dist = N.dist
    tril = MX.tril
    triu = MX.triu
    tril_ = MX.tril_
    triu_ = MX.triu_
    diagonal = MX.diagonal
    diag = MX.diag
    diag_embed = MX.diag_embed
    trace = MX.trace

    # ---- scatter and indexed writes (mininn/_functions/scatter.py) --------------------
    scatter = SC.scatter
    scatter_ = SC.scatter_
    scatter_add = SC.scatter_add
    scatter_add_ = SC.scatter_add_
    scatter_reduce = SC.scatter_reduce
    scatter_reduce_ = SC.scatter_reduce_
    index_add = SC.index_add
    index_add_ = SC.index_add_
    index_copy = SC.index_copy
    index_copy_ = SC.index_copy_
    index_fill = SC.index_fill
    index_fill_ = SC.index_fill_
    masked_scatter = SC.masked_scatter
    masked_scatter_ = SC.masked_scatter_
    take_along_dim = SC.take_along_dim

    # ---- running ops and rearrangements (cumulative.py, arrangement.py) ---------------
    cumprod = CU.cumprod
    cummax = CU.cummax
    cummin = CU.cummin
    logcumsumexp = CU.logcumsumexp
    diff = CU.diff
    repeat_interleave = AR.repeat_interleave
    rot90 = AR.rot90
    fliplr = AR.fliplr
    flipud = AR.flipud
    tensor_split = AR.tensor_split
    ravel = AR.ravel
    moveaxis = S.movedim
    swapdims = S.transpose
    unfold = AR.unfold
    cross = BL.cross
    kron = BL.kron
    erfc = TR.erfc
    erfinv = TR.erfinv
    deg2rad = TR.deg2rad
    rad2deg = TR.rad2deg
    take = SC.take
    select = SC.select
    index_put = SC.index_put
    index_put_ = SC.index_put_

    float_power = TR.float_power
    fmax = TR.fmax
    fmin = TR.fmin
    heaviside = TR.heaviside
    logaddexp2 = TR.logaddexp2
    ldexp = TR.ldexp
    gcd = TR.gcd
    lcm = TR.lcm
    bitwise_and = BW.bitwise_and
    bitwise_or = BW.bitwise_or
    bitwise_xor = BW.bitwise_xor
    bitwise_not = BW.bitwise_not
    bitwise_left_shift = BW.bitwise_left_shift
    bitwise_right_shift = BW.bitwise_right_shift
    fill_diagonal_ = MX.fill_diagonal_
    diagonal_scatter = MX.diagonal_scatter
    select_scatter = SC.select_scatter
    slice_scatter = SC.slice_scatter
    hsplit = AR.hsplit
    vsplit = AR.vsplit
    dsplit = AR.dsplit
    split_with_sizes = AR.split_with_sizes
    narrow_copy = AR.narrow_copy
    sum_to_size = ST.sum_to_size
    nanmedian = ST.nanmedian
    nanquantile = ST.nanquantile
    lgamma = TR.lgamma
    digamma = TR.digamma
    diagflat = MX.diagflat
    vdot = BL.vdot
    fix = U.trunc
    ger = L.outer
    mvlgamma = TR.mvlgamma
    frexp = TR.frexp
    nextafter = TR.nextafter
    histogram = ST.histogram
    renorm = N.renorm
    put = SC.put
    put_ = SC.put_
    as_strided = AR.as_strided
    nonzero_static = SE.nonzero_static
    unsafe_chunk = AR.unsafe_chunk
    unsafe_split = AR.unsafe_split
    unsafe_split_with_sizes = AR.unsafe_split_with_sizes

    def polygamma(self, n: int) -> Tensor:
        """The ``n``-th derivative of digamma at each element."""
        return TR.polygamma(n, self)

    def adjoint(self) -> Tensor:
        """The conjugate transpose of the last two dims."""
        return CX.conj(S.transpose(self, -2, -1))

    cov = ST.cov
    corrcoef = ST.corrcoef
    inverse = SV.inv
    cholesky = SV.cholesky_deprecated
    svd = SV.svd_v
    pinverse = SV.pinverse
    cholesky_solve = SV.cholesky_solve
    cholesky_inverse = SV.cholesky_inverse
    triangular_solve = SV.triangular_solve
    det = SV.det
    logdet = SV.logdet
    slogdet = SV.slogdet
    matrix_power = SV.matrix_power
    msort = ST.msort

    __lshift__ = BW.bitwise_left_shift
    __rshift__ = BW.bitwise_right_shift

    def pin_memory(self, device: Any = None) -> Tensor:
        """``self``: NumPy arrays need no page-locking for copies."""
        return self

    def is_pinned(self, device: Any = None) -> bool:
        """False: mininn never page-locks memory."""
        return False

    def share_memory_(self) -> Tensor:
        """``self`` (mininn tensors are not moved to shared memory; processes do not share them)."""
        return self

    def is_shared(self) -> bool:
        """False: mininn tensors live in process memory."""
        return False

    def data_ptr(self) -> int:
        """The address of the first element (of the cpu array)."""
        return int(self._data.__array_interface__["data"][0]) if self.device.type == "cpu" else 0

    # ---- order statistics and searching (statistics.py, search.py) -------------------
    median = ST.median
    kthvalue = ST.kthvalue
    mode = ST.mode
    quantile = ST.quantile
    aminmax = ST.aminmax
    nansum = ST.nansum
    nanmean = ST.nanmean
    bincount = ST.bincount
    histc = ST.histc
    unique = SE.unique
    unique_consecutive = SE.unique_consecutive
    argwhere = SE.argwhere
    isposinf = SE.isposinf
    isneginf = SE.isneginf
    isreal = SE.isreal
    mH = property(lambda self: CX.conj(S.transpose(self, -2, -1)))  # noqa: N815 - torch's name
    H = property(lambda self: CX.conj(S.t(self)))  # noqa: N815

    def stride(self, dim: int | None = None) -> Any:
        """Elements to step in each dim to reach the next element (one dim's, or all as a tuple)."""
        strides = tuple(s // self._data.itemsize for s in self._data.strides)
        return strides if dim is None else strides[wrap_dim(dim, self._data.ndim)]

    def is_signed(self) -> bool:
        """Whether the dtype holds negative numbers."""
        return self.dtype.is_signed

    def is_same_size(self, other: Tensor) -> bool:
        """Whether ``other`` has this tensor's shape."""
        return self._data.shape == other._data.shape

    def is_nonzero(self) -> bool:
        """The truth of a one-element tensor."""
        return bool(self)

    def positive(self) -> Tensor:
        """``self`` (``+x``)."""
        return self

    def cfloat(self) -> Tensor:
        """Cast to complex64."""
        return self.to(_dtype.complex64)

    def cdouble(self) -> Tensor:
        """Cast to complex128."""
        return self.to(_dtype.complex128)

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def get_device(self) -> int:
        """The CUDA device index, or -1 on the cpu."""
        dev = self.device
        return -1 if dev.type == "cpu" else (dev.index or 0)

    def bernoulli(self, p: Any = None, *, generator: Any = None) -> Tensor:
        """1 with probability ``self`` (or ``p``) elementwise, else 0."""
        return bernoulli(self, p, generator=generator)

    def multinomial(self, num_samples: int, replacement: bool = False, *, generator: Any = None) -> Tensor:
        """Category indices drawn from the rows of ``self`` (non-negative weights)."""
        return multinomial(self, num_samples, replacement, generator=generator)


_DUNDERS = ("__lshift__", "__rshift__")


def install(cls: type) -> None:
    """Bind the methods above and the in-place forms onto ``cls`` (names it defines itself win)."""
    table = {k: v for k, v in vars(_Methods).items() if not k.startswith("__") or k in _DUNDERS}
    table.update(IM.INPLACE)
    table.update(IM.SHAPE_INPLACE)
    for name, member in table.items():
        if name not in cls.__dict__:
            setattr(cls, name, member)
