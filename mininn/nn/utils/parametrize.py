"""``nn.utils.parametrize``: make a parameter or buffer a function of other tensors.

``register_parametrization(module, "weight", P())`` moves ``module.weight``
into ``module.parametrizations.weight.original`` (a ``ParametrizationList``)
and turns ``weight`` into a property that returns ``P()(original)``. To do
that, the module's class is swapped for a subclass named
``Parametrized<Class>``, created for that one module, which carries the
property. Assigning ``module.weight = x`` stores ``right_inverse(x)`` in
``original``. Several parametrizations on one tensor are applied in order.
When a ``right_inverse`` returns several tensors, they are stored as
``original0``, ``original1``, ... and the first parametrization receives all
of them. State-dict keys follow the same names, e.g.
``parametrizations.weight.original``, as in torch.
"""

from __future__ import annotations

import copy
import copyreg
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mininn.autograd.grad_mode import no_grad
from mininn.nn.modules.container import ModuleDict, ModuleList
from mininn.nn.modules.module import Module
from mininn.nn.parameter import Parameter
from mininn.tensor import Tensor

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Inside the block, each parametrized tensor is computed once and then reused."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


# torch's messages when a parametrization or a right_inverse gives something other than a tensor
# of the expected dtype and shape; ``_check_like`` formats them
_NOT_A_TENSOR = "A parametrization must return a tensor. Got {type}."
_CHANGED_ON_REGISTER = (
    "Registering a parametrization may not change the {what} of the tensor, unless `unsafe` flag is "
    "enabled.\nunparametrized {what}: {want}\nparametrized {what}: {got}"
)
_CHANGED_ON_ASSIGN = (
    "The tensor returned by `right_inverse` has {what} {got} while `original` has {what} {want}"
)
_CHANGED_ON_APPEND = (
    "Registering a parametrization may not change the {what} of the tensor, unless the `unsafe` flag is "
    "enabled.\nmodule.{name}.{what}: {want}\nparametrization(module.{name}).{what}: {got}"
)
_CHANGED_BY_INVERSE_ON_APPEND = (
    "The tensor returned by parametrization.right_inverse must have the same {what} as module.{name}, "
    "unless the `unsafe` flag is enabled.\nmodule.{name}.{what}: {want}\nreturned {what}: {got}"
)


def _check_like(value: Any, dtype: Any, shape: Any, not_tensor: str, changed: str, **fields: Any) -> None:
    """Raise ``ValueError`` unless ``value`` is a tensor of ``dtype`` and ``shape`` (checked in that order).

    ``changed`` is formatted with ``what`` (``"dtype"`` or ``"shape"``), ``want``, ``got`` and ``fields``.
    """
    if not isinstance(value, Tensor):
        raise ValueError(not_tensor.format(type=type(value).__name__))
    for what, want in (("dtype", dtype), ("shape", shape)):
        got = getattr(value, what)
        if got != want:
            raise ValueError(changed.format(what=what, want=want, got=got, **fields))


