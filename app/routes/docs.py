"""The API documentation page at ``/docs``: Swagger UI served from an installed package, never a CDN.

FastAPI's own ``/docs`` loads Swagger UI's script and stylesheet from a public
CDN, so the page is blank offline and in air-gapped clusters. This router serves
the same page with those assets from the ``swagger-ui-bundle-v2`` package (the
Swagger UI 5 dist files; FastAPI's OpenAPI 3.1 schema needs Swagger UI 5) under
``/docs/assets/``. ReDoc, which would load its script from a CDN too, is off
(``/redoc`` is 404).
"""

from __future__ import annotations

import functools
from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import FileResponse, HTMLResponse

from app.errors import NotFoundError, ServiceUnavailableError

__all__ = ["ASSETS", "DOCS_URL", "router"]

DOCS_URL = "/docs"
ASSETS = {  # the files the page loads, and their media types
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}
_PACKAGE = "swagger-ui-bundle-v2"

router = APIRouter(include_in_schema=False)


@functools.cache
def _bundle_dir() -> Path:
    """The installed Swagger UI dist folder.

    Raises:
        ServiceUnavailableError: the package is not installed (it is a dependency of the server).
    """
    try:
        from swagger_ui_bundle import swagger_ui_path
    except ImportError:
        raise ServiceUnavailableError(
            f"the API docs need the {_PACKAGE} package (a dependency of mininn-serve): "
            f"pip install {_PACKAGE}",
            retry_after=None,
        ) from None
    return Path(str(swagger_ui_path))


@router.get(DOCS_URL)
def docs_page(request: Request) -> HTMLResponse:
    """Swagger UI for the server's OpenAPI schema, with its assets from this server."""
    _bundle_dir()
    root = request.scope.get("root_path", "").rstrip("/")
    assets = f"{root}{DOCS_URL}/assets"
    return get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title=f"{request.app.title} - API docs",
        swagger_js_url=f"{assets}/swagger-ui-bundle.js",
        swagger_css_url=f"{assets}/swagger-ui.css",
        swagger_favicon_url=f"{assets}/favicon-32x32.png",
        oauth2_redirect_url=f"{root}{DOCS_URL}/oauth2-redirect",
    )


@router.get(f"{DOCS_URL}/oauth2-redirect")
def oauth2_redirect() -> HTMLResponse:
    """Swagger UI's OAuth2 redirect page (self-contained)."""
    return get_swagger_ui_oauth2_redirect_html()


@router.get(f"{DOCS_URL}/assets/{{name}}")
def asset(name: str) -> Response:
    """One of :data:`ASSETS`, from the installed package; cached by the browser for a day."""
    if name not in ASSETS:
        raise NotFoundError(f"no documentation asset {name!r}; the page loads {', '.join(sorted(ASSETS))}")
    return FileResponse(
        _bundle_dir() / name, media_type=ASSETS[name], headers={"Cache-Control": "public, max-age=86400"}
    )
