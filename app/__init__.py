"""mininn-serve: a KServe V2 (Open Inference Protocol) server for mininn models.

``create_app(settings)`` builds the FastAPI app; ``python -m app`` or the
``mininn-serve`` command runs it with uvicorn, configured by ``MININN_*``
environment variables (:class:`Settings`).
"""

from app.main import create_app
from app.settings import Settings, SettingsError, load_settings

__all__ = ["Settings", "SettingsError", "create_app", "load_settings"]
