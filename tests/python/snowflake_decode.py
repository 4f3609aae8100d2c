"""Decodes Snowflake IDs with other people's code: snowflake-id-toolkit for Twitter and
Instagram IDs (at their published epochs), sonyflake-py's decompose for Sonyflake IDs (at its own
start time).

Usage: snowflake_decode.py twitter|instagram|sonyflake < ids (one a line)
Prints a JSON list of [time_ms, node, sequence] per ID: node is Twitter's 10-bit datacenter and
worker, Instagram's shard, Sonyflake's machine ID.
"""

import json
import sys

from snowflake_id_toolkit import InstagramSnowflakeID, TwitterSnowflakeID
from sonyflake import sonyflake

TWITTER_EPOCH_MS = 1288834974657  # Twitter's, as snowflake-id-toolkit's docs give it
INSTAGRAM_EPOCH_MS = 1314220021721  # Instagram's next_id(), as snowflake-id-toolkit's docs give it


def decode(profile, n):
    if profile == "twitter":
        i = TwitterSnowflakeID(n)
        return [i.timestamp_ms(TWITTER_EPOCH_MS), i.node_id(), i.sequence()]
    if profile == "instagram":
        i = InstagramSnowflakeID(n)
        return [i.timestamp_ms(INSTAGRAM_EPOCH_MS), i.node_id(), i.sequence()]
    if profile == "sonyflake":
        parts = sonyflake.SonyFlake.decompose(n)
        start_ms = int(sonyflake.SONYFLAKE_EPOCH.timestamp() * 1000)
        return [start_ms + parts["time"] * 10, parts["machine_id"], parts["sequence"]]
    raise SystemExit(f"unknown profile {profile}")


profile = sys.argv[1]
print(json.dumps([decode(profile, int(line)) for line in sys.stdin if line.strip()]))
