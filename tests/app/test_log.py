"""app.log.logging_config: the format of the server's log lines."""

from __future__ import annotations

import subprocess
import sys

from _app_support import REPO_ROOT

_LOG_SOME_LINES = """
import logging, logging.config
from app.log import logging_config, request_id_var
logging.config.dictConfig(logging_config("info"))
logging.getLogger("uvicorn.error").info("Started server process [1]")
logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
logging.getLogger("app").info("model mlp loaded")
request_id_var.set("req-7")
logging.getLogger("uvicorn.error").error("Exception in ASGI application")
logging.getLogger("mininn").debug("not shown at info")
"""


def test_uvicorn_messages_are_shown_as_uvicorn_with_their_level_and_request_id() -> None:
    # in a fresh interpreter: dictConfig would reconfigure this process's loggers
    result = subprocess.run(
        [sys.executable, "-c", _LOG_SOME_LINES], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [
        "INFO:     uvicorn [-] Started server process [1]",
        "WARNING:  uvicorn [-] Invalid HTTP request received.",
        "INFO:     app [-] model mlp loaded",
        "ERROR:    uvicorn [req-7] Exception in ASGI application",
    ]
