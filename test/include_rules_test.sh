#!/usr/bin/env bash
# The dependency rules of docs/ARCHITECTURE.md hold for every #include of the tree
# (scripts/check-include-rules). First it shows the check can fail: a copy of the rules with a
# tree of two files, one of which crosses them, must be refused with that file named.
set -euo pipefail
check=$(readlink -f scripts/check-include-rules)
rules=$(readlink -f docs/ARCHITECTURE.md)

fixture=$(mktemp -d "${TEST_TMPDIR:-/tmp}/include-rules.XXXXXX")
trap 'rm -rf "$fixture"' EXIT
mkdir -p "$fixture/docs" "$fixture/proxy" "$fixture/controlplane"
cp "$rules" "$fixture/docs/ARCHITECTURE.md"
printf '#pragma once\n' > "$fixture/controlplane/daemon.h"
printf '#include "controlplane/daemon.h"\n' > "$fixture/proxy/crossing.cc"
if out=$("$check" "$fixture" 2>&1); then
  echo "FAIL: proxy/ including controlplane/ passed the check:" >&2
  echo "$out" >&2
  exit 1
fi
grep -q 'proxy/crossing.cc:1: includes "controlplane/daemon.h"' <<<"$out" || {
  echo "FAIL: the check refused the crossing without naming it:" >&2
  echo "$out" >&2
  exit 1
}

# The real tree: the rules file's own checkout (the runfiles link to the source tree).
"$check" "$(dirname "$(dirname "$rules")")"
