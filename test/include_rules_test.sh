#!/usr/bin/env bash
# The dependency rules of docs/ARCHITECTURE.md hold for every #include of the tree
# (scripts/check-include-rules). First it shows the check can fail: a copy of the rules with a
# small tree whose files cross them must be refused with each crossing named: an enforcer
# including leashd, and leashd's logic including its own composition root.
set -euo pipefail
check=$(readlink -f scripts/check-include-rules)
rules=$(readlink -f docs/ARCHITECTURE.md)

fixture=$(mktemp -d "${TEST_TMPDIR:-/tmp}/include-rules.XXXXXX")
trap 'rm -rf "$fixture"' EXIT
mkdir -p "$fixture/docs" "$fixture/proxy" "$fixture/controlplane/main"
cp "$rules" "$fixture/docs/ARCHITECTURE.md"
printf '#pragma once\n' > "$fixture/controlplane/reconciler.h"
printf '#pragma once\n' > "$fixture/controlplane/main/daemon.h"
printf '#include "controlplane/reconciler.h"\n' > "$fixture/proxy/crossing.cc"
printf '#include "controlplane/main/daemon.h"\n' > "$fixture/controlplane/inward.cc"
# Allowed: the composition root includes the logic it wires.
printf '#include "controlplane/reconciler.h"\n' > "$fixture/controlplane/main/daemon.cc"
if out=$("$check" "$fixture" 2>&1); then
  echo "FAIL: crossings passed the check:" >&2
  echo "$out" >&2
  exit 1
fi
for crossing in 'proxy/crossing.cc:1: includes "controlplane/reconciler.h"' \
                'controlplane/inward.cc:1: includes "controlplane/main/daemon.h"'; do
  grep -qF "$crossing" <<<"$out" || {
    echo "FAIL: the check did not name the crossing '$crossing':" >&2
    echo "$out" >&2
    exit 1
  }
done
if grep -q 'controlplane/main/daemon.cc' <<<"$out"; then
  echo "FAIL: the check refused the composition root including controlplane/:" >&2
  echo "$out" >&2
  exit 1
fi

# The real tree: the rules file's own checkout (the runfiles link to the source tree).
"$check" "$(dirname "$(dirname "$rules")")"
