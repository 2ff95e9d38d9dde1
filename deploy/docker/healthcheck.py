"""Container health check: exit 0 when the server in this container answers ready, else 1.

The image's ``HEALTHCHECK`` and the compose file run ``python /opt/mininn/healthcheck.py``.
It asks ``/v2/health/ready`` on 127.0.0.1 at the server's port (``$MININN_PORT``, else the
platform's ``$PORT``, else 8000, as ``app.settings`` reads them) and needs
nothing but the standard library (the slim base image has no curl). Health endpoints
need no key, even when ``MININN_API_KEY`` / ``MININN_READ_API_KEY`` are set.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping

__all__ = ["main", "ready_url"]

TIMEOUT_S = 3.0


def ready_url(environ: Mapping[str, str] = os.environ) -> str:
    """The readiness URL of the server configured by ``environ``."""
    port = environ.get("MININN_PORT") or environ.get("PORT") or "8000"
    return f"http://127.0.0.1:{port}/v2/health/ready"


def main() -> int:
    """0 if the server is ready, 1 (with the reason on stderr) if not."""
    url = ready_url()
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return 0 if response.status == 200 else 1
    except (urllib.error.URLError, OSError) as exc:  # HTTPError (503 while loading) is a URLError
        sys.stderr.write(f"not ready: {url}: {exc}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