def _set_data(original: Tensor, value: Tensor) -> None:
    """``original.set_(value)``: the same tensor object now holds ``value``'s array."""
    original._data = value._data


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor and its unparametrized ``original`` (or
    ``original0``, ``original1``, ... when ``right_inverse`` returns several tensors).

    Calling it computes the parametrized tensor; ``right_inverse(value)`` stores the
    originals that produce ``value``.

    Raises:
        ValueError: no modules, a ``right_inverse`` of the wrong kind, or (unless
            ``unsafe``) a parametrization that changes the tensor's dtype or shape.
    """

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = original.shape, original.dtype
        with no_grad():
            new: Any = original
            for module in reversed(self):  # type: ignore[call-overload]
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass  # a right_inverse that cannot invert keeps the original as it is
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\n"
                                 f"right_inverse(original).dtype: {new.dtype}")
            _set_data(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, tensor in enumerate(new):
                if not isinstance(tensor, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type "
                                     f"{type(tensor).__name__}.")
                if isinstance(original, Parameter):
                    tensor = Parameter(tensor, original.requires_grad)
                tensor.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", tensor)
        if not self.unsafe:
            _check_like(self(), original_dtype, original_shape, _NOT_A_TENSOR, _CHANGED_ON_REGISTER)

    def right_inverse(self, value: Tensor) -> None:
        """Store in the originals what makes the parametrized tensor equal ``value``.

        Raises:
            RuntimeError: a parametrization has no ``right_inverse``.
            ValueError: the result's dtype or shape differs from ``original``'s.
        """
        with no_grad():
            for module in reversed(self):  # type: ignore[call-overload]
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement "
                                       "right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                _check_like(
                    value, self.original.dtype, self.original.shape,
                    "`right_inverse` should return a tensor. Got {type}", _CHANGED_ON_ASSIGN,
                )
                _set_data(self.original, value)
                return
            if not isinstance(value, Sequence):
                raise ValueError("'right_inverse' must return a sequence of tensors. "
                                 f"Got {type(value).__name__}.")
            if len(value) != self.ntensors:
                raise ValueError("'right_inverse' must return a sequence of tensors of length "
                                 f"{self.ntensors}. Got a sequence of length {len(value)}.")
            for i, tensor in enumerate(value):
                original_i = getattr(self, f"original{i}")
                if not isinstance(tensor, Tensor):
                    raise ValueError(f"`right_inverse` must return a sequence of tensors. Got element {i} "
                                     f"of type {type(tensor).__name__}")
                if original_i.dtype != tensor.dtype:
                    raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype {tensor.dtype} while "
                                     f"`original{i}` has dtype {original_i.dtype}")
                _set_data(original_i, tensor)

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _default_deepcopy(self: Module, memo: dict[int, Any]) -> Module:
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    for slot in copyreg._slotnames(self.__class__):  # type: ignore[attr-defined]
        if hasattr(self, slot):
            setattr(replica, slot, copy.deepcopy(getattr(self, slot), memo))
    return replica


def _getstate(self: Module) -> Any:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(). "
        "See:\nhttps://pytorch.org/tutorials/beginner/saving_loading_models.html"
        "#saving-loading-a-general-checkpoint-for-inference-and-or-resuming-training"
    )


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own, ``Parametrized<Class>``, to carry the properties."""
    cls = module.__class__
    namespace: dict[str, Any] = {"__getstate__": _getstate}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The class ``module`` had before its first parametrization."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def _check_added(module: Module, tensor_name: str, parametrization: Module) -> None:
    """A parametrization appended to a parametrized tensor keeps its dtype and shape."""
    y = getattr(module, tensor_name)
    x = parametrization(y)
    _check_like(x, y.dtype, y.shape, _NOT_A_TENSOR, _CHANGED_ON_APPEND, name=tensor_name)
    if hasattr(parametrization, "right_inverse"):
        try:
            z = parametrization.right_inverse(x)
        except NotImplementedError:
            return
        _check_like(
            z, y.dtype, y.shape, "parametrization.right_inverse must return a tensor. Got: {type}",
            _CHANGED_BY_INVERSE_ON_APPEND, name=tensor_name,
        )


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to the original.

    Args:
        module: The module holding the parameter or buffer.
        tensor_name: Its name.
        parametrization: A module whose ``forward`` maps the original to the tensor; an
            optional ``right_inverse`` maps a tensor back (used on registration and on
            assignment).
        unsafe: Skip the checks that the dtype and shape are kept.

    Returns:
        ``module`` (now of class ``Parametrized<Class>``).

    Raises:
        ValueError: ``module`` has no tensor called ``tensor_name``, or a check failed.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_added(module, tensor_name, parametrization)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name not in module._buffers and tensor_name not in module._parameters:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
                         f"with name '{tensor_name}'")
    original = getattr(module, tensor_name)
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = parametrizations
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Make ``module.<tensor_name>`` a plain parameter or buffer again.

    Args:
        module: The parametrized module.
        tensor_name: The tensor to unparametrize.
        leave_parametrized: Keep the current parametrized value (else the original).

    Raises:
        ValueError: ``tensor_name`` is not parametrized, or ``leave_parametrized=False``
            for a tensor parametrized by several originals.
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                _set_data(original, getattr(module, tensor_name))
    elif leave_parametrized:
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                         "parametrized in terms of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Give ``to_module`` the parametrizations of ``from_module`` (all, or ``tensor_name``'s).

    The parametrization modules are shared; ``to_module``'s originals share
    ``from_module``'s values. A tensor ``to_module`` lacks is created first. Nothing
    happens when ``from_module`` is not parametrized.

    Returns:
        ``to_module``.
    """
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        originals = ["original"] if source.is_tensor else [f"original{i}" for i in range(source.ntensors)]
        with no_grad():
            for original in originals:
                _set_data(getattr(target, original), getattr(source, original))
    return to_module
