"""all-MiniLM-L6-v2 on ONNX Runtime: the BERT encoder, mean pooling and L2 normalisation of
sentence-transformers as an ONNX graph built from the upstream ``model.safetensors``
(``goat_embed/_graph.py``), tokenised by Hugging Face ``tokenizers`` from the upstream
``tokenizer.json``. Two variants of the graph:

- ``fp32``: the weights as they are; matches sentence-transformers on PyTorch to 1e-4.
- ``int8``: dense layers and word embeddings quantised to 8 bits (ONNX Runtime dynamic
  quantisation), except the feed-forward output layers; cosine at least 0.99 to ``fp32``.

Both files are checked by sha256 before anything is built. The built graph is cached under the
embedder's folder of the GOAT home, keyed by the weights' sha256, the variant and
:data:`BUILDER_VERSION` (``goat_embed/_cache.py``), and checked at every load (its inputs and
output, and a probe embedding that must be one finite unit vector of :data:`DIMENSIONS`);
nothing is downloaded.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from goat_core.errors import ProviderUnavailable
from goat_embed import _meta
from goat_embed._text import encodable
from goat_embed._weights import OFFLINE_ENV, go_offline, verify

MODEL_ID = _meta.MINILM_ID
REVISION = _meta.MINILM_REVISION
WEIGHTS_SHA256 = _meta.MINILM_WEIGHTS_SHA256
TOKENIZER_SHA256 = _meta.MINILM_TOKENIZER_SHA256
DIMENSIONS = _meta.MINILM_DIMENSIONS
MAX_TOKENS = 128  # the sequence length the model was trained at (upstream card)
#: Bump when the graph built for a variant changes: the cache key and the embedder's identity
#: change with it, so cached graphs and vector indexes are rebuilt.
BUILDER_VERSION = 1
VARIANTS = ("fp32", "int8")
#: Texts per ``run`` call of the fp32 graph (each batch padded to its longest text, texts
#: sorted by length). Small: on one thread a batch of 16 took no less CPU per text than 1, 2
#: or 4, and raised the peak memory of a run by about 70 MB (activations of 16 x 128
#: positions). The int8 graph runs one text per call: it quantises activations with one
#: scale per call, so texts sharing a call would shift each other's vectors (MRR@10 of a
#: question set moved by 0.02 between batches of 16 and of 2).
BATCH = 2
#: ONNX Runtime intra-op threads per ``run`` call. One: a second intra-op thread made a query
#: no faster on 2 shared cores and cost CPU on the short texts of a vault's sections
#: (``benchmarks/bench_query_embed.py``, plugins/embed/README.md).
THREADS = 1
#: Most threads :meth:`MiniLM.embed_documents` runs calls on at once (each call one text, or
#: :data:`BATCH` for fp32, on one intra-op thread; ``InferenceSession.run`` may be called
#: from several threads). Bulk embedding is what cold embedding waits for: two such threads
#: on 2 cores embedded a vault's sections 1.6-2.2x faster for the same CPU time, where one
#: call on two intra-op threads gained 1.3-1.4x for 35% more CPU. At most four, so that a
#: large machine keeps cores for its host and other work.
MAX_WORKERS = 4


def usable_cores() -> int:
    """CPUs this process may run on (its affinity where the platform tells, else the count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: Seconds the builder child may take before it is stopped (a build takes well under a
#: minute; a hung child would otherwise block the recall that started it for good).
BUILD_TIMEOUT = 600.0
#: Environment variables the builder child keeps (with :data:`OFFLINE_ENV`): what Python and
#: its locale need, and ``PYTHONPATH`` (absolute entries only). Nothing else, so no credential
#: (``GOAT_API_KEY_*``, a provider's key) reaches it.
CHILD_ENV = (
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP",
    "SYSTEMROOT", "PYTHONPATH",
)  # fmt: skip
#: Text embedded to check a loaded graph.
PROBE = "Sync your notes across devices"


def graph_file(cache_dir: Path, variant: str) -> Path:
    """Where the built graph of ``variant`` is cached."""
    return cache_dir / "onnx" / f"minilm-{variant}-{WEIGHTS_SHA256[:16]}-b{BUILDER_VERSION}.onnx"


def graph_key(variant: str) -> str:
    """What a cached graph of ``variant`` was built from (written in its record)."""
    return f"{MODEL_ID} weights={WEIGHTS_SHA256} variant={variant} builder={BUILDER_VERSION}"


def child_env() -> dict[str, str]:
    """The builder child's environment: :data:`CHILD_ENV` from this one, and
    :data:`OFFLINE_ENV`."""
    env = {k: os.environ[k] for k in CHILD_ENV if k in os.environ}
    if "PYTHONPATH" in env:
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and os.path.isabs(p)]
        env["PYTHONPATH"] = os.pathsep.join(kept)
        if not kept:
            del env["PYTHONPATH"]
    return {**env, **OFFLINE_ENV}


def _build(model_dir: Path, variant: str, out: Path) -> None:
    """Build the graph of ``variant`` into ``out`` in a child process (``goat_embed._graph``
    run as a script), so the builder's working memory (several copies of the model: a peak
    RSS of 580 MB for int8, 400 MB for fp32) is never part of this process. The child runs
    with ``-P`` (the working folder is not on its ``sys.path``) in ``out``'s folder, with
    :func:`child_env`, and is stopped after :data:`BUILD_TIMEOUT` seconds.

    :raises ProviderUnavailable: the build failed or timed out (its error output is quoted).
    :raises OSError: the child ran out of space writing ``out`` (``ENOSPC``, ``EDQUOT``).
    """
    try:
        done = subprocess.run(
            [sys.executable, "-P", "-m", "goat_embed._graph", str(model_dir), variant, str(out)],
            capture_output=True,
            text=True,
            env=child_env(),
            cwd=out.parent,
            timeout=BUILD_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        raise ProviderUnavailable(
            f"{MODEL_ID}: building the {variant} ONNX graph took more than "
            f"{exc.timeout:g} s; it was stopped"
        ) from exc
    except OSError as exc:
        raise ProviderUnavailable(
            f"{MODEL_ID}: the {variant} ONNX graph builder could not start ({exc})"
        ) from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        full = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
        if any(f"[Errno {n}]" in line for line in tail for n in full):
            # the graph's folder is full: an OSError, so the cache builds it elsewhere
            raise OSError(
                errno.ENOSPC, f"building the {variant} ONNX graph ran out of space", str(out)
            )
        raise ProviderUnavailable(
            f"{MODEL_ID}: building the {variant} ONNX graph failed "
            f"(exit {done.returncode}): {' / '.join(tail)}"
        )


class MiniLM:
    """The loaded model (weights verified by sha256 first).

    :param cache_dir: the embedder's folder under the GOAT home (built graphs go to its
        ``onnx/``).
    :param variant: ``fp32`` or ``int8``.
    :param threads: ONNX Runtime intra-op threads per call.
    :param workers: threads :meth:`embed_documents` runs calls on; default
        ``min(usable_cores(), MAX_WORKERS)``.
    :raises ProviderUnavailable: no folder with the upstream files, or a sha256 mismatch
        (the graph is built or loaded on the first embedding: :attr:`session`).
    :raises ValueError: an unknown variant.
    """

    dimensions = DIMENSIONS

    def __init__(
        self,
        model_dir: Path,
        cache_dir: Path,
        variant: str = "int8",
        threads: int = THREADS,
        workers: int | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise ValueError(f"unknown MiniLM variant {variant!r}: one of {', '.join(VARIANTS)}")
        go_offline()
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from goat_embed._cache import cached_graph

        verify(model_dir / "model.safetensors", WEIGHTS_SHA256, MODEL_ID)
        verify(model_dir / "tokenizer.json", TOKENIZER_SHA256, MODEL_ID)
        self.model_dir = model_dir
        self.variant = variant
        self.batch = 1 if variant == "int8" else BATCH
        self.workers = max(1, workers if workers is not None else min(usable_cores(), MAX_WORKERS))
        self.identity = (
            f"{MODEL_ID}@{REVISION}#sha256={WEIGHTS_SHA256[:16]}+onnx-{variant}-b{BUILDER_VERSION}"
        )
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.enable_truncation(MAX_TOKENS)
        tok.no_padding()
        self.tokenizer = tok
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # no memory arena: it keeps the largest batch's activations for good (about 80 MB
        # more peak RSS with it), for no measurable speed here
        options.enable_cpu_mem_arena = False

        def load(graph: Path | bytes) -> Any:
            session = ort.InferenceSession(
                str(graph) if isinstance(graph, Path) else graph,
                options,
                providers=["CPUExecutionProvider"],
            )
            self._check(session)
            return session

        def open_graph() -> Any:
            return cached_graph(
                graph_file(cache_dir, variant),
                graph_key(variant),
                lambda out: _build(model_dir, variant, out),
                load,
            )

        self._open_graph = open_graph
        self._session: Any = None
        self._session_lock = threading.Lock()

    @property
    def session(self) -> Any:
        """The ONNX Runtime session, loaded on the first embedding rather than at
        construction: on first use the graph is built (several seconds), and a store that
        opens its embedder before it counts the notes to embed can report its progress first.

        :raises ProviderUnavailable: the graph cannot be built or loaded (``_cache.py``:
            a damaged cache is rebuilt once first). The next embedding tries again.
        """
        if self._session is None:
            with self._session_lock:
                if self._session is None:
                    self._session = self._open_graph()
        return self._session

    def _check(self, session: Any) -> None:
        """:raises ValueError: ``session`` is not a graph of this model's signature, or its
        embedding of :data:`PROBE` is not one finite unit vector of :data:`DIMENSIONS`."""
        inputs = sorted(i.name for i in session.get_inputs())
        outputs = [o.name for o in session.get_outputs()]
        if inputs != ["attention_mask", "input_ids"] or outputs != ["embeddings"]:
            raise ValueError(f"inputs {inputs} and outputs {outputs} are not MiniLM's")
        ids = np.asarray([self.tokenizer.encode(PROBE).ids], dtype=np.int64)
        got = session.run(["embeddings"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        vec = np.asarray(got[0])
        if vec.shape != (1, DIMENSIONS):
            raise ValueError(f"an embedding of shape {vec.shape}, not (1, {DIMENSIONS})")
        if not np.isfinite(vec).all() or abs(float(np.linalg.norm(vec)) - 1.0) > 1e-3:
            raise ValueError("an embedding that is not a finite unit vector")

    def _run(self, rows: list[list[int]]) -> Any:
        length = max(len(r) for r in rows)
        ids = np.zeros((len(rows), length), dtype=np.int64)
        mask = np.zeros((len(rows), length), dtype=np.int64)
        for r, e in enumerate(rows):
            ids[r, : len(e)] = e
            mask[r, : len(e)] = 1
        out = self.session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})
        return out[0]

    def embed_documents(self, texts: Sequence[str]) -> Any:
        """L2-normalised embeddings, one row per text: texts sorted by token count, each
        batch (:data:`BATCH` texts for fp32, one for int8) padded to its longest (at most
        :data:`MAX_TOKENS`), the batches run on :attr:`workers` threads. A text's vector does
        not depend on the thread count (each batch is one call on one intra-op thread)."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        encodings = self.tokenizer.encode_batch([encodable(t) for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [order[lo : lo + self.batch] for lo in range(0, len(order), self.batch)]

        def run(idx: list[int]) -> Any:
            return self._run([encodings[i].ids for i in idx])

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        _ = self.session  # loaded (or its failure raised) once, before any worker starts
        workers = min(self.workers, len(batches))
        if workers <= 1:
            for idx in batches:
                out[idx] = run(idx)
            return out
        with ThreadPoolExecutor(workers, thread_name_prefix="goat-embed") as pool:
            for idx, vecs in zip(batches, pool.map(run, batches), strict=True):
                out[idx] = vecs
        return out

    def embed_query(self, text: str) -> Any:
        return self._run([self.tokenizer.encode(encodable(text)).ids])[0]
