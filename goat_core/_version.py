"""The one version number of goat-core and every in-tree plugin distribution."""

__version__ = "0.1.0"
