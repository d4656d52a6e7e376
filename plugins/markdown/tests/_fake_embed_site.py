"""An installed embedder plugin for CLI tests: a module and its ``dist-info`` (a real
``goat_core.plugins`` entry point) written into a folder that a test puts on ``sys.path``
(or ``PYTHONPATH`` for a subprocess). Its embedder ``fake`` hashes words into 64
dimensions with a synonym table (plumbing only, never quality) and appends a line to
``$GOAT_FAKE_EMBED_LOG`` each time its model is loaded."""

from __future__ import annotations

import textwrap
from pathlib import Path

MODULE = textwrap.dedent(
    """
    import hashlib
    import os

    import numpy as np
    from goat_core import hookimpl
    from goat_core.contract import EmbedderSpec

    SYNONYMS = {"phone": "mobile", "desktop": "computer", "laptop": "computer"}


    class FakeEmbedder:
        dimensions = 64
        identity = "fake@1"

        def _vec(self, text):
            v = np.zeros(self.dimensions, dtype=np.float32)
            for word in text.lower().replace(".", " ").split():
                word = SYNONYMS.get(word, word)
                v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimensions] += 1.0
            n = np.linalg.norm(v)
            return v / n if n else v

        def embed_documents(self, texts):
            if not texts:
                return np.zeros((0, self.dimensions), dtype=np.float32)
            return np.stack([self._vec(t) for t in texts])

        def embed_query(self, text):
            return self._vec(text)


    def _factory(cache_dir):
        log = os.environ.get("GOAT_FAKE_EMBED_LOG")
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"loaded in {os.getpid()}\\n")
        return FakeEmbedder()


    @hookimpl
    def goat_register_embedders():
        return [
            EmbedderSpec(
                name="fake",
                dimensions=64,
                languages=("en",),
                source="test",
                factory=_factory,
                available=lambda cache_dir: True,
            )
        ]
    """
)


def install_fake_embedder(site: Path) -> Path:
    """Write the plugin into ``site`` (created); returns ``site``."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "goat_fakeembed.py").write_text(MODULE, encoding="utf-8")
    info = site / "goat_fakeembed-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: goat-fakeembed\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[goat_core.plugins]\nfakeembed = goat_fakeembed\n")
    return site
