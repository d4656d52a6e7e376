"""An offline OpenAI-compatible embeddings endpoint for the live Hindsight tests (stdlib only).

``python embed_stub.py PORT [DIM]`` serves ``POST /v1/embeddings`` on 127.0.0.1 only:
``{"model", "input": str | [str], "encoding_format"?, "dimensions"?}`` ->
``{"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}``.
Vectors are deterministic: the set of distinct words (Unicode letters and digits, lowercased),
hashed into signed buckets and L2-normalised, so texts sharing words are similar whatever their
length or repetitions (a one-word query finds a four-word note at cosine 0.5, well above
Hindsight's semantic cut-off). Hindsight's real embedding providers need a network model hub.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _hash(feature: str) -> int:
    return int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")


def embed(text: str, dim: int) -> list[float]:
    vector = [0.0] * dim
    words = sorted(set(WORD.findall(text.lower())))
    for feature, weight in [("w:" + w, 1.0) for w in words] or [("empty", 1.0)]:
        h = _hash(feature)
        vector[h % dim] += weight if (h >> 32) & 1 else -weight
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    dim = 384

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "stub-embed", "object": "model"}]})
        else:
            self._send(200, {"ok": True})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if not self.path.rstrip("/").endswith("/embeddings"):
            self._send(404, {"error": {"message": "not found"}})
            return
        inputs = request.get("input", [])
        inputs = [inputs] if isinstance(inputs, str) else inputs
        dim = int(request.get("dimensions") or self.dim)
        data = []
        for index, text in enumerate(inputs):
            vector: Any = embed(text if isinstance(text, str) else " ".join(map(str, text)), dim)
            if request.get("encoding_format") == "base64":
                vector = base64.b64encode(struct.pack(f"<{dim}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(len(str(t).split()) for t in inputs)
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": request.get("model", "stub"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )


def main() -> None:
    port = int(sys.argv[1])
    Handler.dim = int(sys.argv[2]) if len(sys.argv) > 2 else 384
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
