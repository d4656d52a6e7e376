"""GOAT Memory embedders (``--set embedder=minilm-en`` or ``use-multilingual``)."""

__version__ = "0.1.0"
