"""models: the model zoo. Architectures by name, their V2 signatures, and the demo checkpoints.

Public API (what the service relies on)::

    models.available() -> list[str]                 # sorted architecture names
    models.create(name, **config) -> mininn.nn.Module
    models.get_architecture(name) -> Architecture   # .name .config_cls .build(config)
                                                    # .signature(config) .processor .batchable
    models.servable(name, config, *, resource_dir=None) -> Servable
    models.register(Architecture(...)) / @models.register(name, config_cls=..., signature=...)
    models.unregister(name)
    models.seed_repository(path, *, names=None) -> list[str]
    models.code_servable(folder, CodeSpec(module, init, inputs, outputs)) -> Servable   # model.py code
    models.load_plugins(group=ENTRY_POINT_GROUP) -> {name: reason}                       # run at import

- ``create`` and ``get_architecture`` raise :class:`ArchitectureError` (a ``ValueError``) for an
  unknown name, listing the available names; a bad config key or value raises it naming the
  key and the accepted keys, e.g. ``unknown config key 'hiden' for architecture 'mlp';
  accepted keys: activation, dropout, hidden_sizes, in_features, out_features``.
- A config is a frozen dataclass (``Architecture.config_cls``); JSON lists are accepted for
  tuple fields and ``config_to_dict`` gives the JSON form back.
- ``Signature(inputs, outputs)`` holds :class:`TensorSpec` ``(name, datatype, shape)`` with V2
  datatypes (``"FP32"``, ``"FP16"``, ``"FP64"``, ``"INT64"``, ``"INT32"``, ``"BOOL"``,
  ``"BYTES"``) and ``-1`` for the batch dimension.
- ``Servable`` has ``.architecture`` (name), ``.config`` (dataclass), ``.module`` (the service
  loads weights into it, moves it to its device and dtype, calls ``eval()``), ``.inputs`` /
  ``.outputs`` (TensorSpecs), ``.batchable``, ``.example_inputs(batch_size=1)`` and
  ``.predict(inputs)``: a dict of host arrays keyed by input name (batch first; ``BYTES``
  as object arrays of ``bytes``) -> preprocess -> ``module(...)`` -> postprocess -> a dict of
  host arrays keyed by output name. ``predict`` does not switch off autograd: wrap it in
  ``mininn.no_grad()``. Inputs that do not fit the signature raise :class:`InputError`.
- ``resource_dir`` is the model's folder; architectures that need files find them there by
  config key (``minilm``/``bert_encoder``: ``"tokenizer": "tokenizer.json"``).
- ``seed_repository`` writes the demo models (``digits``, ``minilm``) that the repository
  does not have yet, never overwriting, and returns the names written.

Architectures: ``mlp``, ``simple_cnn``, ``zebranet``, ``lenet5``, ``resnet18``, ``resnet34``,
``bert_encoder``, ``minilm``, ``llama`` (``Servable.generator``: text generation); each in its
own file with state-dict keys of its reference implementation.
"""

from models import bert, lenet5, llama, mlp, resnet, simple_cnn, zebranet  # noqa: F401 - they register
from models.code import CodeSpec, ModelCodeError, code_servable
from models.config import config_to_dict
from models.demos import seed_repository
from models.errors import ArchitectureError, InputError, ResourceError
from models.plugins import ENTRY_POINT_GROUP, load_plugins
from models.processing import ClassifierProcessor, Processor
from models.registry import Architecture, available, create, get_architecture, register, unregister
from models.serving import Servable, servable
from models.signature import Signature, TensorSpec

__all__ = [
    "Architecture",
    "ArchitectureError",
    "ClassifierProcessor",
    "ENTRY_POINT_GROUP",
    "CodeSpec",
    "InputError",
    "ModelCodeError",
    "Processor",
    "ResourceError",
    "Servable",
    "Signature",
    "TensorSpec",
    "available",
    "code_servable",
    "config_to_dict",
    "create",
    "get_architecture",
    "load_plugins",
    "register",
    "seed_repository",
    "servable",
    "unregister",
]

plugin_failures = load_plugins()  # {entry point: reason}; each is logged
