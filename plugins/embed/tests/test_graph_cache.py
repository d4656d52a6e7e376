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

TEXT = "Sync your notes across devices"


# model_dir: the seeded, verified MiniLM files (conftest.py)


@pytest.fixture(scope="module")
def built(model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, object]:
    """A cache folder after one load of the fp32 graph: (folder, graph bytes, embedding)."""
    cache = tmp_path_factory.mktemp("cache")
    vec = MiniLM(model_dir, cache, "fp32").embed_query(TEXT)
    return cache, graph_file(cache, "fp32").read_bytes(), vec


def _record_for(data: bytes, variant: str = "fp32") -> bytes:
    """The record a build writes beside the graph ``data`` of ``variant``."""
    import hashlib

    from goat_embed._cache import _record

    return _record(hashlib.sha256(data).hexdigest(), _minilm.graph_key(variant))


def _no_build(model_dir: Path, variant: str, out: Path) -> None:
    raise AssertionError("the cached graph should have been used")


def test_first_load_writes_graph_and_its_sha256(built: tuple[Path, bytes, object]) -> None:
    import hashlib

    cache, data, _ = built
    path = graph_file(cache, "fp32")
    assert path.parent == cache / "onnx" and "-b1.onnx" in path.name
    record = path.with_name(path.name + ".sha256").read_bytes()
    assert record == _record_for(data)
    assert record.decode("ascii").splitlines() == [
        "goat-embed graph record 2",
        f"key {_minilm.MODEL_ID} weights={_minilm.WEIGHTS_SHA256} variant=fp32 builder=1",
        f"sha256 {hashlib.sha256(data).hexdigest()}",
    ]
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
    record.write_bytes(_record_for(data))
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
    assert record.read_bytes() == _record_for(data)


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


# -- a cached graph that is damaged, foreign or left half-written is rebuilt (or refused as
# -- ProviderUnavailable), never used nor let out as an untyped error


def _fake_graph(width: int) -> bytes:
    """A valid ONNX graph with MiniLM's input and output names that is not MiniLM: its
    ``embeddings`` is the sum of the token ids, repeated ``width`` times."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("Cast", ["input_ids"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["f", "ax"], ["s"], keepdims=1),
        helper.make_node("Tile", ["s", "reps"], ["embeddings"]),
    ]
    graph = helper.make_graph(
        nodes,
        "not-minilm",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "l"]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["b", "l"]),
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["b", width])],
        [
            numpy_helper.from_array(np.array([1], np.int64), "ax"),
            numpy_helper.from_array(np.array([1, width], np.int64), "reps"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def _plant(cache: Path, data: bytes, record: bytes | None = None) -> Path:
    """``data`` at the fp32 graph's path, with ``record`` beside it (default: the record a
    build of ``data`` writes, so only the check of the loaded graph can refuse it)."""
    path = graph_file(cache, "fp32")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if record is None:
        record = _record_for(data)
    path.with_name(path.name + ".sha256").write_bytes(record)
    return path


def test_non_ascii_sha256_record_is_rebuilt(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A ``.sha256`` record holding bytes that are not ASCII (a damaged record) is a stale
    record like any other: the graph is rebuilt (``_cache.py`` docstring), no
    ``UnicodeDecodeError`` escapes."""
    _, data, vec = built
    _plant(tmp_path, data, record=b"\xff\xfe not a digest")
    assert np.array_equal(MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT), vec)


def test_self_consistent_damaged_graph_is_rebuilt_or_unavailable(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A truncated graph whose record (key and sha256) matches the truncated bytes: ONNX
    Runtime cannot load it (``InvalidProtobuf``), so it is deleted and rebuilt, or at worst
    refused as ``ProviderUnavailable``; the load error never escapes untyped."""
    _, data, vec = built
    _plant(tmp_path, data[:1000])
    try:
        got = MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT)
    except ProviderUnavailable:
        return
    assert np.array_equal(got, vec)


def test_graph_of_another_model_with_its_record_is_not_used(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A valid ONNX graph of another model (MiniLM's input and output names, its output
    width, but not a unit vector), with a record naming this variant's key and matching it:
    the probe embedding at load refuses it, and it is rebuilt or refused, never used."""
    _, _, vec = built
    _plant(tmp_path, _fake_graph(384))
    try:
        got = MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT)
    except ProviderUnavailable:
        return
    assert np.allclose(got, vec, atol=1e-5)


