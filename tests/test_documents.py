"""Every Markdown document the project names (``docs/uploads.md``, ``SECURITY.md``) is one it contains.

The names are read from every tracked text file (code, tests, documents, manifests) and
resolved as a reader would: against the naming file's folder, the repository root, then
``docs/`` (code that builds ``REPO_ROOT / "docs" / "http-api.md"`` names ``http-api.md``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN_NAME = re.compile(r"(?<![\w/.-])([\w./-]*[\w-]\.md)\b")
TEXT_SUFFIXES = {".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".ini", ".js", ".html", ""}


def _tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    paths = [ROOT / line for line in listed.stdout.splitlines()]
    return [p for p in paths if p.suffix in TEXT_SUFFIXES and p.is_file()]


def _resolves(name: str, naming_file: Path) -> bool:
    return any((folder / name).is_file() for folder in (naming_file.parent, ROOT, ROOT / "docs"))


def test_every_markdown_document_named_in_the_project_exists_in_it() -> None:
    missing = []
    for path in _tracked_text_files():
        text = path.read_text(errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            missing += [
                f"{path.relative_to(ROOT)}:{number}: {name}"
                for name in MARKDOWN_NAME.findall(line)
                if "://" not in line and not _resolves(name, path)
            ]
    assert missing == [], "documents the project names but does not contain:\n" + "\n".join(missing)
