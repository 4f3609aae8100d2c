"""Type stubs of idgen's native part; idgen/__init__.py re-exports all of it."""

import datetime
import uuid
from typing import Literal, Optional, Sequence, Union

MAX_BATCH: int
"""The most IDs or tickets one next_many() call makes."""

class IdgenError(Exception):
    """Base class of the errors idgen raises (bad arguments raise ValueError)."""

class LeaseUnavailable(IdgenError):
    """No lease could be had: refused, unreachable in time, or too few replicas acknowledged."""

class LeaseLost(IdgenError):
    """No live worker-ID lease right now (lost, expired, or closed). Nothing was issued."""

class ClockBehind(IdgenError):
    """The clock is further behind the last issued ID than max_drift_ms allows (or IDs start
    above a lease's start, ahead of the clock)."""

class AheadOfLease(IdgenError):
    """IDs ran ahead of the clock to the time the coordinator has on record for this lease."""

class TimeExhausted(IdgenError):
    """The layout's time field is used up."""

class ForkedError(IdgenError):
    """The object was made before this process forked (after_fork="refuse")."""

class TicketsUnavailable(IdgenError):
    """No ticket server gave tickets in time."""

AfterFork = Literal["refuse", "renew"]

class LibraryRefused(IdgenError):
    """The Functions library was not installed: a newer one is on the server, or it refused."""

class LeasedSnowflake:
    """Snowflake IDs made in this process under a worker-ID lease from the idgen Redis module
    or its Functions library."""

    def __new__(
        cls,
        url: str,
        namespace: str,
        *,
        ttl_ms: int = 10_000,
        layout: str = "twitter",
        epoch_ms: Optional[int] = None,
        max_drift_ms: int = 1_000,
        replicas: int = 0,
        start_within_ms: Optional[int] = None,
        after_fork: AfterFork = "refuse",
        backend: Literal["auto", "module", "library"] = "auto",
    ) -> "LeasedSnowflake": ...
    def next(self) -> int:
        """The next ID; raises LeaseLost, ClockBehind, AheadOfLease or ForkedError instead."""
    def next_many(self, n: int) -> list[int]:
        """n increasing IDs, all or none (at most MAX_BATCH)."""
    @property
    def worker_id(self) -> Optional[int]:
        """The worker ID leased now, or None while no lease is certainly alive."""
    @property
    def token(self) -> Optional[int]:
        """The lease's fencing token, or None while no lease is certainly alive."""
    @property
    def lease_until(self) -> Optional[int]:
        """Unix ms until which the lease is certainly alive by this process's clock."""
    def metrics(self) -> str:
        """The lease's metrics (idgen_lease_*) in the Prometheus text format."""
    def close(self) -> None:
        """Stops renewing and releases the lease; later calls raise LeaseLost."""
    def __enter__(self) -> "LeasedSnowflake": ...
    def __exit__(self, *exc: object) -> bool: ...

class TicketClient:
    """Tickets from Flickr-style ticket servers, or from plain Redis servers as segments
    (plain_redis=True), prefetched in blocks."""

    def __new__(
        cls,
        servers: Sequence[str],
        sequence: str = "default",
        *,
        block: int = 1_000,
        max_block: Optional[int] = None,
        target_ms: int = 1_000,
        password: Optional[str] = None,
        after_fork: AfterFork = "refuse",
        plain_redis: bool = False,
    ) -> "TicketClient": ...
    def next(self) -> int:
        """The next ticket; raises TicketsUnavailable when no server gave a block in time."""
    def next_many(self, n: int) -> list[int]:
        """n tickets (at most MAX_BATCH)."""
    @property
    def block_size(self) -> Optional[int]:
        """The size of the next block fetched."""
    @property
    def refills(self) -> Optional[int]:
        """Blocks fetched since start."""
    @property
    def unused(self) -> Optional[int]:
        """Tickets fetched and not handed out yet."""
    def metrics(self) -> str:
        """The client's metrics (idgen_prefetch_*) in the Prometheus text format."""

class Decoded:
    """The fields of a Snowflake ID."""

    unix_ms: int
    datacenter: int
    worker: int
    sequence: int

def decode(id: int, *, layout: str = "twitter", epoch_ms: Optional[int] = None) -> Decoded:
    """Splits a Snowflake ID into its fields, as SNOWFLAKE.DECODE does."""

def from_time(
    t: Union[int, str, datetime.datetime],
    *,
    end: Literal["min", "max"] = "min",
    layout: str = "twitter",
    epoch_ms: Optional[int] = None,
) -> int:
    """The lowest (or highest) Snowflake ID of the tick holding t, as SNOWFLAKE.FROMTIME."""

def uuid7() -> uuid.UUID:
    """A UUIDv7, monotonic in this process."""

def ulid() -> str:
    """A ULID, monotonic in this process, as 26 Crockford base32 characters."""

def after_fork_in_child() -> None:
    """Called by os.register_at_fork: objects made before now belong to the parent."""

class Sqids:
    """IDs shown as short strings in an alphabet of your own."""

    def __new__(cls, alphabet: Optional[str] = None, min_length: int = 0) -> "Sqids": ...
    def encode(self, numbers: Sequence[int]) -> str: ...
    def decode(self, text: str) -> list[int]: ...

class Sealer:
    """A keyed permutation (FF1, AES-256) of IDs that hides their time, order and count."""

    def __new__(cls, key: Union[bytes, str]) -> "Sealer": ...
    @property
    def key_id(self) -> str: ...
    def seal(self, id: int) -> int: ...
    def unseal(self, sealed: int) -> int: ...
    def seal_uuid7(self, uuid: Union[uuid.UUID, int]) -> uuid.UUID: ...
    def unseal_uuid7(self, uuid: Union[uuid.UUID, int]) -> uuid.UUID: ...

def install_library(
    url: str, *, horizon_ms: int = 30_000, time_zone: str = "UTC",
    sqids_alphabet: str = ..., sqids_min_length: int = 0,
) -> list[tuple[str, str]]:
    """Installs idgen's Functions library on the server at ``url`` (every primary of a
    Cluster), or upgrades it: ``(address, "installed" | "upgraded from X" | "reloaded" |
    "installed as 8 scripts (EVALSHA; ...)")`` each, the last on a server without FUNCTION
    (Redis 6), where leases then call the scripts. ``horizon_ms`` is its lease horizon,
    ``time_zone`` the zone of its date sequences' labels (UTC, an IANA name, +HH:MM),
    ``sqids_alphabet``/``sqids_min_length`` those of SQIDS replies (the module's defaults
    unless given). Raises
    LibraryRefused when a newer one is there or the server refuses."""

def library_version() -> str:
    """The version of the Functions library this package installs."""
