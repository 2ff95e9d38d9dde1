from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from _app_support import REPO_ROOT

from app.settings import Settings, SettingsError, load_settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("MININN_") or key in ("PORT", "PROTOCOL"):
            monkeypatch.delenv(key)


def test_defaults() -> None:
    settings = load_settings()
    assert (settings.host, settings.port, settings.workers) == ("127.0.0.1", 8000, 1)
    assert (settings.device, settings.dtype, settings.log_level) == ("cpu", "float32", "info")
    assert settings.model_repository == Path("model_repository")
    assert settings.seed_repository is True
    assert settings.api_key is None and settings.read_api_key is None
    assert settings.max_batch_size == 32 and settings.max_queue == 256


def test_environment_variables_set_fields(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MININN_PORT", "9001")
    monkeypatch.setenv("MININN_WORKERS", "3")
    monkeypatch.setenv("MININN_MODEL_REPOSITORY", str(tmp_path))
    monkeypatch.setenv("MININN_DTYPE", "double")
    monkeypatch.setenv("MININN_LOG_LEVEL", "DEBUG")
    monkeypatch.setenv("MININN_API_KEY", "s3cret")
    monkeypatch.setenv("MININN_SEED_REPOSITORY", "false")
    settings = load_settings()
    assert (settings.port, settings.workers, settings.model_repository) == (9001, 3, tmp_path)
    assert settings.dtype == "float64"
    assert settings.log_level == "debug"
    assert settings.api_key is not None and settings.api_key.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)
    assert settings.seed_repository is False


def test_an_empty_key_means_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MININN_API_KEY", "  ")
    assert load_settings().api_key is None


def test_device_is_canonical(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MININN_DEVICE", "cuda:1")
    assert load_settings().device == "cuda:1"


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (
            "MININN_PORT",
            "abc",
            "MININN_PORT: Input should be a valid integer, unable to parse string as an integer",
        ),
        ("MININN_PORT", "70000", "MININN_PORT: Input should be less than or equal to 65535"),
        ("MININN_WORKERS", "0", "MININN_WORKERS: Input should be greater than or equal to 1"),
        (
            "MININN_LOG_LEVEL",
            "loud",
            "MININN_LOG_LEVEL: Input should be 'critical', 'error', 'warning', 'info'",
        ),
        ("MININN_DEVICE", "tpu", "MININN_DEVICE: Expected one of cpu, cuda"),
        ("MININN_DTYPE", "int64", "MININN_DTYPE: 'int64' is not a floating-point dtype"),
        ("MININN_DTYPE", "float8", "MININN_DTYPE: unknown dtype 'float8'"),
        ("MININN_MAX_BATCH_SIZE", "-1", "MININN_MAX_BATCH_SIZE: Input should be greater than or equal to 1"),
        ("MININN_SEED_REPOSITORY", "maybe", "MININN_SEED_REPOSITORY: Input should be a valid boolean"),
    ],
)
def test_a_bad_value_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value).startswith(message)


def test_every_bad_variable_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MININN_PORT", "x")
    monkeypatch.setenv("MININN_WORKERS", "y")
    with pytest.raises(SettingsError) as raised:
        load_settings()
    lines = str(raised.value).splitlines()
    assert [line.split(":")[0] for line in lines] == ["MININN_PORT", "MININN_WORKERS"]


def test_the_platforms_port_is_used_when_mininn_port_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "8080")  # Knative (KServe serverless), Cloud Run
    assert load_settings().port == 8080
    monkeypatch.setenv("MININN_PORT", "9000")  # an explicit MININN_PORT wins
    assert load_settings().port == 9000


def test_a_bad_platform_port_names_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PORT", "http")
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value).startswith("PORT: Input should be a valid integer")
    assert "MININN_PORT, when set, replaces it" in str(raised.value)


@pytest.mark.parametrize("protocol", ["v2", "grpc-v2", "V2"])
def test_kserves_v2_protocol_variable_is_accepted(monkeypatch: pytest.MonkeyPatch, protocol: str) -> None:
    monkeypatch.setenv("PROTOCOL", protocol)
    assert load_settings().port == 8000


def test_another_kserve_protocol_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROTOCOL", "v1")
    monkeypatch.setenv("MININN_WORKERS", "y")
    with pytest.raises(SettingsError) as raised:
        load_settings()
    lines = str(raised.value).splitlines()
    assert lines[0].startswith("MININN_WORKERS:")
    assert lines[1].startswith("PROTOCOL: 'v1' is not a protocol mininn-serve speaks")
    assert "set PROTOCOL=v2" in lines[1]


def test_settings_are_frozen() -> None:
    settings = Settings()
    with pytest.raises(ValueError, match="frozen"):
        settings.port = 1  # type: ignore[misc]


def test_the_default_model_repository_is_ignored_by_git() -> None:
    # the demo models and every upload land there (131 MB in one checkout); none of it belongs in a commit
    if shutil.which("git") is None or not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    folder = Settings.model_fields["model_repository"].default
    weights = folder / "digits" / "1" / "weights.safetensors"

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)

    assert git("check-ignore", "--no-index", "--quiet", str(weights)).returncode == 0
    assert git("ls-files", "--", str(folder)).stdout == ""


@pytest.mark.parametrize(("value", "expected"), [(None, False), ("true", True), ("false", False)])
def test_the_access_log_is_off_unless_asked_for_and_reaches_uvicorn(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str | None, expected: bool
) -> None:
    import uvicorn

    import app.__main__

    if value is not None:
        monkeypatch.setenv("MININN_ACCESS_LOG", value)
    monkeypatch.setenv("MININN_MODEL_REPOSITORY", str(tmp_path))
    monkeypatch.setenv("MININN_SEED_REPOSITORY", "false")
    assert load_settings().access_log is expected
    passed: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kwargs: passed.update(kwargs))
    monkeypatch.setattr(app.__main__.signal, "signal", lambda *args: None)  # leave the test's handlers alone
    monkeypatch.setattr(app.__main__.logging.config, "dictConfig", lambda config: None)  # and its logging
    assert app.__main__.main([]) == 0
    assert passed["access_log"] is expected
