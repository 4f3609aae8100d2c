"""Real servers for the idgen package's tests: redis-server with the module, ticket servers.

The binaries are this checkout's release build (`make build`); the package is the wheel built
from this checkout (`make wheel`), installed into target/venv by scripts/python-tests.sh.
"""

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator, List, Optional

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / "target" / "release"
MODULE = RELEASE / "libredis_idgen.so"
TICKET_SERVER = RELEASE / "ticket-server"
REDIS_SERVER = os.environ.get("IDGEN_SERVER", "redis-server")
HORIZON_MS = 1_500


def redis6() -> str:
    """A Redis 6.0 server program (no FUNCTION): IDGEN_REDIS6, or Debian 11's redis built into
    the cache by scripts/debian-server.sh."""
    if os.environ.get("IDGEN_REDIS6"):
        return os.environ["IDGEN_REDIS6"]
    out = subprocess.run(
        [str(ROOT / "scripts" / "debian-server.sh"), "redis", "bullseye"],
        check=True, capture_output=True, text=True,
    )
    return out.stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(check, what: str, within: float = 10.0) -> None:
    """Polls `check` until it is true, failing with `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, redis.RedisError):
            pass
        time.sleep(0.02)
    raise AssertionError(f"{what} within {within} s")


class RedisServer:
    """A redis-server on a free loopback port with the idgen module loaded."""

    def __init__(
        self, data_dir: Path, env: Optional[dict] = None, module: bool = True,
        program: str = REDIS_SERVER,
    ) -> None:
        assert MODULE.exists(), f"{MODULE} is missing: run make build"
        self.program = program
        self.port = free_port()
        self.data_dir = data_dir
        self.env = env
        self.module = module
        self.process: Optional[subprocess.Popen] = None
        self.start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/"

    def start(self) -> None:
        args = [
            self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(self.data_dir),
        ]
        if self.module:
            # The longest lease TTL allowed, and how far past its start the coordinator fences
            # grants: the tests' leases last 1.5 s (the default horizon is 30 s).
            args += ["--loadmodule", str(MODULE), "workerid-horizon-ms", str(HORIZON_MS)]
        log = open(self.data_dir / "redis.log", "ab")
        self.process = subprocess.Popen(args, stdout=log, stderr=log, env=self.env)
        wait_for(lambda: self.client().ping(), f"redis-server on port {self.port} answers")

    def wait_past_lease_fence(self) -> None:
        """Grants start above the server's load plus the horizon: wait until that has passed."""
        fence = int(self.client().info("idgen")["idgen_workerid_fence_ms"])
        time.sleep(max(0, fence - time.time_ns() // 1_000_000) / 1000 + 0.02)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=5)

    def kill(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def leases(self, namespace: str) -> list:
        """WORKERID.LIST: [worker_id, token, expires_at_ms, until_ms] per live lease."""
        if not self.module:
            return self.client().execute_command("FCALL", "workerid_list", 1, namespace)
        return self.client().execute_command("WORKERID.LIST", namespace)

    def managed_url(self) -> str:
        """The URL of a user as a managed service gives one: denied MODULE, CONFIG, DEBUG and
        SHUTDOWN (made on first use)."""
        self.client().execute_command(
            "ACL", "SETUSER", "app", "on", ">app-secret", "~*", "&*", "+@all", "-module",
            "-config", "-debug", "-shutdown",
        )
        return f"redis://app:app-secret@127.0.0.1:{self.port}/"

    def wait_past_library_fence(self) -> None:
        """The library's grants start above the server's start (its uptime, whole seconds)
        plus the horizon: wait until that has passed."""
        wait_for(
            lambda: self.client().info("server")["uptime_in_seconds"] * 1000 > HORIZON_MS + 1000,
            "the server's uptime passes the horizon",
        )

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)


class TicketServer:
    """One ticket server of a set, on a free loopback port, with its own data directory."""

    def __init__(self, offset: int, increment: int, data_dir: Path) -> None:
        assert TICKET_SERVER.exists(), f"{TICKET_SERVER} is missing: run make build"
        self.port = free_port()
        self.args = [
            str(TICKET_SERVER), "serve", "--listen", f"127.0.0.1:{self.port}",
            "--offset", str(offset), "--increment", str(increment), "--data-dir", str(data_dir),
        ]
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log = data_dir.parent / f"ticket-{offset}.log"
        self.process = subprocess.Popen(
            self.args + ["--init"], stdout=subprocess.DEVNULL, stderr=open(self.log, "ab")
        )
        wait_for(lambda: redis.Redis(port=self.port).ping(), f"ticket server {offset} answers")

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def tmp_dir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="idgen-py-") as d:
        yield Path(d)


@pytest.fixture
def coordinator(tmp_dir: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_dir)
    server.wait_past_lease_fence()
    yield server
    server.kill()


@pytest.fixture
def library_coordinator(tmp_dir: Path) -> Iterator[RedisServer]:
    """A redis-server without the module, as a managed service's: the library is for the test
    to install."""
    server = RedisServer(tmp_dir, module=False)
    yield server
    server.kill()


@pytest.fixture
def ticket_pair(tmp_dir: Path) -> Iterator[List[TicketServer]]:
    servers = [TicketServer(k, 2, tmp_dir / f"t{k}") for k in (1, 2)]
    yield servers
    for server in servers:
        server.kill()
