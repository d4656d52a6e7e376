"""The built ONNX graph cached under the embedder's folder: built in a child process, written
once with its own sha256 beside it, used as is when that matches, rebuilt when the file is
truncated, damaged or its record missing, and used from memory when the folder cannot be
written; a failed build is a ``ProviderUnavailable`` quoting the builder's error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from goat_core.errors import ProviderUnavailable

from goat_embed import _minilm
from goat_embed._minilm import MiniLM, graph_file
from goat_embed._weights import find_model_dir

TEXT = "Sync your notes across devices"


@pytest.fixture(scope="module")
def model_dir() -> Path:
    found = find_model_dir()
    assert found is not None
    return found


@pytest.fixture(scope="module")
def built(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, object]:
    """A cache folder after one load of the fp32 graph: (folder, graph bytes, embedding)."""
    cache = tmp_path_factory.mktemp("cache")
    vec = MiniLM(model_dir, cache, "fp32").embed_query(TEXT)
    return cache, graph_file(cache, "fp32").read_bytes(), vec


def _no_build(model_dir: Path, variant: str, out: Path) -> None:
    raise AssertionError("the cached graph should have been used")


def test_first_load_writes_graph_and_its_sha256(built: tuple[Path, bytes, object]) -> None:
    import hashlib

    cache, data, _ = built
    path = graph_file(cache, "fp32")
    assert path.parent == cache / "onnx" and "-b1.onnx" in path.name
    record = path.with_name(path.name + ".sha256").read_text(encoding="ascii")
    assert record == hashlib.sha256(data).hexdigest() + "\n"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name, path.name + ".sha256"]


def test_matching_cache_is_used_without_building(
    built: tuple[Path, bytes, object], model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache, _, vec = built
    monkeypatch.setattr(_minilm, "_build", _no_build)
    assert np.array_equal(MiniLM(model_dir, cache, "fp32").embed_query(TEXT), vec)


@pytest.mark.parametrize("damage", ["truncate", "flip", "no-record", "empty"])
def test_damaged_cache_is_rebuilt(
    damage: str, built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    _, data, vec = built
    path = graph_file(tmp_path, "fp32")
    path.parent.mkdir(parents=True)
    record = path.with_name(path.name + ".sha256")
    path.write_bytes(data)
    import hashlib

    record.write_text(hashlib.sha256(data).hexdigest() + "\n", encoding="ascii")
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        broken = bytearray(data)
        broken[len(data) // 3] ^= 0xFF  # same size, one byte of a weight changed
        path.write_bytes(bytes(broken))
    elif damage == "no-record":
        record.unlink()
    else:
        path.write_bytes(b"")
    assert np.array_equal(MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT), vec)
    assert path.read_bytes() == data
    assert record.read_text(encoding="ascii") == hashlib.sha256(data).hexdigest() + "\n"


def test_unwritable_cache_folder_builds_in_memory(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    _, _, vec = built
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would be", encoding="utf-8")
    assert np.array_equal(MiniLM(model_dir, blocker, "fp32").embed_query(TEXT), vec)
    assert blocker.read_text(encoding="utf-8") == "a file where the cache folder would be"


def test_variants_are_cached_apart(model_dir: Path, tmp_path: Path) -> None:
    """The int8 and fp32 graphs live in two files, and a builder version is part of the key."""
    assert graph_file(tmp_path, "int8") != graph_file(tmp_path, "fp32")
    assert f"-b{_minilm.BUILDER_VERSION}." in graph_file(tmp_path, "int8").name


def test_failed_build_is_provider_unavailable_with_the_reason(tmp_path: Path) -> None:
    """The builder run on a folder without ``model.safetensors`` (the load verifies the
    weights first, so only a fault of the build itself gets here)."""
    empty = tmp_path / "no-weights"
    empty.mkdir()
    out = tmp_path / "graph.onnx"
    with pytest.raises(
        ProviderUnavailable, match=r"building the fp32 ONNX graph failed \(exit 1\)"
    ) as caught:
        _minilm._build(empty, "fp32", out)
    assert "FileNotFoundError" in str(caught.value) and "model.safetensors" in str(caught.value)
    assert not out.exists()
