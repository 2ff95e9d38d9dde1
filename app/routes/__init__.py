"""HTTP routes, one module per area; each exposes ``router``."""

from app.routes import activations, health, infer, inspect, metrics, models, repository, state_dict, steering

ROUTERS = [
    health.router,
    models.router,
    infer.router,
    activations.router,
    repository.router,
    state_dict.router,
    steering.router,
    inspect.router,
    metrics.router,
]

__all__ = ["ROUTERS"]
