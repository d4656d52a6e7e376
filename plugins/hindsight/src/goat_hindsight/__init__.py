"""goat-hindsight: GOAT Memory's client of one Hindsight bank (single-bank MCP endpoint)."""

__version__ = "0.1.0"
