"""The explorer's routes and assets, in process: redirects, headers, and what the files may contain."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.routes.ui import CONTENT_SECURITY_POLICY, STATIC_DIR

ASSETS = sorted(p.name for p in STATIC_DIR.iterdir() if p.suffix in (".js", ".css"))
PAGES = ["/ui/", "/ui/models/digits", "/ui/models/anything-at-all"]
MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


@pytest.fixture
def ui(client_factory) -> TestClient:
    return client_factory(api_key="write-key", read_api_key="read-key")


@pytest.mark.parametrize("path", ["/", "/ui"])
def test_the_front_door_redirects_to_the_models_page(ui: TestClient, path: str) -> None:
    response = ui.get(path, follow_redirects=False)
    assert response.status_code == 307
    assert response.headers["location"] == "/ui/"


@pytest.mark.parametrize("path", PAGES)
def test_pages_are_the_shell_under_a_strict_content_security_policy(ui: TestClient, path: str) -> None:
    response = ui.get(path)
    assert response.status_code == 200  # the shell holds no data, so no key is needed
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert response.text == (STATIC_DIR / "index.html").read_text()
    policy = response.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in policy.split(";"))
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'"
    assert directives["style-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe" not in policy and "http" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("name", ASSETS)
def test_each_asset_is_served_with_its_type_policy_and_etag(ui: TestClient, name: str) -> None:
    response = ui.get(f"/ui/static/{name}")
    assert response.status_code == 200
    assert response.content == (STATIC_DIR / name).read_bytes()
    assert response.headers["content-type"] == MEDIA_TYPES[Path(name).suffix]
    assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert response.headers["cache-control"] == "no-cache"
    again = ui.get(f"/ui/static/{name}", headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    other = ui.get(f"/ui/static/{name}", headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200


def test_head_requests_answer_without_a_body(ui: TestClient) -> None:
    response = ui.head("/ui/")
    assert response.status_code == 200 and response.content == b""


@pytest.mark.parametrize(
    "path",
    ["/ui/static/nope.js", "/ui/static/index.html", "/ui/static/..%2F..%2Fmain.py", "/ui/static/STYLE.CSS"],
)
def test_anything_else_under_static_is_a_404_json_error(ui: TestClient, path: str) -> None:
    response = ui.get(path)
    assert response.status_code == 404
    assert set(response.json()) == {"error"}


def test_the_api_still_needs_its_keys(ui: TestClient) -> None:
    assert ui.post("/v2/repository/index").status_code == 401
    response = ui.post("/v2/repository/index", headers={"Authorization": "Bearer read-key"})
    assert response.status_code == 200


class _Shell(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[dict[str, str | None]] = []
        self.links: list[dict[str, str | None]] = []
        self.inline: list[str] = []
        self.styles = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.inline += [name for name in attributes if name.startswith("on") or name == "style"]
        if tag == "script":
            self.scripts.append(attributes)
            self._in_script = True
        elif tag == "link":
            self.links.append(attributes)
        elif tag == "style":
            self.styles += 1

    def handle_endtag(self, tag: str) -> None:
        self._in_script = self._in_script and tag != "script"

    def handle_data(self, data: str) -> None:
        if self._in_script and data.strip():
            self.inline.append("script body")


def test_the_shell_has_no_inline_script_style_or_handler() -> None:
    shell = _Shell()
    shell.feed((STATIC_DIR / "index.html").read_text())
    assert shell.inline == [] and shell.styles == 0
    assert shell.scripts == [{"type": "module", "src": "/ui/static/app.js"}]
    assert {link["href"] for link in shell.links} == {"/ui/static/style.css", "data:,"}


_IMPORT = re.compile(r"""^import\s+(?:[^"']+?\s+from\s+)?["']([^"']+)["'];""", re.MULTILINE)


def _imports(name: str) -> list[str]:
    return _IMPORT.findall((STATIC_DIR / name).read_text())


def test_every_script_import_is_a_served_asset_and_every_asset_is_used() -> None:
    reached, todo = set(), ["app.js"]
    while todo:
        name = todo.pop()
        if name in reached:
            continue
        reached.add(name)
        for target in _imports(name):
            assert target.startswith("./") and target[2:] in ASSETS, f"{name} imports {target}"
            todo.append(target[2:])
    assert reached | {"style.css"} == set(ASSETS)


@pytest.mark.parametrize("name", [*ASSETS, "index.html"])
def test_assets_load_nothing_from_other_origins_and_evaluate_no_strings(name: str) -> None:
    text = (STATIC_DIR / name).read_text()
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(", text, re.IGNORECASE)
    unsafe = r"\beval\(|new Function\(|\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write"
    assert not re.search(unsafe, text)
    assert not re.search(r"localStorage|sessionStorage|document\.cookie|indexedDB", text)
