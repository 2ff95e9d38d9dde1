"""The app factory: ``create_app(settings)`` builds the FastAPI application.

``uvicorn --factory app.main:create_app`` (or ``python -m app``) serves it.
Start-up seeds an empty repository with the demo models and loads every
model in the background, so ``/v2/health/live`` answers at once and
``/v2/health/ready`` turns 200 when the load pass is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from app import routes
from app.errors import error_responses, install_error_handlers
from app.grpc.server import GrpcServer
from app.http.body_timeout import BodyTimeoutMiddleware
from app.http.middleware import RequestContextMiddleware
from app.openai.errors import openai_error_response
from app.routes import ROUTERS, docs, ui
from app.runtime.service import Service
from app.settings import Settings, load_settings
from app.version import SERVER_NAME, __version__

__all__ = ["create_app"]

logger = logging.getLogger("app")

SWITCH_INTERVAL_S = 0.0005
"""The interpreter's thread switch interval while the server runs (Python's default: 5 ms).

An inference thread takes the interpreter back after every NumPy call that
released it (each matmul, bias add and activation), and a busy event loop
holds it for up to the switch interval before handing it over. A shorter
interval keeps the event loop's thread busier and answers more batched
requests: with 32 batch-1 JSON clients of the benchmark MLP,
``benchmarks/serve_breakdown.py`` measured 3044-3068 requests/s against
2630-2887 with 5 ms (two rounds each), and 3182-3299 against 2946-2971 in a
later run.
"""


_DESCRIPTION = """
A KServe V2 / Open Inference Protocol server for mininn models, compatible
with the stock `tritonclient.http` client (binary tensors, compression,
repository and statistics extensions).

Every error is `{"error": "<message>"}`: 400 malformed, 401/403 keys, 404 unknown
model or version, 408 a body that arrives too slowly, 413 too large, 422 tensors
that do not fit the model, 503 not ready or overloaded (with `Retry-After`).
A request head over `MININN_MAX_HEADER_BYTES` is 431. SECURITY.md has the
threat model and every limit.

Text-generation models also answer OpenAI's API under `/v1` (and `/openai/v1`,
as KServe mounts it), with OpenAI's error body `{"error": {"message", "type",
"param", "code"}}` there, and Triton's `generate` and `generate_stream`.
"""


_COMMON = (400, 401, 403, 422)  # bad path/query values, keys, validation
_BODY = (408, 413)  # routes that read a body
_ERRORS = [  # what each router's routes may answer besides 2xx, for the OpenAPI schema
    (routes.health.router, (401, 403, 503)),
    (routes.models.router, (*_COMMON, 404, 503)),
    (routes.inspect.router, (*_COMMON, 404, 503)),
    (routes.infer.router, (*_COMMON, *_BODY, 404, 415, 503, 504)),
    (routes.generate.router, (*_COMMON, *_BODY, 404, 503)),
    (routes.openai.router, ()),  # OpenAI's error body: the routes document their own
    (routes.activations.router, (*_COMMON, *_BODY, 404, 415, 503, 504)),
    (routes.repository.router, (*_COMMON, *_BODY, 404, 409, 503)),
    (routes.state_dict.router, (*_COMMON, *_BODY, 404, 409, 503)),
    (routes.metrics.router, (401, 403)),
]


class _ServerApp(FastAPI):
    """FastAPI, with ``POST .../infer`` served by :class:`~app.routes.infer.InferenceFastPath`.

    Inference requests skip FastAPI's own layers (exception and telemetry
    middleware, router, dependencies) and the service's middleware, and go
    to :attr:`inference`, which does what that middleware does (request id,
    metrics, the body deadline, the last-resort 500) itself. When OpenTelemetry is configured (FastAPI's
    native telemetry is on), they take FastAPI's way, so that they are traced.
    """

    inference: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            self.inference is not None
            and not self.root_path
            and routes.infer.InferenceFastPath.claims(scope)
            and not _telemetry_enabled(self)
        ):
            scope["app"] = self
            await self.inference(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


TELEMETRY_RECHECK_S = 1.0
"""How long the answer to "is FastAPI's telemetry on?" is kept (OpenTelemetry set up later counts after it).

FastAPI asks OpenTelemetry's global providers, reading environment variables
on the way; asked per inference request, that cost as much as parsing the
request's JSON.
"""


def _telemetry_enabled(app: FastAPI) -> bool:
    telemetry = getattr(app, "_native_telemetry", None)  # FastAPI >= 0.160
    if telemetry is None:
        return False
    now = time.monotonic()
    until, enabled = getattr(app, "_telemetry_checked", (0.0, False))
    if now >= until:
        enabled = bool(telemetry.enabled())
        app._telemetry_checked = (now + TELEMETRY_RECHECK_S, enabled)  # type: ignore[attr-defined]
    return enabled


def create_app(settings: Settings | None = None) -> FastAPI:
    """The service's FastAPI app.

    Args:
        settings: the configuration; None reads the ``MININN_*`` environment.

    Raises:
        SettingsError: ``settings`` is None and the environment has bad values.
    """
    service = Service.from_settings(settings if settings is not None else load_settings())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_S)
        # gRPC first: a port in use stops start-up before any model loads
        grpc_server = await GrpcServer.start(service) if service.settings.grpc_port else None
        task = asyncio.create_task(service.start(), name="mininn-load-models")
        watch = asyncio.create_task(service.manager.watch(), name="mininn-watch-repository")
        try:
            yield
        finally:
            if grpc_server is not None:  # calls in flight finish, as uvicorn's do
                await grpc_server.stop()
            for running in (watch, task):
                running.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await running
            service.close()
            sys.setswitchinterval(interval)

    app = _ServerApp(
        title=SERVER_NAME,
        version=__version__,
        description=_DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # app.routes.docs serves /docs with Swagger UI from an installed package
        redoc_url=None,  # ReDoc would load its script from a CDN
    )
    app.state.service = service
    install_error_handlers(app, dict.fromkeys(routes.openai.PREFIXES, openai_error_response))
    # every request: request id and metrics (outermost), then the body deadline
    context = {"metrics": service.metrics, "is_known_model": service.manager.is_known}
    deadline = {"timeout_s": service.settings.body_timeout_s}
    app.add_middleware(BodyTimeoutMiddleware, **deadline)
    app.add_middleware(RequestContextMiddleware, **context)
    # the inference endpoint does the request context and the body deadline itself
    app.inference = routes.infer.InferenceFastPath(service.plane, service.metrics)
    for router in ROUTERS:
        codes = next((codes for known, codes in _ERRORS if known is router), _COMMON)
        app.include_router(router, responses=error_responses(*codes))
    app.include_router(ui.router)  # the model explorer page at /ui/ (and / redirects there)
    app.include_router(docs.router)  # the API docs at /docs, offline
    return app
