"""The private Ray instance `codebox batch` starts is reachable from this machine only (docs/scale-out.md,
"The local instance"). A real instance is started the way `codebox batch` starts it
(`start_local_ray()` in a fresh single-threaded process); then every listening TCP socket of every Ray
process is read from `/proc` (by the sockets' inodes) and must be on a loopback address, the processes'
network must have no interface but `lo`, and connecting to each port from this host's own addresses
must fail. Before the fix, the GCS, raylet, object manager and workers listened on every interface."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.factories.waiting import wait_until

REPO = Path(__file__).resolve().parents[2]
DRIVER = textwrap.dedent("""
    import os, sys
    from codebox_tui.batch import start_local_ray, stop_ray
    address = start_local_ray(num_cpus=1)
    import ray

    @ray.remote
    def pid():
        return os.getpid()

    print(address, ray.get(pid.remote()), flush=True)
    sys.stdin.readline()
    stop_ray()
""")


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def _listening(pid: int) -> list[tuple[str, int, str]]:
    """(address, port, inode) of every TCP socket listening in ``pid``'s network namespace."""
    out = []
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            raw, port = fields[1].split(":")
            data = bytes.fromhex(raw)
            # /proc prints each 32-bit word of the address in host (little-endian) order
            data = b"".join(data[i : i + 4][::-1] for i in range(0, len(data), 4))
            address = str(ipaddress.ip_address(data))
            out.append((address, int(port, 16), fields[9]))
    return out


def _is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def _host_addresses() -> list[str]:
    found = subprocess.run(["hostname", "-I"], capture_output=True, text=True, check=False).stdout.split()
    return [a for a in found if not _is_loopback(a)]


def test_the_local_ray_instance_listens_on_loopback_only_and_is_unreachable_from_outside() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert driver.stdout is not None and driver.stdin is not None
        line = driver.stdout.readline()
        assert line, driver.stderr.read() if driver.stderr else ""
        address, worker = line.split()
        processes = _descendants(driver.pid)
        assert int(worker) in processes  # the worker that ran the task is one of the instance's processes
        names = {Path(f"/proc/{p}/comm").read_text().strip() for p in processes if Path(f"/proc/{p}/comm").exists()}
        assert {"gcs_server", "raylet"} <= names, names
        mine = {inode for p in processes for inode in _socket_inodes(p)}
        listening = [(a, port) for a, port, inode in _listening(driver.pid) if inode in mine]
        ports = {port for _, port in listening}
        assert int(address.rsplit(":", 1)[1]) in ports  # the GCS is among them
        assert len(ports) >= 4, listening  # GCS, raylet, object manager, driver and worker servers
        exposed = [(a, port) for a, port in listening if not _is_loopback(a)]
        assert exposed == [], exposed
        interfaces = [
            row.split(":")[0].strip() for row in Path(f"/proc/{driver.pid}/net/dev").read_text().splitlines()[2:]
        ]
        assert interfaces == ["lo"]
        for host in _host_addresses():
            for port in sorted(ports):
                with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
                    probe.settimeout(5)
                    assert probe.connect_ex((host, port)) != 0, f"{host}:{port} is reachable"
    finally:
        if driver.stdin is not None:
            driver.stdin.close()
        try:
            driver.wait(timeout=60)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
    wait_until(lambda: all(not Path(f"/proc/{p}").exists() or p == driver.pid for p in processes), timeout=60)
