"""Decodes Sqids with sqids-python, an implementation we did not write.

Usage: sqids_decode.py ALPHABET MIN_LENGTH < sqids (one a line)
Prints a JSON list: the numbers of each Sqid, in order.
"""

import json
import sys

from sqids import Sqids

alphabet, min_length = sys.argv[1], int(sys.argv[2])
codec = Sqids(alphabet=alphabet, min_length=min_length)
print(json.dumps([codec.decode(line.strip()) for line in sys.stdin if line.strip()]))
