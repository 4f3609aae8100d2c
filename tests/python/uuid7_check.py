"""Reads UUIDs with Python's own uuid module and reports what it sees.

Usage: uuid7_check.py < uuids (one a line)
Prints JSON: {"count": n, "versions": [...distinct], "variants": [...distinct], "time_ms": [first, last]}
(the time is the UUID's top 48 bits: Python 3.11's uuid has no v7 helpers, so read them by hand).
"""

import json
import sys
import uuid

parsed = [uuid.UUID(line.strip()) for line in sys.stdin if line.strip()]
print(json.dumps({
    "count": len(parsed),
    "versions": sorted({u.version for u in parsed}),
    "variants": sorted({u.variant for u in parsed}),
    "time_ms": [parsed[0].int >> 80, parsed[-1].int >> 80],
    "increasing": all(a.int < b.int for a, b in zip(parsed, parsed[1:])),
}))
