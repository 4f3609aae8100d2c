"""Unique 64-bit IDs from the idgen project, with the guarantees of its Rust clients.

- :class:`LeasedSnowflake`: Snowflake IDs made in this process under a worker-ID lease from
  the idgen Redis module, or from its Functions library on a Redis that cannot load modules
  (:func:`install_library` puts it there), renewed in the background and fenced when lost.
- :class:`TicketClient`: tickets from Flickr-style ticket servers, prefetched in blocks.
- :func:`decode`, :func:`from_time`, :func:`uuid7`, :func:`ulid`, :class:`Sqids`,
  :class:`Sealer`: the module's codecs, from the same code.

A forked child never issues under its parent's lease or from its parent's blocks: see the
``after_fork`` argument.
"""

import atexit
import os
import weakref

from ._idgen import (
    MAX_BATCH,
    AheadOfLease,
    ClockBehind,
    Decoded,
    ForkedError,
    IdgenError,
    LeaseLost,
    LeaseUnavailable,
    LibraryRefused,
    Sealer,
    Sqids,
    TicketClient,
    TicketsUnavailable,
    TimeExhausted,
    decode,
    from_time,
    install_library,
    library_version,
    ulid,
    uuid7,
)
from ._idgen import LeasedSnowflake as _LeasedSnowflake
from ._idgen import after_fork_in_child as _after_fork_in_child

__all__ = [
    "MAX_BATCH",
    "AheadOfLease",
    "ClockBehind",
    "Decoded",
    "ForkedError",
    "IdgenError",
    "LeasedSnowflake",
    "LeaseLost",
    "LeaseUnavailable",
    "LibraryRefused",
    "Sealer",
    "Sqids",
    "TicketClient",
    "TicketsUnavailable",
    "TimeExhausted",
    "decode",
    "from_time",
    "install_library",
    "library_version",
    "ulid",
    "uuid7",
]

# Objects made before a fork belong to the parent: the child must know it forked.
os.register_at_fork(after_in_child=_after_fork_in_child)

# Leases still open when the interpreter exits are released, not left to expire.
_open_leases: "weakref.WeakSet[LeasedSnowflake]" = weakref.WeakSet()


class LeasedSnowflake(_LeasedSnowflake):
    __slots__ = ()
    __doc__ = _LeasedSnowflake.__doc__

    def __new__(cls, *args, **kwargs):  # type: ignore[no-untyped-def]
        leased = super().__new__(cls, *args, **kwargs)
        _open_leases.add(leased)
        return leased


def _close_open_leases() -> None:
    for leased in list(_open_leases):
        leased.close()


atexit.register(_close_open_leases)
