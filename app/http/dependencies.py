"""FastAPI dependencies as ``Annotated`` aliases, so routes stay one-liners.

All are ``async``: FastAPI runs plain ``def`` dependencies on its thread pool,
one thread hop per dependency per request.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.runtime.dataplane import DataPlane
from app.runtime.manager import ModelManager
from app.runtime.service import Service
from app.settings import Settings

__all__ = ["ManagerDep", "PlaneDep", "ServiceDep", "SettingsDep", "get_service"]


async def get_service(request: Request) -> Service:
    """The :class:`Service` the app was built with."""
    return request.app.state.service


async def _manager(request: Request) -> ModelManager:
    return request.app.state.service.manager


async def _plane(request: Request) -> DataPlane:
    return request.app.state.service.plane


async def _settings(request: Request) -> Settings:
    return request.app.state.service.settings


ServiceDep = Annotated[Service, Depends(get_service)]
ManagerDep = Annotated[ModelManager, Depends(_manager)]
PlaneDep = Annotated[DataPlane, Depends(_plane)]
SettingsDep = Annotated[Settings, Depends(_settings)]
