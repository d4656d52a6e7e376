"""pytest plugin of goat-core (registered through the ``pytest11`` entry point).

Cheap to import: it only registers the ``goat_requires`` marker.
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "goat_requires(*capabilities): skip unless the provider under test declares them",
    )
