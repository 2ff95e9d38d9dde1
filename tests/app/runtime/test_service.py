from __future__ import annotations

import logging
from pathlib import Path

import pytest
from _app_support import start_client


def test_a_missing_repository_without_seeding_serves_no_models(tmp_path: Path) -> None:
    client = start_client(tmp_path / "nowhere")
    try:
        assert client.post("/v2/repository/index").json() == []
        assert client.get("/v2/models/digits").json() == {
            "error": "Request for unknown model: 'digits' is not found; the repository is empty"
        }
    finally:
        client.__exit__(None, None, None)
    assert not (tmp_path / "nowhere").exists()


def test_a_repository_that_cannot_be_seeded_is_logged_and_the_server_still_starts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_folder = tmp_path / "repository"
    not_a_folder.write_text("oops")
    with caplog.at_level(logging.ERROR, logger="app.runtime.service"):
        client = start_client(not_a_folder, seed_repository=True)
    try:
        assert client.get("/v2/health/ready").status_code == 200
        assert client.post("/v2/repository/index").json() == []
    finally:
        client.__exit__(None, None, None)
    assert any(
        r.getMessage().startswith(f"could not seed the repository {not_a_folder}") for r in caplog.records
    )
