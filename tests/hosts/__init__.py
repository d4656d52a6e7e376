"""Tests that run real agent hosts (Claude Code) against the GOAT plugin, offline."""
