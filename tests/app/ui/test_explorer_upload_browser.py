"""The explorer's upload form in headless Chromium: a refused upload and an accepted one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _app_support import mlp_weights
from _ui_support import WRITE_KEY, api
from safetensors.numpy import load_file, save_file

from models import digits

pytestmark = pytest.mark.browser


def _digits_weights() -> dict[str, np.ndarray]:
    return load_file(str(digits.WEIGHTS_PATH))


def _versions(server: Any, model: str) -> list[str]:
    with api(server) as client:
        return client.get(f"/v2/models/{model}").json()["versions"]


def test_a_bad_upload_lists_its_missing_keys_and_changes_nothing(
    open_page, explorer_server, tmp_path: Path
) -> None:
    weights = {k: v for k, v in _digits_weights().items() if not k.startswith("fc3.")}
    checkpoint = tmp_path / "partial.safetensors"
    save_file(weights, str(checkpoint))
    before = _versions(explorer_server, "digits")

    page = open_page("/ui/models/digits#upload")
    page.fill("[data-testid=upload-key]", WRITE_KEY)
    page.set_input_files("[data-testid=upload-file]", str(checkpoint))
    assert page.is_checked("[data-testid=upload-strict]")
    with page.expect_request(lambda r: r.method == "PUT") as sent:
        page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("[data-testid=upload-result][data-status=error]")
    assert sent.value.url.endswith("/v2/models/digits/state_dict?strict=true")
    assert sent.value.headers["authorization"] == f"Bearer {WRITE_KEY}"
    missing = page.locator("[data-testid=upload-missing] li").all_text_contents()
    assert sorted(missing) == ["fc3.bias", "fc3.weight"]
    assert "HTTP 422" in page.text_content("[data-testid=upload-result] .error-box")
    assert _versions(explorer_server, "digits") == before
    assert page.text_content("[data-testid=versions] dd") == ", ".join(before)
    # the key stays in the page's memory only
    assert page.evaluate("() => [localStorage.length, sessionStorage.length, document.cookie]") == [0, 0, ""]
    assert WRITE_KEY not in page.url

    # not strict, but fc3.weight has the wrong shape: still refused, with both shapes shown
    weights = {**_digits_weights(), "fc3.weight": np.zeros((5, 84), np.float32)}
    save_file(weights, str(checkpoint))
    page.uncheck("[data-testid=upload-strict]")
    page.set_input_files("[data-testid=upload-file]", str(checkpoint))
    with page.expect_request(lambda r: r.method == "PUT") as sent:
        page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("[data-testid=upload-result][data-status=error] [data-testid=upload-mismatched]")
    assert sent.value.url.endswith("?strict=false")
    mismatched = page.locator("[data-testid=upload-mismatched] li").all_text_contents()
    assert mismatched == ["fc3.weight: checkpoint [5, 84], model [10, 84]"]
    assert _versions(explorer_server, "digits") == before


def test_a_good_upload_shows_the_new_version_and_its_key_report(
    open_page, explorer_server, tmp_path: Path
) -> None:
    weights = mlp_weights(7)
    del weights["3.bias"]
    weights["extra.weight"] = np.ones(2, np.float32)
    checkpoint = tmp_path / "mlp.safetensors"
    save_file(weights, str(checkpoint))
    before = _versions(explorer_server, "mlp")
    page = open_page("/ui/models/mlp#upload")
    page.set_input_files("[data-testid=upload-file]", str(checkpoint))
    page.get_by_role("button", name="Upload").click()  # no key: refused
    page.wait_for_selector("[data-testid=upload-result][data-status=error]")
    assert "HTTP 401" in page.text_content("[data-testid=upload-result] .error-box")
    assert _versions(explorer_server, "mlp") == before

    page.fill("[data-testid=upload-key]", WRITE_KEY)
    page.uncheck("[data-testid=upload-strict]")
    page.get_by_role("button", name="Upload").click()
    page.wait_for_selector("[data-testid=upload-result][data-status=done]")
    after = _versions(explorer_server, "mlp")
    assert int(after[-1]) == int(before[-1]) + 1
    assert page.get_attribute("[data-testid=upload-result] .success-box", "data-version") == after[-1]
    page.wait_for_selector(f"[data-testid=versions] dd:text-is('{', '.join(after)}')")
    assert page.locator("[data-testid=upload-missing] li").all_text_contents() == ["3.bias"]
    assert f"values kept from version {before[-1]}" in page.text_content("[data-testid=upload-missing] h4")
    assert page.locator("[data-testid=upload-unexpected] li").all_text_contents() == ["extra.weight"]
