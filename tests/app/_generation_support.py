"""A real server of text-generation models for the protocol tests (HTTP and gRPC on free ports).

``start_generation_server`` runs ``python _generation_models.py`` (the app, with the
``test-tiny-lm`` architecture) on :func:`_generation_models.generation_repository`, in
float64 (so the tiny model's greedy tokens match the reference loop's exactly), with
``WRITE_KEY`` as the write key. ``reference_text`` is what greedy decoding of a model
there gives, computed in this process from the same weights without the engine.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from _app_support import WRITE_KEY, Server, free_port, run_server

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "runtime"))

from _generation_models import TinyLMConfig, build, generation_repository  # noqa: E402
from _tiny_lm import ByteTokenizer, TinyGenerator, greedy_reference  # noqa: E402

import mininn  # noqa: E402
from mininn.serialization import load  # noqa: E402


@dataclass(frozen=True)
class GenerationServer:
    """A running server: its HTTP side and its gRPC ``host:port``."""

    http: Server
    grpc_port: int

    @property
    def base_url(self) -> str:
        return self.http.base_url

    @property
    def grpc_url(self) -> str:
        return f"{self.http.host}:{self.grpc_port}"

    @property
    def repository(self) -> Path:
        return self.http.repository


def start_generation_server(folder: Path, **env: str) -> Iterator[GenerationServer]:
    """Serve the generation repository under ``folder`` until the generator is closed."""
    grpc_port = free_port()
    settings = {
        "MININN_SEED_REPOSITORY": "false",
        "MININN_API_KEY": WRITE_KEY,
        "MININN_GRPC_PORT": str(grpc_port),
        "MININN_REPOSITORY_POLL_MS": "0",
        "MININN_DTYPE": "float64",
        **env,
    }
    repository = generation_repository(folder / "model_repository")
    command = [sys.executable, str(HERE / "_generation_models.py")]
    with run_server(repository, folder / "server.log", command=command, **settings) as running:
        running.wait_ready(60)
        yield GenerationServer(running, grpc_port)


def reference_ids(repository: Path, model: str, prompt_ids: list[int], steps: int) -> list[int]:
    """Greedy tokens of ``model`` by the plain loop (whole sequence through ``forward``, argmax), float64."""
    folder = repository / model
    config = TinyLMConfig(**json.loads((folder / "model.json").read_text())["config"])
    module = build(config)
    module.load_state_dict(load(str(folder / "1" / "weights.safetensors")))
    module.to(dtype=mininn.float64).eval()
    return greedy_reference(TinyGenerator(module, ByteTokenizer(), config.context), prompt_ids, steps)


def reference_text(repository: Path, model: str, prompt: str, steps: int) -> str:
    """The text of :func:`reference_ids` for a text prompt (encoded as the server does: ``<s>`` first)."""
    tokenizer = ByteTokenizer()
    ids = reference_ids(repository, model, tokenizer.encode(prompt), steps)
    return tokenizer.decode(ids)


def chat_prompt(messages: list[dict[str, str]]) -> list[int]:
    """The token ids the server makes of chat ``messages`` (the tiny model's template, no ``<s>``)."""
    tokenizer = ByteTokenizer()
    return tokenizer.encode(tokenizer.apply_chat_template(messages), add_special_tokens=False)
