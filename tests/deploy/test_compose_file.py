"""docker-compose.yml, its nginx template and .env.example: what `docker compose up` relies on."""

from __future__ import annotations

import re

import pytest
from _deploy_support import (
    NGINX_TEMPLATE,
    REPO_ROOT,
    compose_file,
    compose_variables,
    dockerfile_stages,
    env_example,
    interpolate,
    settings_variables,
)

from app.settings import Settings

COMPOSE = compose_file()
SERVICES = interpolate(COMPOSE["services"])
FINAL_ENV = dockerfile_stages()[1][-1].env()


def test_compose_up_starts_only_the_server_and_the_scale_profile_adds_replicas_and_nginx() -> None:
    assert "profiles" not in SERVICES["server"]
    assert SERVICES["replica"]["profiles"] == ["scale"]
    assert SERVICES["balancer"]["profiles"] == ["scale"]


def test_the_server_publishes_port_8000_and_grpc_8001() -> None:
    assert SERVICES["server"]["ports"] == ["8000:8000", "8001:8001"]
    moved = {"DEPLOY_PORT": "9000", "DEPLOY_GRPC_PORT": "9001"}
    published = interpolate(COMPOSE["services"]["server"]["ports"], moved)
    assert published == ["9000:8000", "9001:8001"]
    assert "ports" not in SERVICES["replica"]  # reached only through the balancer


@pytest.mark.parametrize("service", ["server", "replica"])
def test_servers_share_the_named_repository_volume_at_the_image_path(service: str) -> None:
    assert SERVICES[service]["volumes"] == [f"models:{FINAL_ENV['MININN_MODEL_REPOSITORY']}"]
    assert "models" in COMPOSE["volumes"]


@pytest.mark.parametrize("service", ["server", "replica"])
def test_servers_build_and_run_the_same_image(service: str) -> None:
    assert SERVICES[service]["image"] == "mininn-serve:latest"
    assert SERVICES[service]["build"] == {"context": "."}


@pytest.mark.parametrize("service", ["server", "replica"])
def test_servers_have_a_healthcheck_restart_policy_limits_and_grace(service: str) -> None:
    spec = SERVICES[service]
    assert spec["healthcheck"]["test"] == ["CMD", "python", "/opt/mininn/healthcheck.py"]
    assert spec["restart"] == "unless-stopped"
    assert spec["deploy"]["resources"]["limits"] == {"cpus": "2", "memory": "2g"}
    assert int(spec["stop_grace_period"].removesuffix("s")) > 10  # uvicorn's graceful timeout


@pytest.mark.parametrize("service", ["server", "replica"])
def test_settings_come_from_an_optional_env_file(service: str) -> None:
    assert SERVICES[service]["env_file"] == [{"path": ".env", "required": False}]
    other = interpolate(COMPOSE["services"][service]["env_file"], {"DEPLOY_ENV_FILE": "prod.env"})
    assert other == [{"path": "prod.env", "required": False}]


@pytest.mark.parametrize("service", ["server", "replica"])
def test_the_container_facts_agree_with_the_image(service: str) -> None:
    environment = SERVICES[service]["environment"]
    assert set(environment) <= settings_variables()
    for name, value in environment.items():
        assert FINAL_ENV.get(name, _setting_default(name)) == str(value), name


def _setting_default(variable: str) -> str:
    """The server's default for ``MININN_<FIELD>``, for a variable the image leaves unset."""
    from app.settings import ENV_PREFIX, Settings

    return str(Settings.model_fields[variable.removeprefix(ENV_PREFIX).lower()].default)


def test_the_scale_profile_runs_three_replicas_behind_nginx() -> None:
    assert SERVICES["replica"]["deploy"]["mode"] == "replicated"
    assert SERVICES["replica"]["deploy"]["replicas"] == "3"
    balancer = SERVICES["balancer"]
    assert balancer["image"].startswith("nginx:")
    assert balancer["ports"] == ["8080:80"]
    assert balancer["depends_on"] == ["replica"]
    source, target, mode = balancer["volumes"][0].split(":")
    assert (REPO_ROOT / source).resolve() == NGINX_TEMPLATE
    assert target == "/etc/nginx/templates/default.conf.template" and mode == "ro"


def test_nginx_allows_the_servers_upload_limit() -> None:
    default = Settings.model_fields["max_upload_bytes"].default
    assert SERVICES["balancer"]["environment"] == {"MININN_MAX_UPLOAD_BYTES": str(default)}
    assert interpolate(
        COMPOSE["services"]["balancer"]["environment"], {"MININN_MAX_UPLOAD_BYTES": "2048"}
    ) == {"MININN_MAX_UPLOAD_BYTES": "2048"}
    assert "client_max_body_size ${MININN_MAX_UPLOAD_BYTES};" in NGINX_TEMPLATE.read_text()


def test_nginx_balances_round_robin_over_the_replicas_with_passive_health_checks() -> None:
    text = NGINX_TEMPLATE.read_text()
    upstream = re.search(r"upstream mininn \{(.*?)\}", text, re.S)
    assert upstream is not None
    servers = re.findall(r"^\s*server\s+(\S+)\s+(.*);", upstream.group(1), re.M)
    assert servers == [("replica:8000", "max_fails=3 fail_timeout=10s")]
    for method in ("least_conn", "ip_hash", "hash ", "random"):
        assert method not in upstream.group(1)  # round robin is nginx's default
    assert "proxy_pass http://mininn;" in text
    assert re.search(r"proxy_next_upstream error timeout http_502 http_503", text)
    assert "listen 80;" in text


def test_nginx_template_uses_only_variables_compose_passes() -> None:
    used = set(re.findall(r"\$\{(\w+)\}", NGINX_TEMPLATE.read_text()))
    assert used == set(SERVICES["balancer"]["environment"])


def test_every_compose_variable_is_documented_in_env_example() -> None:
    used = compose_variables((REPO_ROOT / "docker-compose.yml").read_text())
    assert used <= set(env_example()), used - set(env_example())


def test_env_example_documents_every_setting_and_nothing_else_with_the_prefix() -> None:
    documented = {name for name in env_example() if name.startswith("MININN_")}
    assert documented == settings_variables()


@pytest.mark.parametrize(
    "name",
    sorted(settings_variables() - {"MININN_API_KEY", "MININN_READ_API_KEY", "MININN_INFERENCE_THREADS"}),
)
def test_env_example_values_are_the_defaults_in_the_container(name: str) -> None:
    value = env_example()[name]
    if name in FINAL_ENV:  # set by the image: documented as the image sets it
        assert value == FINAL_ENV[name]
        return
    field = name.removeprefix("MININN_").lower()
    parsed = getattr(Settings(**{field: value}), field)
    assert parsed == Settings.model_fields[field].default


def test_env_example_compose_defaults_match_the_compose_file() -> None:
    documented = env_example()
    text = (REPO_ROOT / "docker-compose.yml").read_text()
    for name, default in re.findall(r"\$\{(DEPLOY_\w+):-([^}]*)\}", text):
        assert documented[name] == default, name


def test_readme_documents_every_setting_and_the_compose_commands() -> None:
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    readme = "\n".join(page.read_text() for page in pages)
    for name in settings_variables():
        assert f"`{name}`" in readme, name
    for command in ("docker compose up", "--profile scale", "cp .env.example .env"):
        assert command in readme, command
