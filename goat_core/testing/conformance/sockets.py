"""The process's TCP sockets as the kernel lists them, for the suite's egress audit.

Python's audit hook sees ``socket.connect`` only for sockets Python opens. A driver written
in C (libpq, hiredis) dials in C, where no hook runs. On Linux the kernel lists every socket:
``/proc/self/fd`` names this process's socket inodes, and ``/proc/net/tcp`` and
``/proc/net/tcp6`` give each inode's local and remote address. Joining the two shows every
TCP connection this process holds, whoever opened it.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass

__all__ = ["TcpSocket", "available", "tcp_sockets"]

_PROC_NET = ("/proc/net/tcp", "/proc/net/tcp6")
LISTEN = "0A"


@dataclass(frozen=True)
class TcpSocket:
    """One TCP socket of this process: addresses as text, ``state`` the kernel's hex code
    (``01`` established, ``02`` SYN sent, ``0A`` listening)."""

    inode: int
    local: tuple[str, int]
    remote: tuple[str, int]
    state: str


def available() -> bool:
    """Whether the kernel lists sockets here (Linux with /proc mounted)."""
    return os.path.isdir("/proc/self/fd") and os.path.exists(_PROC_NET[0])


def _own_inodes() -> set[int]:
    inodes: set[int] = set()
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # closed since the listing
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def _address(text: str) -> tuple[str, int]:
    """``0100007F:1F90`` (IPv4) or 32 hex digits and a port (IPv6), as the kernel prints
    them: each 32-bit word in host (little-endian) order."""
    raw, port = text.split(":")
    data = bytes.fromhex(raw)
    words = b"".join(data[i : i + 4][::-1] for i in range(0, len(data), 4))
    ip = ipaddress.ip_address(words)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip), int(port, 16)


def tcp_sockets() -> list[TcpSocket]:
    """Every TCP socket this process holds now (empty where :func:`available` is false)."""
    mine = _own_inodes()
    found: list[TcpSocket] = []
    for path in _PROC_NET:
        try:
            with open(path, encoding="ascii") as table:
                lines = table.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            inode = int(fields[9])
            if inode == 0 or inode not in mine:
                continue
            found.append(TcpSocket(inode, _address(fields[1]), _address(fields[2]), fields[3]))
    return found
