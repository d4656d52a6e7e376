"""Scope resolution: which one scope a chat or a working directory gets (docs/design.md,
Scopes).

Order of precedence in :func:`resolve_request`:

1. A chat's ``project_id`` always decides: ``Pen(project_id)``, derivation ``project``.
2. Without one, an explicit ``pin`` decides: ``Pen(pin)``, derivation ``pinned``.
3. Without either, and only when the host asks for it (``derive_from_cwd``), the working
   directory's *project identity* decides a derived Pen (derivation ``git-remote``,
   ``git-root`` or ``cwd``).
4. Otherwise the chat is loose: ``Global``.

Project identity of a directory (:func:`project_identity`), first that applies:

- **git remote**: the URL of remote ``origin``, else of the first remote in the repository's
  config, normalised by :func:`normalize_remote_url` so that the ssh and https forms of one
  repository agree (``git@github.com:Org/Repo.git`` and ``https://github.com/org/repo`` are
  both ``github.com/org/repo``). Every clone and worktree of a repository shares it.
- **git common dir**: ``git rev-parse --git-common-dir`` as an absolute real path; every
  worktree of one repository shares it (a repository without remotes).
- **the folder itself**: its real path (symlinks resolved).

The derived Pen id is :func:`goat_core.contract.derive_pen_id` of a display name and the
identity, ``<name slug>-<8 hex of sha256(identity)>``, so two repositories or folders with the
same name never share a Pen. The display name comes from the identity (the remote's last path
segment, the main worktree's folder, or the folder), never from the current subdirectory or
worktree folder, so a repository's subdirectories and worktrees all land in one Pen.

The home directory and ``/`` are never projects: a working directory equal to either (or a
repository whose work tree is either, such as a dotfiles repository in ``$HOME``) would give
one Pen to everything a user keeps there, silently mixing unrelated work. A working directory
of ``$HOME`` or ``/`` resolves to Global; a repository rooted there is ignored and the
folder itself is used.

git is run as a subprocess (``git -C <dir> ...``) with a short timeout and with every
``GIT_*`` environment variable removed, so ``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_CONFIG_*``
and friends cannot point it at another repository. No git installed, or a directory that is
not in a repository, falls back to the next rule. A git that hangs past the timeout, or that
refuses a repository it considers unsafe (``safe.directory``), raises
:class:`~goat_core.errors.ScopeError` instead: guessing a different identity would put memory
into a different Pen.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from goat_core.contract import (
    Derivation,
    ProjectRecord,
    Scope,
    ScopeRequest,
    ScopeResolution,
    derive_pen_id,
)
from goat_core.errors import ScopeError

__all__ = [
    "GIT_TIMEOUT_SECONDS",
    "is_never_a_project",
    "kept_pen",
    "normalize_remote_url",
    "project_identity",
    "project_record",
    "resolve_request",
]

#: Seconds each git call may take before resolution gives up with a ScopeError.
GIT_TIMEOUT_SECONDS = 3.0

_SCHEME_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SCP_LIKE = re.compile(r"^(?:(?P<user>[^@/]+)@)?(?P<host>\[[^\]]+\]|[^:/\[\]]+):(?P<path>.*)$")
_NETWORK_SCHEMES = {"ssh", "git+ssh", "ssh+git", "git", "http", "https", "ftp", "ftps"}


# -- remote URLs --------------------------------------------------------------------------


def normalize_remote_url(url: str, base: Path | None = None) -> str | None:
    """Normalise a git remote URL to one identity string, or ``None`` if it is unusable.

    Network remotes become ``<host>/<path>``: the scheme, user name, password (never kept),
    port, query, fragment, trailing ``/`` and a trailing ``.git`` are dropped, and host and
    path are lowercased. So ``git@github.com:Org/Repo.git``, ``ssh://git@github.com/org/repo``,
    ``https://github.com/org/repo`` and ``https://user@github.com/Org/Repo.git/`` are all
    ``github.com/org/repo``.

    Why lowercase the path too: GitHub, GitLab, Bitbucket and Azure DevOps treat owner and
    repository names case-insensitively, and clones of one repository made from URLs typed
    with different case are common; two distinct repositories differing only in case on a
    case-sensitive server are not. Why drop the port: the ssh and https ports of one server
    differ (``ssh://git@host:2222/x`` and ``https://host/x`` are one repository). Servers
    whose ssh and https paths differ in layout (Bitbucket Server's ``/scm/``, Azure DevOps's
    ``v3/``) are not unified.

    Local remotes (a path or ``file://`` URL) become ``file://<real path>`` with a trailing
    ``.git`` kept (the folder is what it is); a relative path is taken relative to ``base``
    (the repository's work tree), like git does.

    :param url: the remote URL as ``git remote get-url`` prints it.
    :param base: the directory a relative local path is relative to.
    """
    url = url.strip()
    if not url:
        return None
    if _SCHEME_URL.match(url):
        return _normalize_scheme_url(url, base)
    scp = _SCP_LIKE.match(url)
    if scp and not (len(scp["host"]) == 1 and os.name == "nt"):  # C:\ is a Windows path
        return _join(scp["host"], scp["path"])
    return _local(url, base)


def _normalize_scheme_url(url: str, base: Path | None) -> str | None:
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # raises ValueError on a malformed port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme == "file":
        return _local(parts.path, base) if parts.path else None
    if scheme not in _NETWORK_SCHEMES or not host:
        return None
    return _join(host, parts.path)


def _join(host: str, path: str) -> str | None:
    host = host.strip("[]").lower()
    segments = [s for s in path.split("/") if s]
    if segments and segments[-1].lower().endswith(".git"):
        segments[-1] = segments[-1][: -len(".git")]
    segments = [s for s in segments if s]
    if not host or not segments:
        return None
    return f"{host}/{'/'.join(segments).lower()}"


def _local(path: str, base: Path | None) -> str | None:
    p = Path(path).expanduser()
    if not p.is_absolute():
        if base is None:
            return None
        p = base / p
    return "file://" + Path(os.path.realpath(p)).as_posix()


# -- git --------------------------------------------------------------------------------


class _NotARepo(Exception):
    """git is missing, or the directory is not inside a git work tree."""


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("GIT_")}
    env.update(
        {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C", "LANGUAGE": "C"}
    )
    return env


def _git(cwd: Path, *args: str) -> str:
    """Run ``git -C cwd args``; stdout without the trailing newline.

    :raises _NotARepo: git is missing or exits non-zero.
    :raises ScopeError: git timed out, or refused an unsafe repository.
    """
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args],
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except FileNotFoundError as exc:  # no git on PATH
        raise _NotARepo("git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise ScopeError(
            f"git did not answer within {GIT_TIMEOUT_SECONDS:g} s in {cwd}; "
            "refusing to guess the project identity (it decides the Pen)"
        ) from exc
    except OSError as exc:
        raise _NotARepo(str(exc)) from exc
    if done.returncode != 0:
        if "dubious ownership" in done.stderr:
            raise ScopeError(
                f"git refuses the repository at {cwd} (dubious ownership); run "
                f"`git config --global --add safe.directory <repo>` so its project "
                "identity can be read"
            )
        raise _NotARepo(done.stderr.strip())
    return done.stdout.rstrip("\n")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _home() -> Path | None:
    try:
        return _real(Path.home())
    except (RuntimeError, KeyError, OSError):
        return None


def is_never_a_project(path: Path) -> bool:
    """``True`` for the home directory and the filesystem root (compared as real paths):
    such a directory never becomes a Pen, since it would gather everything kept there."""
    real = _real(path)
    return real.parent == real or real == _home()


def _remote_identity(top: Path) -> tuple[str, str] | None:
    """``(identity, remote name)`` of ``origin`` or else the first remote, if usable."""
    try:
        listing = _git(top, "config", "--local", "--get-regexp", r"^remote\..*\.url$")
    except _NotARepo:  # exit 1: no remote configured
        return None
    names: list[str] = []
    for line in listing.splitlines():
        key = line.split(" ", 1)[0]
        name = key[len("remote.") : -len(".url")]
        if name and name not in names:
            names.append(name)
    if not names:
        return None
    name = "origin" if "origin" in names else names[0]
    try:
        url = _git(top, "remote", "get-url", name)  # applies url.<base>.insteadOf
    except _NotARepo:
        return None
    identity = normalize_remote_url(url, base=top)
    return (identity, name) if identity else None


def _repo_paths(cwd: Path) -> tuple[Path, Path] | None:
    """``(work tree top, git common dir)`` as real paths, or ``None`` outside a repository."""
    try:
        out = _git(cwd, "rev-parse", "--show-toplevel", "--git-common-dir")
    except _NotARepo:
        return None
    lines = out.splitlines()
    if len(lines) != 2 or not lines[0] or not lines[1]:
        return None
    top = _real(Path(lines[0]))
    common = Path(lines[1])
    if not common.is_absolute():  # relative to the directory git ran in
        common = cwd / common
    return top, _real(common)


def _common_dir_name(common: Path) -> str:
    """The main worktree's folder name for ``…/app/.git``; ``app`` for a bare ``app.git``."""
    if common.name == ".git":
        return common.parent.name
    return common.name[: -len(".git")] if common.name.endswith(".git") else common.name


def _remote_name(identity: str) -> str:
    last = PurePosixPath(identity.removeprefix("file://")).name
    return last[: -len(".git")] if last.endswith(".git") else last


def _identify(cwd: Path) -> tuple[str, Derivation, str, str]:
    if not cwd.is_dir():
        raise ScopeError(f"working directory {cwd} does not exist or is not a directory")
    folder = _real(cwd)
    repo = _repo_paths(folder)
    if repo is not None and not is_never_a_project(repo[0]):
        top, common = repo
        remote = _remote_identity(top)
        if remote is not None:
            identity, name = remote
            detail = f"git remote {name!r}: {identity}"
            return identity, Derivation.GIT_REMOTE, _remote_name(identity), detail
        detail = f"git repository without remotes at {common.as_posix()}"
        return common.as_posix(), Derivation.GIT_ROOT, _common_dir_name(common), detail
    reason = "outside a git repository" if repo is None else "its repository is rooted at ~ or /"
    detail = f"folder {folder.as_posix()} ({reason})"
    return folder.as_posix(), Derivation.CWD, folder.name, detail


def project_record(cwd: Path) -> ProjectRecord | None:
    """Where ``cwd``'s project lives, for a binding to record (``goat bind`` in the folder):
    the main worktree's folder of its repository and the repository's first commit, else
    the folder itself. ``None`` for ``$HOME`` and ``/``.

    :raises ScopeError: as :func:`project_identity`.
    """
    if is_never_a_project(cwd.expanduser()):
        return None
    folder = _real(cwd)
    repo = _repo_paths(folder)
    if repo is None or is_never_a_project(repo[0]):
        return ProjectRecord(location=folder.as_posix())
    _top, common = repo
    main = common.parent if common.name == ".git" else common
    try:
        roots = _git(main, "rev-list", "--max-parents=0", "HEAD").split()
    except _NotARepo:  # no commit yet
        roots = []
    return ProjectRecord(location=main.as_posix(), root=min(roots) if roots else None)


def _has_remote(cwd: Path) -> bool:
    repo = _repo_paths(_real(cwd))
    return repo is not None and _remote_identity(repo[0]) is not None


def kept_pen(
    cwd: Path, derived: Scope, bindings: Iterable[tuple[Scope, tuple[ProjectRecord, ...]]]
) -> tuple[Scope, str] | None:
    """The bound Pen ``cwd`` keeps when its identity changed (a git remote added or changed,
    ``git init``): ``(pen, why)`` when the Pen it derives now (``derived``) is unbound and
    exactly one other bound Pen recorded this folder's project (``goat bind`` in it), else
    ``None`` (serve ``derived``). Memory never moves silently to an unbound Pen.

    A record matches at the same location with the same first commit. A record without one
    (a folder, or a repository bound before its first commit) matches while the repository
    has no remote, so a different repository cloned at the same path never inherits a Pen.

    :param bindings: every bound scope with its records.
    :raises ScopeError: as :func:`project_identity`.
    """
    bound = dict(bindings)
    if derived.pen_id is None or derived in bound:
        return None
    here = project_record(cwd)
    if here is None:
        return None
    remote: bool | None = None
    kept: list[Scope] = []
    for scope, records in bound.items():
        for record in records:
            if record.location != here.location:
                continue
            if record.root is None and here.root is not None:
                remote = _has_remote(cwd) if remote is None else remote
                if remote:
                    continue
            elif record.root != here.root:
                continue
            kept.append(scope)
            break
    if len(kept) != 1:
        return None
    return kept[0], f"bound for this folder ({here.location})"


def project_identity(cwd: Path) -> tuple[str, Derivation, str]:
    """The project identity of a working directory (rules in the module docstring).

    :param cwd: an existing directory.
    :returns: ``(identity, derivation, basename)``: ``identity`` is the normalised remote
        (``github.com/org/repo``), the git common dir's real path, or the folder's real path;
        ``derivation`` is ``git-remote``, ``git-root`` or ``cwd``; ``basename`` is the name
        the Pen id is slugified from (pass both to :func:`~goat_core.contract.derive_pen_id`).
    :raises ScopeError: ``cwd`` is not a directory, git timed out, or git refused the
        repository as unsafe.
    """
    identity, derivation, basename, _detail = _identify(cwd)
    return identity, derivation, basename


def resolve_request(request: ScopeRequest) -> ScopeResolution:
    """Resolve what a host knows about a chat to exactly one scope (docs/design.md, Scopes).

    ``project_id`` always decides (``project``); else ``pin`` (``pinned``); else, when
    ``derive_from_cwd`` is set and ``cwd`` is given, a Pen derived from the directory's
    project identity (``git-remote``, ``git-root`` or ``cwd``, with ``identity`` and a
    ``detail`` line for status); else Global (``global``). A ``cwd`` of ``$HOME`` or ``/``
    resolves to Global.

    :raises ScopeError: an invalid project id or pin (the Pen id rule is named), a working
        directory that does not exist, or git failing as described in
        :func:`project_identity`.
    """
    if request.project_id is not None:
        return ScopeResolution(
            scope=Scope.pen(request.project_id),
            derivation=Derivation.PROJECT,
            detail="the chat's project id",
        )
    if request.pin is not None:
        return ScopeResolution(
            scope=Scope.pen(request.pin), derivation=Derivation.PINNED, detail="pinned Pen id"
        )
    if request.derive_from_cwd and request.cwd is not None:
        cwd = request.cwd.expanduser()
        if is_never_a_project(cwd):
            return ScopeResolution(
                scope=Scope.global_(),
                derivation=Derivation.GLOBAL,
                detail=f"{cwd} is the home directory or the filesystem root, never a Pen",
            )
        identity, derivation, basename, detail = _identify(cwd)
        return ScopeResolution(
            scope=Scope.pen(derive_pen_id(basename, identity)),
            derivation=derivation,
            identity=identity,
            detail=detail,
        )
    return ScopeResolution(scope=Scope.global_(), derivation=Derivation.GLOBAL, detail="loose chat")
