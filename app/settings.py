"""Service configuration: ``MININN_*`` environment variables, checked at start-up.

Every setting is a field of :class:`Settings`; ``MININN_PORT=8080`` sets
``port``. :func:`load_settings` turns pydantic's validation errors into one
:class:`SettingsError` whose message names each bad variable::

    MININN_PORT: Input should be a valid integer, unable to parse string as an integer

One variable without the prefix is read too: ``PORT``, the port that Knative (KServe's
serverless mode), Cloud Run and similar platforms tell a container to listen on. It sets
``port`` when ``MININN_PORT`` is unset (the image leaves it unset for that reason). And
``PROTOCOL``, which KServe sets on a predictor's container, must name the V2 protocol (``v2``
or ``grpc-v2``) when set: it is the only one the server speaks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["ENV_PREFIX", "PLATFORM_PORT", "Settings", "SettingsError", "load_settings"]

ENV_PREFIX = "MININN_"
PLATFORM_PORT = "PORT"  # set by Knative / KServe serverless, Cloud Run, ...: where to listen
KSERVE_PROTOCOL = "PROTOCOL"  # KServe's protocol variable of a predictor container
SPOKEN_PROTOCOLS = ("v2", "grpc-v2")

LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]


class SettingsError(ValueError):
    """One or more ``MININN_*`` variables have bad values; the message names each."""


class Settings(BaseSettings):
    """Everything the service reads from the environment (prefix ``MININN_``)."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Interface to listen on (0.0.0.0 in the container).")
    port: int = Field(
        8000, ge=1, le=65535, description="TCP port to listen on (unset: $PORT when the platform sets it)."
    )
    grpc_port: int = Field(
        8001, ge=0, le=65535, description="TCP port of the V2 gRPC endpoint (same host); 0 turns it off."
    )
    workers: int = Field(1, ge=1, le=64, description="uvicorn worker processes; each loads every model.")
    log_level: LogLevel = Field("info", description="Log level of the server and of mininn.")
    access_log: bool = Field(
        False, description="Log one line per HTTP request (uvicorn's access log, at info); off as in Triton."
    )
    device: str = Field("cpu", description="Default device of the models: cpu, cuda or cuda:N.")
    dtype: str = Field("float32", description="Default floating dtype of the models' parameters.")
    model_repository: Path = Field(
        Path("model_repository"), description="Folder of <model>/model.json and <model>/<version>/ weights."
    )
    seed_repository: bool = Field(
        True, description="Fill a missing or empty repository with the bundled demo models."
    )
    api_key: SecretStr | None = Field(
        None, description="Bearer key that write endpoints (load, unload, uploads) require; unset: open."
    )
    read_api_key: SecretStr | None = Field(
        None, description="Bearer key that read endpoints require (the write key works too); unset: open."
    )
    max_request_bytes: int = Field(
        128 * 2**20, ge=1024, description="Largest inference request body, after decompression."
    )
    max_upload_bytes: int = Field(1024 * 2**20, ge=1024, description="Largest uploaded checkpoint.")
    allow_code_upload: bool = Field(
        False,
        description="Let the write key upload model code (.py) over HTTP: code execution on the server.",
    )
    max_header_bytes: int = Field(
        64 * 2**10, ge=1024, le=2**24, description="Largest request head (request line and headers); 431."
    )
    header_timeout_s: float = Field(
        10.0, gt=0, le=3600, description="Longest a request head may take to arrive (then 408, closed)."
    )
    body_timeout_s: float = Field(
        30.0, gt=0, le=86_400, description="Longest a request body may take to arrive, plus 1 s per MiB; 408."
    )
    max_older_versions: int = Field(
        1,
        ge=0,
        le=1000,
        description="Versions besides the newest kept loaded per model (requested ones, least recent out).",
    )
    repository_poll_ms: float = Field(
        250.0,
        ge=0,
        le=60_000,
        description="How often each worker checks the repository for new versions; 0 turns it off.",
    )
    max_batch_size: int = Field(32, ge=1, description="Default max_batch_size of batchable models.")
    batch_delay_ms: float = Field(
        0.0, ge=0, le=10_000, description="How long dynamic batching waits to fill a batch."
    )
    max_queue: int = Field(256, ge=1, description="Requests that may wait per model before 503s.")
    request_timeout_ms: float = Field(
        30_000.0,
        gt=0,
        description="Longest a request waits for its answer (then 504); a request's `timeout` replaces it.",
    )
    inference_threads: int = Field(
        min(4, os.cpu_count() or 1), ge=1, le=256, description="Threads that run forward passes."
    )
    max_sequences: int = Field(
        8, ge=1, le=1024, description="Sequences a text-generation model decodes together (one batch)."
    )
    max_waiting_sequences: int = Field(
        64, ge=0, description="Generation requests that may wait for a place before 503s."
    )
    generation_timeout_s: float = Field(
        600.0,
        gt=0,
        description="Longest a generation may take from arrival to its last token (504); a request's "
        "`timeout` replaces it.",
    )
    max_activation_elements: int = Field(
        10_000_000, ge=1, description="Most activation elements one request may capture."
    )

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_log_level(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @field_validator("api_key", "read_api_key", mode="before")
    @classmethod
    def _empty_key_is_none(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("device")
    @classmethod
    def _check_device(cls, value: str) -> str:
        return check_device(value)

    @field_validator("dtype")
    @classmethod
    def _check_dtype(cls, value: str) -> str:
        return check_float_dtype(value)


def check_device(value: str) -> str:
    """Device ``value`` as mininn names it (``"cpu"``, ``"cuda:1"``; torch's message for anything else).

    Raises:
        ValueError: not a device mininn knows.
    """
    from mininn import device

    try:
        return str(device(value))
    except (RuntimeError, TypeError) as exc:
        raise ValueError(str(exc)) from None


def check_float_dtype(value: str) -> str:
    """The canonical name of floating dtype ``value`` (``"float"`` -> ``"float32"``).

    Raises:
        ValueError: not a floating dtype name.
    """
    import mininn

    try:
        dtype = mininn.empty(0, dtype=value).dtype  # mininn's own reading of names and aliases
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    if not dtype.is_floating_point:
        raise ValueError(
            f"{value!r} is not a floating-point dtype; use float16, bfloat16, float32 or float64"
        )
    return dtype.name


def load_settings() -> Settings:
    """Settings from the process environment.

    Raises:
        SettingsError: one line per bad variable, ``MININN_<NAME>: <problem>``.
    """
    platform = _platform_port()
    problems = _protocol_problems()
    try:
        settings = Settings(**platform)
    except ValidationError as exc:
        problems = [_describe(error, platform) for error in exc.errors()] + problems
    if problems:
        raise SettingsError("\n".join(problems))
    return settings


def _protocol_problems() -> list[str]:
    protocol = os.environ.get(KSERVE_PROTOCOL)
    if protocol is None or protocol.strip().lower() in SPOKEN_PROTOCOLS:
        return []
    return [
        f"{KSERVE_PROTOCOL}: {protocol!r} is not a protocol mininn-serve speaks; it serves the Open "
        f"Inference Protocol only: set {KSERVE_PROTOCOL}=v2 (KServe's name for it) or leave it unset"
    ]


def _platform_port() -> dict[str, str]:
    """``{"port": $PORT}`` when the platform sets ``PORT`` and ``MININN_PORT`` is unset, else nothing."""
    names = {name.upper() for name in os.environ}
    if f"{ENV_PREFIX}PORT" in names or PLATFORM_PORT not in os.environ:
        return {}
    return {"port": os.environ[PLATFORM_PORT]}


def _describe(error: Any, platform: dict[str, str]) -> str:
    loc = error.get("loc") or ("?",)
    message = str(error.get("msg", "invalid value")).removeprefix("Value error, ")
    if str(loc[0]) in platform:
        return f"{PLATFORM_PORT}: {message} (the platform's port; MININN_PORT, when set, replaces it)"
    return f"{ENV_PREFIX}{str(loc[0]).upper()}: {message}"
