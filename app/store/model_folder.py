"""``mininn-serve add-model``: make a model folder from a model file and its weights, checked first.

::

    mininn-serve add-model my-net --code net.py:Net --init '{"num_classes": 10}' \\
        --weights net.pt --input image:FP32:-1,3,32,32 [--output logits:FP32:-1,10] \\
        [--max-batch-size 32] [--repository DIR]
    mininn-serve add-model my-net --check [--repository DIR]

Adding builds the module from the code (``torch`` answered by mininn, as the
server does), loads the weights strictly, moves it to the configured device and
dtype and runs the warm-up forward, exactly as a server load does. Only then is
the folder written: ``model.json``, the code file and the sibling files it
imports, and version 1 as safetensors, all in a staging folder that one rename
publishes (a running server's repository watch then loads it on every worker).
Nothing is written when a step fails; the message names the step, and for a
state dict that does not fit, its missing and unexpected keys and size mismatches.

``--check`` runs the same steps on an existing folder (its newest version) and writes nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mininn
from app.errors import ServiceError
from app.runtime.versions import LoadError, assemble
from app.settings import SettingsError, load_settings
from app.store.repository import (
    TEXT_GENERATION,
    ModelRepository,
    ModelSpec,
    spec_from_document,
    validate_model_name,
)
from models.code import parse_module_ref

__all__ = ["main"]

_EXIT_OK, _EXIT_FAILED, _EXIT_USAGE = 0, 1, 2
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja")  # a language model's


class FolderError(Exception):
    """What went wrong, for the user; nothing was written."""


def main(argv: Sequence[str]) -> int:
    """Run ``add-model`` with ``argv`` (the arguments after ``add-model``); the exit code."""
    args = _parser().parse_args(list(argv))
    try:
        settings = load_settings()
    except SettingsError as exc:
        sys.stderr.write(f"mininn-serve add-model: invalid configuration\n{exc}\n")
        return _EXIT_USAGE
    repository = ModelRepository(Path(args.repository) if args.repository else settings.model_repository)
    placement = (args.device or settings.device, args.dtype or settings.dtype)
    try:
        validate_model_name(args.name)
        if args.check:
            _check_existing(repository, args.name, placement)
        else:
            _add(repository, args, placement)
    except (FolderError, ServiceError) as exc:
        message = exc.message if isinstance(exc, ServiceError) else str(exc)
        sys.stderr.write(f"mininn-serve add-model: {message}\n")
        return _EXIT_FAILED
    return _EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mininn-serve add-model",
        description="Make a model folder from a model file and its weights (checked first), "
        "or check an existing one with --check.",
    )
    parser.add_argument("name", help="the model's name in the repository")
    parser.add_argument("--code", help="FILE.py:NAME, the nn.Module class or factory function")
    parser.add_argument("--init", default="{}", help="JSON object of keyword arguments for it")
    parser.add_argument("--weights", help="the state dict: .pt/.pth (torch.save), .safetensors or .npz")
    parser.add_argument("--input", action="append", default=[], metavar="NAME:DATATYPE:SHAPE",
                        help="one per forward argument, in order, e.g. image:FP32:-1,3,32,32 "
                        "(an empty NAME takes the forward parameter's name)")
    parser.add_argument("--output", action="append", default=[], metavar="NAME:DATATYPE:SHAPE",
                        help="the outputs, in order (default: found by the warm-up forward)")
    parser.add_argument("--task", choices=[TEXT_GENERATION],
                        help="text-generation: a causal language model, forward(input_ids) -> logits; no "
                        "--input needed, and the tokenizer.json beside the code file (if any) is copied")
    parser.add_argument("--context-length", type=int,
                        help="a language model's longest sequence (default: its block_size)")
    parser.add_argument("--max-batch-size", type=int, help="largest batch per request (0: no batching)")
    parser.add_argument("--description", default="", help="one line for listings")
    parser.add_argument("--repository", help="the model repository (default: MININN_MODEL_REPOSITORY)")
    parser.add_argument("--device", help="device for the check (default: MININN_DEVICE)")
    parser.add_argument("--dtype", help="floating dtype for the check (default: MININN_DTYPE)")
    parser.add_argument("--check", action="store_true", help="check the existing folder NAME; write nothing")
    return parser


def _check_existing(repository: ModelRepository, name: str, placement: tuple[str, str]) -> None:
    spec = repository.read_spec(name)
    versions = repository.versions(name)
    weights = repository.weights_path(name, versions[-1]) if versions else None
    servable = _assemble(spec, repository.model_dir(name), weights, placement, "check")
    where = f"version {versions[-1]}" if versions else "no version yet: built without weights"
    sys.stdout.write(f"model '{name}' ({where}) loads and serves on {placement[0]}/{placement[1]}\n")
    sys.stdout.write(_describe(servable))


def _add(repository: ModelRepository, args: argparse.Namespace, placement: tuple[str, str]) -> None:
    if repository.has_model(args.name):
        raise FolderError(
            f"model '{args.name}' already exists in {repository.root}; check it with --check, upload a new "
            f"version with PUT /v2/models/{args.name}/state_dict, or remove the folder first"
        )
    code_file, spec, document = _spec_from_args(args)
    weights = Path(args.weights) if args.weights else None
    if weights is not None and not weights.is_file():
        raise FolderError(f"--weights: no file {str(weights)!r}")
    servable = _assemble(spec, code_file.parent, weights, placement, "check")
    files = _imported_files(servable, code_file.parent)
    repository.root.mkdir(parents=True, exist_ok=True)
    staging = repository.root / f".add-{args.name}-{secrets.token_hex(6)}"
    staging.mkdir()
    try:
        _write_folder(staging, code_file.parent, files, document, servable)
        _assemble(spec, staging, staging / "1" / "weights.safetensors", placement, "check of the new folder")
        try:
            os.rename(staging, repository.root / args.name)
        except OSError:
            raise FolderError(f"model '{args.name}' appeared in {repository.root} meanwhile") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    target = repository.root / args.name
    sys.stdout.write(f"wrote {target}: model.json, {', '.join(files)}, 1/weights.safetensors\n")
    sys.stdout.write(_describe(servable))
    sys.stdout.write("\nTry it on a running server:\n\n" + _client_call(args.name, servable) + "\n")


def _spec_from_args(args: argparse.Namespace) -> tuple[Path, ModelSpec, dict[str, Any]]:
    if not args.code or ":" not in args.code:
        raise FolderError("--code FILE.py:NAME is required, e.g. --code net.py:Net")
    path_text, _, attr = args.code.rpartition(":")
    code_file = Path(path_text).resolve()
    if not code_file.is_file():
        raise FolderError(f"--code: no file {path_text!r}")
    module_ref = f"{code_file.name}:{attr}"
    try:
        parse_module_ref(module_ref)
        init = json.loads(args.init)
    except json.JSONDecodeError as exc:
        raise FolderError(f"--init is not valid JSON: {exc}") from None
    except ValueError as exc:
        raise FolderError(f"--code: {exc}") from None
    if not isinstance(init, dict):
        raise FolderError("--init must be a JSON object of keyword arguments, e.g. '{\"num_classes\": 10}'")
    if not args.input and args.task is None:
        raise FolderError("give one --input NAME:DATATYPE:SHAPE per forward argument, e.g. x:FP32:-1,3,32,32")
    document: dict[str, Any] = {"module": module_ref, "init": init}
    if args.task is not None:
        document["task"] = args.task
    if args.context_length is not None:
        document["context_length"] = args.context_length
    if args.input:
        document["inputs"] = [_tensor_arg(text, "--input") for text in args.input]
    if args.output:
        document["outputs"] = [_tensor_arg(text, "--output") for text in args.output]
    if args.max_batch_size is not None:
        document["max_batch_size"] = args.max_batch_size
    if args.description:
        document["description"] = args.description
    return code_file, spec_from_document(document, "model.json"), document


def _tensor_arg(text: str, option: str) -> dict[str, Any]:
    parts = text.split(":")
    if len(parts) != 3:
        raise FolderError(f"{option} {text!r}: expected NAME:DATATYPE:SHAPE, e.g. image:FP32:-1,3,32,32")
    name, datatype, shape_text = parts
    try:
        shape = [int(d) for d in shape_text.split(",")]
    except ValueError:
        raise FolderError(f"{option} {text!r}: SHAPE must be integers and commas, e.g. -1,3,32,32") from None
    entry: dict[str, Any] = {"datatype": datatype.upper(), "shape": shape}
    if name or option == "--output":
        entry = {"name": name, **entry}
    return entry


def _assemble(spec: ModelSpec, folder: Path, weights: Path | None, placement: tuple[str, str], where: str
              ) -> Any:
    try:
        return assemble(spec, folder, weights, placement[0], placement[1], where)
    except LoadError as exc:
        raise FolderError(str(exc)) from None


def _imported_files(servable: Any, folder: Path) -> list[str]:
    """The files of ``folder`` that the model's code imported (the code file first)."""
    package = type(servable.module).__module__.rpartition(".")[0]
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if (name == package or name.startswith(package + ".")) and path:
            with contextlib.suppress(ValueError):
                found.append(str(Path(path).resolve().relative_to(folder)))
    code_file = servable.architecture.partition(":")[0]
    data = [f for f in TOKENIZER_FILES if getattr(servable, "generator", None) and (folder / f).is_file()]
    return [code_file, *sorted(f for f in set(found) if f != code_file), *data]


