"""Document upload: POST /api/documents (to be written)."""

from __future__ import annotations

from fastapi import APIRouter

from conveyor.app import App


def router(app: App) -> APIRouter:
    return APIRouter()
