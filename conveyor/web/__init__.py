"""The web side: the HTTP API (and, later, the dashboard). The core never imports it."""

from conveyor.web.app import create_app

__all__ = ["create_app"]
