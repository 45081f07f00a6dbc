#!/usr/bin/env bash
# //docs:docs_test: docs/check_docs.sh over the source tree. The runfile is a link to the
# source file, so the tree is the folder above the one it resolves into.
set -uo pipefail
checker=$(readlink -f docs/check_docs.sh)
root=$(dirname "$(dirname "$checker")")
if [ ! -f "$root/README.md" ] || [ ! -f "$root/WORKSPACE" ]; then
  echo "docs_test: $checker does not resolve into the source tree (found $root)" >&2
  exit 1
fi
exec "$checker" "$root"