def test_builder_child_does_not_import_modules_from_the_working_directory(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``numpy.py`` (or ``onnx.py``, ``json.py``...) in the folder where ``goat recall`` or
    ``goat serve`` runs (a cloned repository, a vault) is never imported by the builder
    child: it runs with ``-P`` in the graph's folder, so the working folder is not on its
    ``sys.path``."""
    work = tmp_path / "untrusted-repo"
    work.mkdir()
    marker = tmp_path / "imported-from-cwd"
    (work / "numpy.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\nraise SystemExit(3)\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(work)
    out = tmp_path / "graph.onnx"
    try:
        _minilm._build(model_dir, "fp32", out)
    except ProviderUnavailable:
        pass
    assert not marker.exists(), "the builder child imported numpy.py from the working folder"


def test_builder_child_gets_no_secret_environment(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The builder needs no credential: core's key override (``GOAT_API_KEY_<BINDING>``) and
    any other secret-like variable (docs/design.md, Credentials and egress) do not reach the
    child, which runs outside the egress guard; it gets ``CHILD_ENV`` and the offline
    variables only."""
    import subprocess

    seen: dict[str, str] = {}

    def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        seen.update(kwargs.get("env") or {})  # type: ignore[arg-type]
        return subprocess.CompletedProcess(args, 0, "", "")

    monkeypatch.setenv("GOAT_API_KEY_PEN_TEAM", "hs-secret-value")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setattr(_minilm.subprocess, "run", run)
    _minilm._build(model_dir, "fp32", tmp_path / "graph.onnx")
    leaked = sorted(k for k, v in seen.items() if "secret-value" in v)
    assert leaked == [], f"secret-like variables passed to the builder: {leaked}"
    assert seen["HF_HUB_OFFLINE"] == "1"


def test_temp_graph_of_a_killed_loader_is_removed(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A loader killed (``kill -9``, a host closing ``goat serve``) while its child builds
    leaves ``.NAME.<pid>.tmp`` (34 MB int8, 88 MB fp32); the next load removes it, as the
    process named in it is gone."""
    _, data, vec = built
    path = graph_file(tmp_path, "fp32")
    path.parent.mkdir(parents=True)
    stale = path.with_name(f".{path.name}.999999999.tmp")  # no such process
    stale.write_bytes(data[:4096])
    assert np.array_equal(MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT), vec)
    assert not stale.exists()


def test_temp_graph_of_a_live_process_is_kept(tmp_path: Path) -> None:
    """A temporary graph of a process that is alive (another loader building now) and
    younger than ``STALE_AFTER`` is left alone."""
    import os

    from goat_embed._cache import remove_stale

    path = graph_file(tmp_path, "fp32")
    path.parent.mkdir(parents=True)
    live = path.with_name(f".{path.name}.{os.getppid()}.tmp")
    live.write_bytes(b"being written")
    dead = path.with_name(f".{path.name}.sha256.999999999.tmp")
    dead.write_bytes(b"left over")
    assert remove_stale(path) == [dead]
    assert live.exists() and not dead.exists()


def test_record_of_another_variant_is_rebuilt(
    built: tuple[Path, bytes, object],
    model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fp32 graph with a record that names the int8 key (sha256 matching): the record
    does not bind it to this variant, so the graph is rebuilt rather than used."""
    _, data, _ = built
    _plant(tmp_path, data, record=_record_for(data, "int8"))

    def build(model_dir: Path, variant: str, out: Path) -> None:
        raise ProviderUnavailable("rebuilt")

    monkeypatch.setattr(_minilm, "_build", build)
    with pytest.raises(ProviderUnavailable, match="rebuilt"):
        MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT)


def test_hung_builder_is_stopped_and_unavailable(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A builder child that takes longer than ``BUILD_TIMEOUT`` is stopped: the load is a
    ``ProviderUnavailable`` saying so, rather than a recall blocked for good."""
    monkeypatch.setattr(_minilm, "BUILD_TIMEOUT", 0.01)
    with pytest.raises(ProviderUnavailable, match=r"took more than 0.01 s; it was stopped"):
        _minilm._build(model_dir, "fp32", tmp_path / "graph.onnx")


def test_full_goat_home_uses_the_built_graph_from_memory(
    built: tuple[Path, bytes, object],
    model_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Writing the record fails with ``ENOSPC`` (a full GOAT home) after the graph was built
    into the cache folder: the graph is built again in a temporary folder and used from
    memory, as for a folder that cannot be written, and nothing half-written stays."""
    import errno

    from goat_embed import _cache

    _, data, vec = built

    def build(model_dir: Path, variant: str, out: Path) -> None:
        out.write_bytes(data)

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(_minilm, "_build", build)
    monkeypatch.setattr(_cache, "_write_atomic", full)
    assert np.array_equal(MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT), vec)
    assert list((tmp_path / "onnx").iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_builder_out_of_space_is_an_oserror(model_dir: Path) -> None:
    """The builder child writing into a full folder (``/dev/full`` answers every write with
    ``ENOSPC``) is an ``OSError`` with that errno, which the cache answers by building the
    graph in a temporary folder and using it from memory, as for a folder it cannot write."""
    import errno

    with pytest.raises(OSError, match="ran out of space") as caught:
        _minilm._build(model_dir, "fp32", Path("/dev/full"))
    assert caught.value.errno == errno.ENOSPC
