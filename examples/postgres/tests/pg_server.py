"""Start a real PostgreSQL server on a free loopback port (helpers for the fixtures and tests).

PostgreSQL refuses to run as root. When the tests run as root (as on CI), initdb and the
server run as the ``postgres`` system user, in a temporary folder that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

PASSWORD = "the-right-one"
ADMIN = "admin"  # the bootstrap superuser, with PASSWORD
USER = "goat"  # owns DATABASE; trusted on loopback, so it needs no password (like GOAT's default)
GUARDED = "guarded"  # logs in with PASSWORD only (scram-sha-256)
DATABASE = "goat"
# The first matching line wins: USER is trusted, every other role needs its password.
HBA = f"""host all {USER} 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""
CONF = """
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
fsync = on
synchronous_commit = on
"""


@dataclass(frozen=True)
class PgServer:
    url: str
    port: int
    password: str
    folder: Path

    def sql(self, statement: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Run one statement as the superuser (test code only, never inside a suite test)."""
        with psycopg.connect(
            host="127.0.0.1",
            port=self.port,
            user=ADMIN,
            password=self.password,
            dbname=DATABASE,
            autocommit=True,
        ) as connection:
            cursor = connection.execute(statement, params)  # type: ignore[arg-type]
            return cursor.fetchall() if cursor.description else []


def binaries() -> Path:
    """The newest /usr/lib/postgresql/<version>/bin holding initdb and pg_ctl."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [d for d in found if (d / "pg_ctl").exists() and (d / "postgres").exists()]
    if not found:
        message = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("CI"):
            pytest.fail(message)  # in CI a missing server is a broken setup, not a skip
        pytest.skip(message)
    return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:  # PostgreSQL refuses root
        return [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "postgres", "--", *argv]
    return argv


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(
        _as_server_user(argv), capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        pytest.fail(f"{what} failed ({done.returncode}): {(done.stderr or done.stdout)[-2000:]}")


@contextlib.contextmanager
def run_postgres(password: str = PASSWORD) -> Iterator[PgServer]:
    """A durable server (fsync, synchronous_commit) on 127.0.0.1 only, with password auth."""
    bin_dir = binaries()
    folder = Path(tempfile.mkdtemp(prefix="goat-postgres-"))
    try:
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(folder, owner.pw_uid, owner.pw_gid)
        pwfile = folder / "pw"
        pwfile.write_text(password + "\n")
        if os.geteuid() == 0:
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        data = folder / "data"
        _run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                ADMIN,
                f"--pwfile={pwfile}",
                "--auth=scram-sha-256",
                "--encoding=UTF8",
                "--no-locale",
                "--no-sync",  # initdb only; the server itself runs with fsync on
            ],
            "initdb",
        )
        pwfile.unlink()
        (data / "pg_hba.conf").write_text(HBA)  # keeps its owner (the server's user)
        port = _free_port()
        with open(data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(CONF)  # a file, not -c options: ALTER SYSTEM in a test may override it
        options = f"-p {port}"
        _run(
            [
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(folder / "log"),
                "-o",
                options,
                "-w",
                "-t",
                "30",
                "start",
            ],
            f"pg_ctl start on port {port} (see {folder / 'log'})",
        )
        try:
            with psycopg.connect(
                host="127.0.0.1",
                port=port,
                user=ADMIN,
                password=password,
                dbname="postgres",
                autocommit=True,
            ) as connection:
                connection.execute(f"CREATE ROLE {USER} LOGIN")
                connection.execute(f"CREATE ROLE {GUARDED} LOGIN PASSWORD '{password}'")
                connection.execute(f"CREATE DATABASE {DATABASE} OWNER {USER}")
                connection.execute(f"GRANT {USER} TO {GUARDED}")  # its rights on goat_notes
            yield PgServer(
                url=f"postgresql://127.0.0.1:{port}", port=port, password=password, folder=folder
            )
        finally:
            _run(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                "pg_ctl stop",
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
