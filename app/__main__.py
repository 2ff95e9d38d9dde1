"""``python -m app`` / ``mininn-serve``: check the settings, then run uvicorn.

``mininn-serve add-model ...`` makes or checks a model folder instead (:mod:`app.store.model_folder`).

A bad ``MININN_*`` value stops start-up with exit code 2 and one line per bad
variable on stderr, no traceback. Start-up logs, once, where the model explorer
and the API docs are.
"""

from __future__ import annotations

import logging
import logging.config
import signal
import sys
from types import FrameType

__all__ = ["main"]

logger = logging.getLogger("app")

WORKER_PING_TIMEOUT_S = 20  # see the uvicorn.run call with workers


def main(argv: list[str] | None = None) -> int:
    """Run the server with host, port, workers and log level from the settings.

    Returns:
        The process exit code: 2 for bad settings, else 0 after a clean shutdown.
    """
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(_usage())
        return 0
    if args and args[0] == "add-model":
        from app.store.model_folder import main as add_model

        return add_model(args[1:])
    from app.settings import SettingsError, load_settings

    try:
        settings = load_settings()
    except SettingsError as exc:
        sys.stderr.write(f"mininn-serve: invalid configuration\n{exc}\n")
        return 2
    import uvicorn

    from app.log import logging_config
    from app.main import create_app

    common = {
        "host": settings.host,
        "port": settings.port,
        "log_level": settings.log_level,
        "log_config": logging_config(settings.log_level),
        # one line per request costs the event loop more than parsing a small request; Triton logs none
        "access_log": settings.access_log,
        "timeout_graceful_shutdown": 10,
        # httptools with limits on the request head's size and arrival time (MININN_MAX_HEADER_BYTES,
        # MININN_HEADER_TIMEOUT_S), which uvicorn itself does not bound
        "http": "app.http.server:GuardedHttpToolsProtocol",
    }
    logging.config.dictConfig(common["log_config"])  # uvicorn applies it again; here for the line below
    url = _base_url(settings.host, settings.port)
    logger.info("Model explorer at %s/ui/, API docs at %s/docs", url, url)  # here: once, whatever the workers
    if settings.grpc_port:
        from app.grpc.server import grpc_address

        address = grpc_address(settings.host, settings.grpc_port)
        logger.info("V2 gRPC (inference.GRPCInferenceService) at %s", address)
    if settings.workers > 1:
        # uvicorn's supervisor kills a worker that does not answer its ping within this many seconds.
        # Its default, 5 s, killed a replacement worker still starting on a busy machine (seen in the
        # soak test: a second restart and a failed request); a hung worker is rare, a slow start is not.
        uvicorn.run("app.main:create_app", factory=True, workers=settings.workers,
                    timeout_worker_healthcheck=WORKER_PING_TIMEOUT_S, **common)
    else:
        # uvicorn re-raises SIGTERM once its graceful shutdown is done; make that exit code 0.
        signal.signal(signal.SIGTERM, _exit_cleanly)
        uvicorn.run(create_app(settings), **common)
    return 0


def _exit_cleanly(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def _base_url(host: str, port: int) -> str:
    """``http://host:port`` to open in a browser: ``localhost`` for a host that means every interface."""
    if host in ("0.0.0.0", "::", ""):
        host = "localhost"
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _usage() -> str:
    from app.settings import ENV_PREFIX, Settings

    lines = [
        "usage: python -m app   (or: mininn-serve)",
        "       mininn-serve add-model NAME --code FILE.py:NAME --weights FILE --input NAME:TYPE:SHAPE ...",
        "       mininn-serve add-model NAME --check      (see: mininn-serve add-model --help)",
        "",
        "Configured by environment variables:",
        "",
    ]
    for name, field in Settings.model_fields.items():
        default = field.get_default(call_default_factory=True)
        lines.append(f"  {ENV_PREFIX}{name.upper():<28} default {default!s:<20} {field.description or ''}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
