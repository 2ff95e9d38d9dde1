"""The public API of ``models`` is pinned."""

from __future__ import annotations

import models


def test_public_api_is_pinned():
    assert sorted(models.__all__) == [
        "Architecture",
        "ArchitectureError",
        "ClassifierProcessor",
        "CodeSpec",
        "ENTRY_POINT_GROUP",
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
    for name in models.__all__:
        assert getattr(models, name) is not None


def test_errors_are_value_errors():
    assert issubclass(models.ArchitectureError, ValueError)
    assert issubclass(models.InputError, ValueError)
