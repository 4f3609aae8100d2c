#!/usr/bin/env bash
# doc-table.sh DOC NAME TABLE: puts the Markdown in the file TABLE into DOC between the lines
# "<!-- NAME: written by make bench -->" and "<!-- end of NAME -->", so that a table of figures
# in the docs is the one the last `make bench` measured, not one copied by hand.
set -euo pipefail
doc=$1 name=$2 table=$3
begin="<!-- $name: written by make bench -->"
end="<!-- end of $name -->"
grep -qxF "$begin" "$doc" && grep -qxF "$end" "$doc" || {
  echo "doc-table.sh: $doc has no \"$begin\" ... \"$end\" lines" >&2
  exit 1
}
awk -v begin="$begin" -v end="$end" -v table="$table" '
  $0 == begin { print; while ((getline line < table) > 0) print line; skipping = 1; next }
  $0 == end { skipping = 0 }
  !skipping { print }
' "$doc" >"$doc.new"
mv "$doc.new" "$doc"