def _write_folder(
    staging: Path, source: Path, files: list[str], document: dict[str, Any], servable: Any
) -> None:
    for relative in files:
        target = staging / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / relative, target)
    (staging / "model.json").write_text(json.dumps(document, indent=2) + "\n")
    (staging / "1").mkdir()
    state = {key: tensor.detach().cpu() for key, tensor in servable.module.state_dict().items()}
    mininn.save(state, staging / "1" / "weights.safetensors",
                metadata={"mininn.module": document["module"], "mininn.init": json.dumps(document["init"])})
    for path in [*staging.rglob("*"), staging]:
        if path.is_file():
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())


def _describe(servable: Any) -> str:
    lines = [f"  input  {s.name}: {s.datatype} {list(s.shape)}\n" for s in servable.inputs]
    lines += [f"  output {s.name}: {s.datatype} {list(s.shape)}\n" for s in servable.outputs]
    return "".join(lines)


def _client_call(name: str, servable: Any) -> str:
    inputs = []
    for spec in servable.inputs:
        shape = [1 if d < 0 else d for d in spec.shape]
        count = 1
        for d in shape:
            count *= d
        zero = "0.0" if spec.datatype.startswith("FP") else ("False" if spec.datatype == "BOOL" else "0")
        inputs.append(f'{{"name": "{spec.name}", "datatype": "{spec.datatype}", "shape": {shape}, '
                      f'"data": [{zero}] * {count}}}')
    body = "{\"inputs\": [" + ", ".join(inputs) + "]}"
    return (
        "python3 -c 'import json, urllib.request as u; "
        f"body = {body}; "
        f'req = u.Request("http://127.0.0.1:8000/v2/models/{name}/infer", json.dumps(body).encode(), '
        '{"Content-Type": "application/json"}); '
        "print(json.load(u.urlopen(req)))'"
    )
