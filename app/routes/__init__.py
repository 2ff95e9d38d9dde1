"""HTTP routes, one module per area; each exposes ``router``."""

from app.routes import (
    activations,
    generate,
    health,
    infer,
    inspect,
    metrics,
    models,
    openai,
    repository,
    state_dict,
    steering,
)

ROUTERS = [
    health.router,
    models.router,
    infer.router,
    generate.router,
    openai.router,
    activations.router,
    repository.router,
    state_dict.router,
    steering.router,
    inspect.router,
    metrics.router,
]

__all__ = ["ROUTERS"]
