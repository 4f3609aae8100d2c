#!/usr/bin/env bash
# check-glibc.sh [MAX] FILE...: the highest GLIBC_ symbol version each ELF file needs
# (objdump -T), printed one line each; fails if any needs more than MAX (default 2.17, the
# glibc of the oldest distribution a release supports: docs/operations.md, "Installing a
# release").
set -euo pipefail
max=2.17
if [[ ${1:-} =~ ^[0-9]+\.[0-9]+$ ]]; then max=$1; shift; fi
[ $# -gt 0 ] || { echo "usage: check-glibc.sh [MAX] FILE..." >&2; exit 2; }
command -v objdump >/dev/null || { echo "check-glibc.sh: objdump missing (apt-get install binutils)" >&2; exit 1; }
status=0
for file in "$@"; do
  needs=$(objdump -T "$file" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
  [ -n "$needs" ] || { echo "$file: no GLIBC_ symbol versions (not a dynamically linked glibc ELF?)" >&2; status=1; continue; }
  if [ "$(printf '%s\n%s\n' "$needs" "$max" | sort -V | tail -1)" = "$max" ]; then
    echo "$file: needs GLIBC_$needs (at most $max: ok)"
  else
    echo "$file: needs GLIBC_$needs, above $max" >&2
    status=1
  fi
done
exit $status
