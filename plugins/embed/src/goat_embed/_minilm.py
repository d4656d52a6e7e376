"""all-MiniLM-L6-v2 on NumPy: the BERT encoder (6 layers, 384 wide, 12 heads), mean pooling
and L2 normalisation of sentence-transformers, read from the upstream ``model.safetensors``
(memory-mapped, never copied) and tokenised by Hugging Face ``tokenizers`` from the upstream
``tokenizer.json``. Matches sentence-transformers on PyTorch to 1e-4 (the plugin's tests).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from goat_embed import _meta
from goat_embed._weights import go_offline, verify

MODEL_ID = _meta.MINILM_ID
REVISION = _meta.MINILM_REVISION
WEIGHTS_SHA256 = _meta.MINILM_WEIGHTS_SHA256
TOKENIZER_SHA256 = _meta.MINILM_TOKENIZER_SHA256
DIMENSIONS = _meta.MINILM_DIMENSIONS
MAX_TOKENS = 128  # the sequence length the model was trained at (upstream card)
LAYERS, HEADS, EPS = 6, 12, 1e-12


def _safetensors(path: Path) -> dict[str, Any]:
    """The float32 tensors of a safetensors file. The word embeddings (half the file, only
    gathered from) stay a view of a memory map; the rest is copied into aligned arrays, which
    BLAS needs (the file's data starts at an arbitrary offset)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out: dict[str, Any] = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        lo, hi = meta["data_offsets"]
        raw = data[lo:hi]
        if name != "embeddings.word_embeddings.weight":
            raw = np.array(raw)  # aligned copy
        out[name] = raw.view(np.float32).reshape(meta["shape"])
    return out


#: Rows of an activation processed at once by :func:`_gelu` (1536 wide: 1.5 MB of float32,
#: so its intermediate passes stay in cache).
GELU_ROWS = 256
_SQRT_HALF = np.float32(math.sqrt(0.5))
# Abramowitz & Stegun 7.1.26: erfc(z) = t * poly(t) * exp(-z*z), t = 1 / (1 + p z), z >= 0,
# maximum absolute error of erf 1.5e-7 (below float32's resolution near 1)
_P = np.float32(0.3275911)
_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736))
_A1 = np.float32(0.254829592)


def _gelu(x: Any) -> Any:
    """Exact GELU (BERT's ``gelu``: x * Phi(x)), in place on float32 ``x`` (returned),
    block by block of :data:`GELU_ROWS` rows with no temporary larger than a block."""
    flat = x.reshape(-1, x.shape[-1])
    for lo in range(0, flat.shape[0], GELU_ROWS):
        b = flat[lo : lo + GELU_ROWS]
        z = np.abs(b)
        z *= _SQRT_HALF
        t = z * _P
        t += 1.0
        np.reciprocal(t, out=t)
        poly = t * _A[0]
        for a in _A[1:]:
            poly += a
            poly *= t
        poly += _A1
        poly *= t
        np.square(z, out=z)
        np.negative(z, out=z)
        np.exp(z, out=z)
        poly *= z  # erfc(|b| / sqrt 2)
        poly *= 0.5  # Phi(-|b|)
        np.subtract(1.0, poly, out=poly, where=b >= 0)  # Phi(b)
        b *= poly
    return x


def _layer_norm(x: Any, w: Any, b: Any) -> Any:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


class MiniLM:
    """The loaded model (weights verified by sha256 first).

    :raises ProviderUnavailable: no folder with the upstream files, or a sha256 mismatch.
    """

    dimensions = DIMENSIONS
    identity = f"{MODEL_ID}@{REVISION}#sha256={WEIGHTS_SHA256[:16]}"

    def __init__(self, model_dir: Path) -> None:
        go_offline()
        from tokenizers import Tokenizer

        verify(model_dir / "model.safetensors", WEIGHTS_SHA256, MODEL_ID)
        verify(model_dir / "tokenizer.json", TOKENIZER_SHA256, MODEL_ID)
        self.model_dir = model_dir
        self.w = _safetensors(model_dir / "model.safetensors")
        tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tok.enable_truncation(MAX_TOKENS)
        tok.no_padding()
        self.tokenizer = tok
        # per layer: fused QKV projection (one matmul instead of three)
        self._qkv = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}.attention.self."
            names = ("query", "key", "value")
            wq = np.concatenate([self.w.pop(p + n + ".weight") for n in names])
            bq = np.concatenate([self.w.pop(p + n + ".bias") for n in names])
            self._qkv.append((np.ascontiguousarray(wq.T), bq))
        # dense layers pre-transposed, contiguous; each original dropped once copied, so the
        # weights are held once (about 40 MB less resident memory)
        self._t = {
            k: np.ascontiguousarray(self.w.pop(k).T)
            for k in [k for k in self.w if k.endswith("dense.weight")]
        }

    # -- encoder --------------------------------------------------------------------------
    def _forward(self, ids: Any, mask: Any) -> Any:
        w, t = self.w, self._t
        n, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        width = x.shape[-1]
        x = x.reshape(n * length, width)  # dense layers as one 2-D matmul each (BLAS gemm)
        hd = width // HEADS
        bias = ((1.0 - mask[:, None, None, :]) * np.float32(-1e9)).astype(np.float32)
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            wqkv, bqkv = self._qkv[i]
            qkv = x @ wqkv + bqkv
            q, k, v = (
                np.ascontiguousarray(
                    qkv[..., j * width : (j + 1) * width]
                    .reshape(n, length, HEADS, hd)
                    .transpose(0, 2, 1, 3)
                )
                for j in range(3)
            )
            kt = np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            scores = q @ kt  # then in place: one (n, heads, length, length) array, not four
            scores /= np.float32(math.sqrt(hd))
            scores += bias
            scores -= scores.max(-1, keepdims=True)
            probs = np.exp(scores, out=scores)
            probs /= probs.sum(-1, keepdims=True)
            ctx = np.ascontiguousarray((probs @ v).transpose(0, 2, 1, 3)).reshape(n * length, width)
            out = (
                ctx @ t[p + "attention.output.dense.weight"] + w[p + "attention.output.dense.bias"]
            )
            x = _layer_norm(
                x + out,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            h = _gelu(x @ t[p + "intermediate.dense.weight"] + w[p + "intermediate.dense.bias"])
            out = h @ t[p + "output.dense.weight"] + w[p + "output.dense.bias"]
            x = _layer_norm(
                x + out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"]
            )
        x = x.reshape(n, length, width)
        summed = (x * mask[..., None]).sum(1)
        pooled = summed / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norm = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norm, 1e-12)).astype(np.float32)

    def embed_documents(self, texts: Sequence[str], batch: int = 16) -> Any:
        """L2-normalised embeddings, one row per text (batched by length to pad little)."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        for lo in range(0, len(order), batch):
            idx = order[lo : lo + batch]
            length = max(len(encodings[i].ids) for i in idx)
            ids = np.zeros((len(idx), length), dtype=np.int64)
            mask = np.zeros((len(idx), length), dtype=np.float32)
            for r, i in enumerate(idx):
                e = encodings[i].ids
                ids[r, : len(e)] = e
                mask[r, : len(e)] = 1.0
            out[idx] = self._forward(ids, mask)
        return out

    def embed_query(self, text: str) -> Any:
        return self.embed_documents([text])[0]
