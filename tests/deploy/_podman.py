"""Podman and podman-compose for the container tests: build once, run projects, tear down.

The image is built through ``podman-compose build`` (the compose file's own build
section) once per machine and session, under a file lock so parallel test workers
share it; Podman's layer cache makes later builds take seconds. Where the official
nginx image cannot be pulled, a stand-in (``nginx_standin/``) is built from the same
base image.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from _deploy_support import REPO_ROOT, compose_file, free_port, interpolate

HERE = Path(__file__).resolve().parent
IMAGE = "localhost/mininn-serve:e2e"
NGINX_STANDIN = "localhost/mininn-nginx-standin:e2e"
BASE_IMAGE = "docker.io/library/python:3.11-slim"
LOCK = Path(os.environ.get("TMPDIR", "/tmp")) / "mininn-serve-container-tests.lock"


def unavailable() -> str | None:
    """Why the container tests cannot run here, or None when they can."""
    if shutil.which("podman") is None:
        return "podman is not installed (CI sets it up with /work/shared/tools/container-runtime.sh)"
    try:
        import podman_compose  # noqa: F401
    except ImportError:
        return "podman-compose is not installed (pip install podman-compose; it is in the test extra)"
    info = subprocess.run(["podman", "info", "--format", "json"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        return f"podman does not work here: {info.stderr.strip()[:300]}"
    return None


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``podman *args``; raise with its output when ``check`` and it fails."""
    result = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise RuntimeError(f"podman {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result


def _build_args() -> str:
    """``podman build`` options: keep HEALTHCHECK (docker format), the host's network and CAs."""
    args = ["--format", "docker", "--network", "host"]
    if Path("/etc/ssl/certs").is_dir():
        args += ["-v", "/etc/ssl/certs:/etc/ssl/certs:ro"]
    if podman("image", "exists", BASE_IMAGE, check=False).returncode == 0:
        args.append("--pull=never")  # the stand-in base of machines that cannot pull
    return " ".join(args)


@dataclass(frozen=True)
class Images:
    """The tags the tests run: the service and nginx."""

    server: str
    nginx: str


def build_images(workdir: Path) -> Images:
    """Build the service image with podman-compose, and nginx's stand-in if needed; the tags."""
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        project = ComposeProject(f"mininn-build-{uuid.uuid4().hex[:8]}", workdir)
        project.compose("build", "server", timeout=1800)
        nginx = interpolate(compose_file()["services"]["balancer"]["image"])
        if podman("image", "exists", nginx, check=False).returncode != 0:
            nginx = NGINX_STANDIN
            podman("build", *_build_args().split(), "-t", nginx, str(HERE / "nginx_standin"), timeout=900)
    return Images(IMAGE, nginx)


class ComposeProject:
    """One compose project (its own name, ports and volume) run from the repository's compose file."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        images: Images | None = None,
        server_settings: dict[str, str] | None = None,
        **env: str,
    ) -> None:
        self.name, self.log = name, workdir / "compose.log"
        self.port, self.balancer_port = free_port(), free_port()
        self.api_key = uuid.uuid4().hex
        settings = workdir / "settings.env"  # the servers' settings file, as a user's .env
        lines = {"MININN_API_KEY": self.api_key, **(server_settings or {})}
        settings.write_text("".join(f"{key}={value}\n" for key, value in lines.items()))
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("MININN_", "DEPLOY_"))},
            "DEPLOY_IMAGE": IMAGE,
            "DEPLOY_PORT": str(self.port),
            "DEPLOY_BALANCER_PORT": str(self.balancer_port),
            "DEPLOY_ENV_FILE": str(settings),
            **({"DEPLOY_NGINX_IMAGE": images.nginx} if images else {}),
            **env,
        }

    def compose(
        self, *args: str, timeout: float = 300, profile: str | None = None, check: bool = True
    ) -> None:
        """``podman-compose -p <name> [--profile p] *args`` from the repository root."""
        command = [sys.executable, "-m", "podman_compose", f"--podman-build-args={_build_args()}"]
        command += ["-p", self.name, "-f", str(REPO_ROOT / "docker-compose.yml")]
        command += ["--profile", profile] if profile else []
        with open(self.log, "a") as out:
            out.write(f"\n$ {' '.join(command + list(args))}\n")
            out.flush()
            result = subprocess.run(
                [*command, *args],
                cwd=REPO_ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
            )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"podman-compose {' '.join(args)} failed ({result.returncode}); see {self.log}"
            )

    def container(self, service: str, index: int = 1) -> str:
        """The container name podman-compose gives replica ``index`` of ``service``."""
        return f"{self.name}_{service}_{index}"

    def wait_healthy(self, container: str, timeout: float = 180) -> float:
        """Run the container's healthcheck until it passes; the seconds it took.

        Podman runs healthchecks from systemd timers; without systemd nothing runs them, so
        the test runs the container's own healthcheck command the same way.
        """
        started = time.monotonic()
        while podman("healthcheck", "run", container, check=False, timeout=60).returncode != 0:
            state = podman("inspect", container, "--format", "{{.State.Status}}", check=False).stdout.strip()
            if state not in ("running", "created", "configured", "initialized"):
                logs = podman("logs", container, check=False).stdout[-3000:]
                raise RuntimeError(f"{container} is {state}:\n{logs}")
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"{container} not healthy within {timeout:.0f} s")
            time.sleep(0.5)
        return time.monotonic() - started

    def exec_python(self, container: str, code: str, timeout: float = 60) -> str:
        """Run ``python -c code`` inside ``container`` (as its user); its stdout."""
        return podman("exec", container, "python", "-c", code, timeout=timeout).stdout

    def logs(self, container: str) -> str:
        """Everything the container wrote (uvicorn's access log included)."""
        result = podman("logs", container, check=False)
        return result.stdout + result.stderr

    def inspect(self, container: str) -> dict:
        """``podman inspect`` of the container."""
        return json.loads(podman("inspect", container).stdout)[0]


@contextlib.contextmanager
def running(project: ComposeProject, *services: str, profile: str | None = None) -> Iterator[ComposeProject]:
    """``up -d [services]``; ``down -v`` (containers, network and volume) however the block ends."""
    try:
        project.compose("up", "-d", *services, profile=profile)
        yield project
    finally:  # never masks the block's own failure; the log keeps what down said
        project.compose("down", "-v", "-t", "30", profile=profile, check=False)
