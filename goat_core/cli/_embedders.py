"""``goat embedders``: the installed embedders, and ``goat embedders fetch NAME [URL]``, the
one command that downloads model weights (through the egress guard, which allows that URL for
that command only)."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

from goat_core.cli._options import _home, _registry, home_option, json_option
from goat_core.cli._output import _table, emit_json

#: The synthetic binding id a fetch's requests are checked against.
FETCH_BINDING = "embedders-fetch"


def _rows(home: Path | None) -> list[dict[str, Any]]:
    from goat_core.contract import embedder_cache_dir

    data_dir = _home(home).data_dir
    rows = []
    for name, spec in sorted(_registry().embedders().items()):
        try:
            offline = bool(spec.available(embedder_cache_dir(data_dir, name)))
        except Exception:  # a broken check is reported as not on disk
            offline = False
        rows.append(
            {
                "name": name,
                "dimensions": spec.dimensions,
                "languages": list(spec.languages),
                "offline": offline,
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

    OFFLINE is yes when the model's weights are on disk (nothing is downloaded on a read);
    `goat embedders fetch NAME` downloads them for an embedder whose weights are not in a
    package."""
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
                    "yes" if r["offline"] else "no",
                    r["source"],
                ]
                for r in rows
            ],
            ["NAME", "DIMENSIONS", "LANGUAGES", "OFFLINE", "SOURCE"],
        )
    )


@embedders_cmd.command("fetch")
@click.argument("name")
@click.argument("url", required=False)
@home_option
@json_option
def fetch_cmd(name: str, url: str | None, home: Path | None, as_json: bool) -> None:
    """Download the weights of embedder NAME (from URL, default: the embedder's own) into
    the cache under the GOAT home, checking their sha256 when the embedder records one."""
    import anyio

    from goat_core.contract import embedder_cache_dir
    from goat_core.errors import BadInput

    spec = _registry().get_embedder(name)
    url = url or spec.fetch_url
    if not url:
        raise BadInput(
            f"embedder {name!r} takes no download: its weights come with {spec.source}; "
            "give a URL to fetch anyway"
        )
    _check_url(url)
    target_dir = embedder_cache_dir(_home(home).data_dir, name)
    target_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    filename = os.path.basename(urlsplit(url).path) or "weights"
    target = target_dir / filename
    digest = anyio.run(_download, url, target, spec.fetch_sha256 if url == spec.fetch_url else None)
    if as_json:
        emit_json({"name": name, "path": str(target), "sha256": digest, "url": url})
    else:
        click.echo(f"{name}: {target} (sha256 {digest})")


def _redacted(url: str) -> str:
    """``url`` with anything between ``//`` and ``@`` (user info) replaced by ``***``."""
    return re.sub(r"//[^/?#]*@", "//***@", url)


def _check_url(url: str) -> None:
    """:raises BadInput: ``url`` does not parse, is not https, or carries user info (a
    password in a URL is refused outright, and never echoed)."""
    from goat_core.errors import BadInput

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
        raise BadInput(f"only https URLs are fetched, got {url!r}")


async def _download(url: str, target: Path, sha256: str | None) -> str:
    import httpx2

    from goat_core.contract import Binding
    from goat_core.errors import ProviderUnavailable
    from goat_core.host import EGRESS_HEADER, guarded_http_client

    # The guard allows this URL, for this command only: a binding that exists nowhere else.
    binding = Binding(id=FETCH_BINDING, provider="embedder", egress=(url,))
    partial = target.with_name(target.name + ".part")
    hasher = hashlib.sha256()
    try:
        async with guarded_http_client(_registry(), binding, follow_redirects=False) as client:
            async with client.stream("GET", url) as response:
                if response.headers.get(EGRESS_HEADER) == "refused":
                    raise ProviderUnavailable(
                        f"the egress guard refused fetching {url} as the client sends it "
                        f"({response.url}); nothing was sent"
                    )
                if response.status_code != 200:
                    raise ProviderUnavailable(
                        f"fetching {url}: the server answered HTTP {response.status_code}"
                    )
                total = int(response.headers.get("content-length") or 0) or None
                bar: Any = click.progressbar(length=total, label=f"fetching {target.name}")
                with open(partial, "wb") as out, bar:
                    async for block in response.aiter_bytes():
                        out.write(block)
                        hasher.update(block)
                        bar.update(len(block))
                    out.flush()
                    os.fsync(out.fileno())
    except (httpx2.HTTPError, httpx2.InvalidURL, OSError) as exc:
        partial.unlink(missing_ok=True)
        raise ProviderUnavailable(f"fetching {url} failed ({type(exc).__name__}: {exc})") from exc
    digest = hasher.hexdigest()
    if sha256 is not None and digest != sha256:
        partial.unlink(missing_ok=True)
        raise ProviderUnavailable(f"{url} has sha256 {digest}, expected {sha256}; not kept")
    os.replace(partial, target)
    return digest


COMMANDS = [embedders_cmd]
