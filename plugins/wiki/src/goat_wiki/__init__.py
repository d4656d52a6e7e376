"""goat-wiki: the GOAT Memory provider for an LLM wiki.

Raw sources stay immutable under ``raw/``; a model writes pages (summaries, entities,
concepts, syntheses) through the provider, which keeps ``index.md``, ``log.md`` and the
provenance of every page true. :mod:`goat_wiki.plugin` is the cheap entry point; the
provider (:mod:`goat_wiki.provider`) is imported only when a wiki is opened.
"""

__version__ = "0.1.0"
