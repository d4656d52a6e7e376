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


# -- adversarial review (adv2): faults of the graph cache that escape as untyped errors, or
# -- are used as if they were the graph of this model


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
    import hashlib

    path = graph_file(cache, "fp32")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if record is None:
        record = (hashlib.sha256(data).hexdigest() + "\n").encode("ascii")
    path.with_name(path.name + ".sha256").write_bytes(record)
    return path


def test_adv2_non_ascii_sha256_record_is_rebuilt(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A ``.sha256`` record holding bytes that are not ASCII (a damaged record) is a stale
    record like any other: the graph is rebuilt (``_cache.py`` docstring). Found: the
    ``read_text(encoding="ascii")`` raises ``UnicodeDecodeError`` (a ``ValueError``, not
    caught as ``OSError``), which escapes ``MiniLM`` and every recall of the store
    (``goat recall`` exits 1, "unexpected UnicodeDecodeError") until the file is deleted."""
    _, data, vec = built
    _plant(tmp_path, data, record=b"\xff\xfe not a digest")
    assert np.array_equal(MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT), vec)


def test_adv2_self_consistent_damaged_graph_is_rebuilt_or_unavailable(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A truncated graph whose record matches the truncated bytes (the record is only the
    file's own hash, so any tool or fault that rewrites both leaves this) must be rebuilt, or
    at worst refused as ``ProviderUnavailable``. Found: ONNX Runtime's ``InvalidProtobuf``
    escapes the load (not a ``GoatError`` nor ``OSError``), so every semantic recall of the
    store fails with "unexpected InvalidProtobuf" (exit 1) instead of answering degraded, and
    it never heals."""
    _, data, vec = built
    _plant(tmp_path, data[:1000])
    try:
        got = MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT)
    except ProviderUnavailable:
        return
    assert np.array_equal(got, vec)


def test_adv2_graph_of_another_model_with_its_record_is_not_used(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A valid ONNX graph of another model, with a record that matches it, at this
    variant's path: the record says only that the file is whole, not that it is the graph
    built from these weights for this variant and builder. Found: it is loaded and used; its
    vectors are ranked against the index's MiniLM vectors under MiniLM's identity (two
    models' vectors mixed, recall says ``complete`` with no ``degraded``). Expected: the
    record binds the graph to its key (weights sha256, variant, builder version) and/or
    the load checks the graph's signature, and rebuilds or refuses it."""
    _, _, vec = built
    _plant(tmp_path, _fake_graph(384))
    try:
        got = MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT)
    except ProviderUnavailable:
        return
    assert np.allclose(got, vec, atol=1e-5)


def test_adv2_builder_child_does_not_import_modules_from_the_working_directory(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The builder runs as ``python -m goat_embed._graph``, which puts the current
    directory first on ``sys.path``. Found: a ``numpy.py`` (or ``onnx.py``, ``json.py``...)
    in the folder where ``goat recall`` or ``goat serve`` runs (a cloned repository, a vault)
    is imported and run by the builder on the first semantic recall: code execution from
    the working directory. Expected: the child runs isolated from the cwd (``-P``/``-I`` or
    ``PYTHONSAFEPATH``, a fixed ``cwd``)."""
    work = tmp_path / "untrusted-repo"
    work.mkdir()
    marker = tmp_path / "imported-from-cwd"
    (work / "numpy.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "raise SystemExit(3)\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(work)
    out = tmp_path / "graph.onnx"
    try:
        _minilm._build(model_dir, "fp32", out)
    except ProviderUnavailable:
        pass
    assert not marker.exists(), "the builder child imported numpy.py from the working folder"


def test_adv2_builder_child_gets_no_secret_environment(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The builder needs no credential. Found: it is started with the whole environment
    (``{**os.environ, ...}``), so core's key override (``GOAT_API_KEY_<BINDING>``) and any
    other secret-like variable reach a child that runs outside the egress guard. Expected:
    secret-like variables (KEY, TOKEN, SECRET, PASSWORD; docs/design.md, Credentials and
    egress) are not passed on."""
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


def test_adv2_temp_graph_of_a_killed_loader_is_removed(
    built: tuple[Path, bytes, object], model_dir: Path, tmp_path: Path
) -> None:
    """A loader killed (``kill -9``, a host closing ``goat serve``) while its child builds
    leaves ``.NAME.<pid>.tmp`` (34 MB int8, 88 MB fp32): the child is not killed with it and
    finishes writing, and nothing removes the file later. Found: the next load neither
    removes nor reuses it; each killed first load adds one for good."""
    _, data, vec = built
    path = graph_file(tmp_path, "fp32")
    path.parent.mkdir(parents=True)
    stale = path.with_name(f".{path.name}.999999999.tmp")  # no such process
    stale.write_bytes(data[:4096])
    assert np.array_equal(MiniLM(model_dir, tmp_path, "fp32").embed_query(TEXT), vec)
    assert not stale.exists()
