"""The shared provider conformance suite (``pip install goat-core[testing]``)."""
