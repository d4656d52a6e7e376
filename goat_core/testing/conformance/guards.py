"""Runtime guards around every contract test (docs/authors.md, Runtime guards).

While a contract test's body runs on the event loop, three audits watch it:

- **blocking calls on the loop**: an audit hook sees ``open``, ``sqlite3.connect``, a blocking
  ``socket.connect``, ``socket.getaddrinfo``, ``time.sleep`` and ``subprocess.Popen`` made
  on the event loop's thread while the loop runs (imports excepted), and a lag probe
  measures how late the loop wakes up. Either fails the test, naming the operation, or the
  lag and the bound (:data:`LAG_BOUND_S`, ``GOAT_SUITE_LAG_BOUND`` overrides it);
- **sockets**: a connection to an address the egress guard did not allow (the audit event
  ``goat.egress.allowed`` of ``goat_core.host``, raised by ``context.connect``,
  ``context.authorize`` and the guarded HTTP client) fails the test; for a provider that
  declares no network use, any connection does. Python's ``socket.connect`` is audited as
  it happens; on Linux the kernel's socket table is also sampled (every
  :data:`SAMPLE_INTERVAL_S` and at the end), so a connection a C driver opens is seen too
  (:mod:`goat_core.testing.conformance.sockets`);
- **environment**: reading an environment variable whose name contains ``KEY``, ``TOKEN``,
  ``SECRET`` or ``PASSWORD`` fails the test (secrets come from ``context.get_credential``;
  core's own credential override, read inside ``goat_core``, is exempt).

The audit hook is installed once per process and does nothing while no test is guarded.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any
from urllib.parse import urlsplit

from goat_core.host import canonical_host
from goat_core.host._egress_audit import defer_to_suite
from goat_core.testing.conformance import sockets

__all__ = ["LAG_BOUND_S", "Guard", "Violation", "lag_bound", "record_lag"]

#: The longest the event loop may stay blocked during a contract test, in seconds. Measured
#: with the in-tree providers on a loaded 2-core machine (docs/authors.md gives the
#: figures); legitimate work on the loop (lazy imports in a factory, validation) stays far
#: below it, a blocking call of a slow store goes over it.
LAG_BOUND_S = 1.0
#: How often the lag probe wakes up, in seconds.
PROBE_INTERVAL_S = 0.02
#: How often the kernel's socket table is read during a test, in seconds.
SAMPLE_INTERVAL_S = 0.05

#: What every egress failure says: the rule, and the two ways through it.
EGRESS_RULE = (
    "the egress rule: a provider connects only where GOAT allowed, after the user's explicit "
    "setup; call `await context.authorize(url)` before the driver connects (or open the "
    "stream with context.connect(url), HTTP with context.http_client())"
)

SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
#: Names that match :data:`SECRET_NAME` but hold no secret, read by TLS stacks for every
#: connection (``SSLKEYLOGFILE`` is the path of a key log a developer asked for; httpcore
#: and Python's ssl read it when they build a context).
NOT_SECRET_NAMES = frozenset({"SSLKEYLOGFILE"})

_BLOCKING_EVENTS = frozenset(
    {
        "open",
        "sqlite3.connect",
        "socket.connect",
        "socket.getaddrinfo",
        "time.sleep",
        "subprocess.Popen",
    }
)


def lag_bound() -> float:
    """:data:`LAG_BOUND_S`, or ``GOAT_SUITE_LAG_BOUND`` (seconds) when set."""
    raw = os.environ.get("GOAT_SUITE_LAG_BOUND")
    return float(raw) if raw else LAG_BOUND_S


@dataclass(frozen=True)
class Violation:
    """One broken runtime rule: ``kind`` is ``blocking``, ``egress`` or ``environment``."""

    kind: str
    message: str


@dataclass
class Guard:
    """The audits of one test. :meth:`start` on the loop, :meth:`stop` after the body."""

    provider: str
    network: bool
    loop_thread: int = 0
    violations: list[Violation] = field(default_factory=list)
    max_lag: float = 0.0
    _allowed: set[tuple[str, int | None]] = field(default_factory=set)
    _handle: asyncio.TimerHandle | None = None
    _expected: float = 0.0
    _active: bool = False
    _before: set[int] = field(default_factory=set)  # socket inodes held before the test
    _seen: set[int] = field(default_factory=set)  # inodes already judged
    _sampler: threading.Thread | None = None
    _stop_sampling: threading.Event = field(default_factory=threading.Event)
    _sampling: threading.Lock = field(default_factory=threading.Lock)

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> None:
        global _current
        self.loop_thread = threading.get_ident()
        _install()
        defer_to_suite(True)  # the host's own egress hook stands aside: this guard judges
        watch = sockets.available()
        if watch:  # before the audit starts: reading /proc is not the provider's work
            self._before = {t.inode for t in sockets.tcp_sockets()}
        _current = self
        self._active = True
        _patch_environ()
        if watch:
            self._stop_sampling.clear()
            self._sampler = threading.Thread(
                target=self._sample_loop, name="goat-suite-sockets", daemon=True
            )
            self._sampler.start()
        loop = asyncio.get_running_loop()
        self._expected = loop.time() + PROBE_INTERVAL_S
        self._handle = loop.call_at(self._expected, self._tick)

    def stop(self) -> None:
        global _current
        defer_to_suite(False)
        if self._sampler is not None:
            self._stop_sampling.set()
            self._sampler.join()
            self._sampler = None
            self._active = False  # the last look reads /proc on the loop: not the provider's
            self.sample()  # the last look: what the test's end still holds
        self._active = False
        _current = None
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.max_lag = max(self.max_lag, now - self._expected)
        if self._active:
            self._expected = now + PROBE_INTERVAL_S
            self._handle = loop.call_at(self._expected, self._tick)

    def check_lag(self) -> None:
        # The probe may still be pending: a loop blocked up to the end counts too.
        if self._handle is not None:
            loop = asyncio.get_running_loop()
            self.max_lag = max(self.max_lag, loop.time() - self._expected)
        bound = lag_bound()
        if self.max_lag > bound:
            self._add(
                "blocking",
                f"the event loop was blocked for {self.max_lag:.2f} s (bound {bound:g} s): "
                "a blocking call ran on the loop; run file, database and network work on a "
                "worker thread (StoreWorker, anyio.to_thread.run_sync) or use an async client",
            )

    def failure(self) -> str | None:
        """One message naming every broken runtime rule, or ``None``."""
        if not self.violations:
            return None
        seen: list[str] = []
        for v in self.violations:
            line = f"[{v.kind}] {v.message}"
            if line not in seen:
                seen.append(line)
        return f"provider {self.provider!r} broke a runtime rule:\n  " + "\n  ".join(seen[:5])

    def _add(self, kind: str, message: str) -> None:
        self.violations.append(Violation(kind, message))

    # -- audit ----------------------------------------------------------------------------------
    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "goat.egress.allowed":
            self._allow(str(args[0]))
            return
        if event == "socket.connect":
            self._socket(args)
        if event in _BLOCKING_EVENTS and threading.get_ident() == self.loop_thread:
            self._blocking(event, args)

    def _allow(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            port = parts.port or {"http": 80, "https": 443}.get(parts.scheme.lower())
        except ValueError:
            return
        if parts.hostname:
            self._allowed.add((canonical_host(parts.hostname), port))

    def _socket(self, args: tuple[Any, ...]) -> None:
        address = args[1] if len(args) > 1 else None
        if not (isinstance(address, tuple) and len(address) >= 2):
            where, host, port = str(address), None, None
        else:
            host, port = canonical_host(str(address[0])), address[1]
            where = f"{host}:{port}"
        if not self.network:
            self._add(
                "egress",
                f"a connection to {where} was opened, but the provider declares no network "
                f"use (ProviderSpec.network=False): {EGRESS_RULE}",
            )
            return
        if host is not None and self._passed_guard(host, port):
            return
        self._add(
            "egress", f"a connection to {where} did not pass GOAT's egress guard: {EGRESS_RULE}"
        )

    # -- the kernel's socket table ------------------------------------------------------------
    def _sample_loop(self) -> None:
        while not self._stop_sampling.wait(SAMPLE_INTERVAL_S):
            with self._sampling:
                if self._active:  # never while suspended: the host's own connections
                    self.sample()

    def sample(self) -> None:
        """Judge every TCP connection this process opened since the test began: each must
        lead to an address the egress guard allowed, or to a listener of this process (a
        test's own loopback server)."""
        held = sockets.tcp_sockets()
        listening = {t.local[1] for t in held if t.state == sockets.LISTEN}
        for tcp in held:
            if tcp.inode in self._before or tcp.inode in self._seen:
                continue
            if tcp.state == sockets.LISTEN or tcp.remote[1] == 0:
                continue
            self._seen.add(tcp.inode)
            if tcp.local[1] in listening:
                continue  # accepted by a listener of this process
            host, port = tcp.remote
            if tcp.remote[1] in listening and ipaddress.ip_address(host).is_loopback:
                continue  # to a listener of this process: a test's in-process server
            where = f"{host}:{port}"
            if not self.network:
                self._add(
                    "egress",
                    f"a TCP connection to {where} is open (the kernel's socket table), but "
                    f"the provider declares no network use (ProviderSpec.network=False): "
                    f"{EGRESS_RULE}",
                )
            elif not self._passed_guard(host, port):
                self._add(
                    "egress",
                    f"a TCP connection to {where} is open (the kernel's socket table: Python "
                    f"or C code opened it) that GOAT never allowed: {EGRESS_RULE}",
                )

    def _passed_guard(self, host: str, port: Any) -> bool:
        for allowed_host, allowed_port in self._allowed:
            if allowed_port != port:
                continue
            if allowed_host == host or not _is_ip(allowed_host):
                return True  # a host name: the address it resolved to is not known here
        return False

    def _blocking(self, event: str, args: tuple[Any, ...]) -> None:
        if not _loop_running():
            return
        frame = sys._getframe(3)
        if _importing(frame):
            return
        if event == "socket.connect" and not _blocking_socket(args):
            return  # a non-blocking connect: asyncio's own
        if event == "open" and not isinstance(args[0], str | bytes | os.PathLike):
            return  # os.fdopen of a descriptor
        what = _describe(event, args)
        self._add("blocking", f"{what} ran on the event loop{_where(frame)}")

    def read_env(self, key: str, frame: FrameType | None) -> None:
        if not SECRET_NAME.search(key) or key.upper() in NOT_SECRET_NAMES:
            return
        caller = _caller(frame)
        if caller is None:
            return
        module = caller.f_globals.get("__name__", "")
        if module.startswith("goat_core.") and not module.startswith("goat_core.testing"):
            return  # core's own credential override
        if module == "hypothesis" or module.startswith("hypothesis."):
            return  # the stateful test's engine looking for a CI (``bamboo.buildKey``)
        self._add(
            "environment",
            f"the environment variable {key!r} was read{_where(caller)}: read secrets with "
            "context.get_credential(name) (users set GOAT_API_KEY_<BINDING> or store them "
            "with goat bind --credential-stdin)",
        )


_current: Guard | None = None
_installed = False


def _install() -> None:
    global _installed
    if not _installed:
        sys.addaudithook(_audit)
        _installed = True


def _audit(event: str, args: tuple[Any, ...]) -> None:
    guard = _current
    if guard is not None and guard._active:
        guard.audit(event, args)


def _loop_running() -> bool:
    return asyncio._get_running_loop() is not None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _importing(frame: FrameType | None) -> bool:
    while frame is not None:
        name = frame.f_code.co_filename
        if (
            name.startswith("<frozen importlib")
            or "importlib/metadata" in name
            or ("importlib_metadata" in name)
        ):
            return True
        if "linecache" in name or name.endswith(("traceback.py", "inspect.py")):
            return True  # formatting a failure, not the provider's work
        frame = frame.f_back
    return False


def _blocking_socket(args: tuple[Any, ...]) -> bool:
    sock = args[0] if args else None
    try:
        return bool(sock is not None and sock.getblocking())
    except (OSError, AttributeError):
        return False


def _describe(event: str, args: tuple[Any, ...]) -> str:
    if event == "open":
        return f"open({os.fsdecode(args[0])!r})"
    if event == "sqlite3.connect":
        return f"sqlite3.connect({args[0]!r})"
    if event == "time.sleep":
        return f"time.sleep({args[0]})"
    if event == "socket.connect":
        return f"a blocking socket.connect({args[1]!r})"
    if event == "socket.getaddrinfo":
        return f"socket.getaddrinfo({args[0]!r})"
    return f"{event}{args[:1]!r}"


_SKIP_MODULES = ("os", "_collections_abc", "collections.abc", "posixpath", "genericpath", "codecs")


def _caller(frame: FrameType | None) -> FrameType | None:
    """The first frame outside os/collections machinery and this module."""
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module not in _SKIP_MODULES and module != __name__:
            return frame
        frame = frame.f_back
    return None


def _where(frame: FrameType | None) -> str:
    """`` in module.function (file:line)`` of the first frame outside the stdlib."""
    stdlib = os.path.dirname(os.__file__)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith((stdlib, "<")) and "/site-packages/anyio/" not in filename:
            module = frame.f_globals.get("__name__", "?")
            return f" in {module}.{frame.f_code.co_name} ({filename}:{frame.f_lineno})"
        frame = frame.f_back
    return ""


# -- the environment audit ------------------------------------------------------------------
_environ_patched = False


def _patch_environ() -> None:
    """Wrap ``os.environ``'s ``__getitem__`` and ``__contains__`` once; both report to the
    current guard. Iterating the environment (``os.environ.items()``, proxy discovery) is
    not a read of one variable and is not reported."""
    global _environ_patched
    if _environ_patched:
        return
    cls = type(os.environ)
    getitem: Callable[[Any, str], str] = cls.__getitem__
    contains: Callable[[Any, object], bool] = cls.__contains__

    def __getitem__(self: Any, key: str) -> str:
        guard = _current
        if guard is not None and guard._active and self is os.environ:
            frame = sys._getframe(1)
            if frame.f_code.co_name not in {"__iter__", "copy"}:
                guard.read_env(key, frame)
        return getitem(self, key)

    def __contains__(self: Any, key: object) -> bool:
        guard = _current
        if guard is not None and guard._active and self is os.environ and isinstance(key, str):
            guard.read_env(key, sys._getframe(1))
        return contains(self, key)

    cls.__getitem__ = __getitem__  # type: ignore[method-assign]
    cls.__contains__ = __contains__  # type: ignore[method-assign]
    _environ_patched = True


@contextmanager
def suspended() -> Iterator[None]:
    """No audit while the block runs: for suite code that runs a host (its own file I/O,
    keyring lookups, connections) rather than the provider under test. The TCP connections
    open when the block ends are the host's, exempt from the socket-table check."""
    guard = _current
    active = guard is not None and guard._active
    if guard is not None and active:
        with guard._sampling:
            guard._active = False
            if guard._sampler is not None:
                guard.sample()  # what the provider opened so far is judged now
        if guard._handle is not None:
            guard._handle.cancel()
            guard._handle = None
    try:
        yield
    finally:
        if guard is not None and active:
            with guard._sampling:
                if guard._sampler is not None:  # what the host opened meanwhile is its own
                    guard._before |= {t.inode for t in sockets.tcp_sockets()}
                guard._active = True
            loop = asyncio.get_running_loop()  # the lag probe starts again
            guard._expected = loop.time() + PROBE_INTERVAL_S
            guard._handle = loop.call_at(guard._expected, guard._tick)


def record_lag(test: str, lag: float) -> None:
    """Append ``test lag`` to the file ``GOAT_SUITE_LAG_LOG`` names, when set (to measure the
    bound)."""
    path = os.environ.get("GOAT_SUITE_LAG_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{test} {lag:.4f}\n")
