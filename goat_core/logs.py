"""Logging: structlog for everything. Libraries only call :func:`get_logger`; the CLI calls
:func:`configure` once."""

from __future__ import annotations

from typing import Any

import structlog

__all__ = ["get_logger"]


def get_logger(name: str | None = None, **bound: Any) -> Any:
    """A structlog logger; configuration is the application's job."""
    logger = structlog.get_logger(name)
    return logger.bind(**bound) if bound else logger
