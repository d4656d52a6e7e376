"""HTTP-level guards under the MCP SDK: a response-body cap and a status recorder.

The mcp 2.x SDK reads plain JSON bodies unbounded and bounds SSE only per event, so every
POST response body is counted here as it streams. Going over the cap raises
:class:`ResponseTooLarge`, a subclass of ``httpx2.StreamError``: the SDK turns that into a
per-request error instead of crashing its transport (verified with mcp 2.3.0). Requests
carry ``Accept-Encoding: identity`` (set by the client), so bytes counted are bytes decoded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import httpx2

__all__ = ["CappedTransport", "ResponseTooLarge"]


class ResponseTooLarge(httpx2.StreamError):
    """A response body went over the cap (the SDK maps ``StreamError`` to a request error)."""


class _CappedStream(httpx2.AsyncByteStream):
    def __init__(
        self,
        inner: httpx2.AsyncByteStream,
        limit: int,
        declared: int | None,
        on_trip: Callable[[], None],
    ) -> None:
        self._inner = inner
        self._limit = limit
        self._declared = declared
        self._on_trip = on_trip

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._declared is not None and self._declared > self._limit:
            self._on_trip()
            raise ResponseTooLarge(f"response declares {self._declared} bytes, cap {self._limit}")
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                self._on_trip()
                raise ResponseTooLarge(f"response body exceeded the cap of {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class CappedTransport(httpx2.AsyncBaseTransport):
    """Caps the body of every POST response (plain JSON or SSE) at ``limit`` bytes.

    GET (the standalone SSE stream) is long-lived and bounded per event by the SDK's
    ``max_sse_event_size``. ``tripped`` counts cap hits so the client can report "too large"
    rather than the SDK's generic stream error.
    """

    def __init__(self, limit: int, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.limit = limit
        self.inner = inner if inner is not None else httpx2.AsyncHTTPTransport()
        self.tripped = 0

    def _trip(self) -> None:
        self.tripped += 1

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        if request.method != "POST":
            return response
        length = response.headers.get("content-length")
        declared = int(length) if length and length.isdigit() else None
        stream = response.stream
        assert isinstance(stream, httpx2.AsyncByteStream)
        # A new Response: an already-read one (MockTransport) keeps its bytes in ``_content``
        # and would bypass a swapped stream.
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_CappedStream(stream, self.limit, declared, self._trip),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self.inner.aclose()
