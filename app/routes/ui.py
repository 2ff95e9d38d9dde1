"""The model explorer: a static page under ``/ui/`` that uses only the public HTTP API.

``GET /`` redirects to ``/ui/``. ``/ui/`` (the models page) and
``/ui/models/{name}`` (a model's page) serve the same ``index.html``; its
scripts, in ``app/static/``, read the URL and call the API from the browser.
Every response of this router carries a strict Content-Security-Policy
(scripts and styles from this origin only, no inline code, no other origin at
all), so the page works offline and cannot be made to load or send anything
elsewhere. The assets are read once, at import, and served with an ``ETag``.
The page holds no secrets: the API key typed into its upload form stays in the
page's memory and goes only into that upload's ``Authorization`` header.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.errors import NotFoundError

__all__ = ["CONTENT_SECURITY_POLICY", "STATIC_DIR", "UI_PREFIX", "router"]

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
UI_PREFIX = "/ui"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "font-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
}
_MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
_ASSET_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\.(?:js|css)")

router = APIRouter(include_in_schema=False)
_METHODS = ["GET", "HEAD"]


@dataclass(frozen=True)
class _Asset:
    body: bytes
    media_type: str
    etag: str


def _load(path: Path) -> _Asset:
    body = path.read_bytes()
    return _Asset(body, _MEDIA_TYPES[path.suffix], '"' + hashlib.sha256(body).hexdigest()[:32] + '"')


def _load_assets(folder: Path) -> dict[str, _Asset]:
    return {p.name: _load(p) for p in sorted(folder.iterdir()) if _ASSET_NAME.fullmatch(p.name)}


_INDEX = _load(STATIC_DIR / "index.html")
_ASSETS = _load_assets(STATIC_DIR)


@router.api_route("/", methods=_METHODS)
async def root() -> RedirectResponse:
    """The server's front door: the model explorer."""
    return RedirectResponse(f"{UI_PREFIX}/", status_code=307, headers=_SECURITY_HEADERS)


@router.api_route(UI_PREFIX, methods=_METHODS)
async def ui_without_slash() -> RedirectResponse:
    """``/ui`` -> ``/ui/``, so the page's relative links resolve the same way."""
    return RedirectResponse(f"{UI_PREFIX}/", status_code=307, headers=_SECURITY_HEADERS)


@router.api_route(f"{UI_PREFIX}/", methods=_METHODS)
async def models_page(request: Request) -> Response:
    """The models page."""
    return _serve(_INDEX, request)


@router.api_route(UI_PREFIX + "/models/{model_name}", methods=_METHODS)
async def model_page(model_name: str, request: Request) -> Response:
    """A model's page (the page itself asks the API about the model)."""
    return _serve(_INDEX, request)


@router.api_route(UI_PREFIX + "/static/{filename}", methods=_METHODS)
async def asset(filename: str, request: Request) -> Response:
    """A script or stylesheet of the page.

    Raises:
        NotFoundError: no such asset (404).
    """
    found = _ASSETS.get(filename)
    if found is None:
        raise NotFoundError(f"no asset {filename!r} under {UI_PREFIX}/static/")
    return _serve(found, request)


def _serve(item: _Asset, request: Request) -> Response:
    headers = {**_SECURITY_HEADERS, "ETag": item.etag, "Cache-Control": "no-cache"}
    if item.etag in _etags(request.headers.get("if-none-match", "")):
        return Response(status_code=304, headers=headers)
    return Response(item.body, media_type=item.media_type, headers=headers)


def _etags(header: str) -> set[str]:
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}
