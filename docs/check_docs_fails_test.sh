#!/usr/bin/env bash
# //docs:check_docs_fails_test: docs/check_docs.sh passes a small clean tree, and fails, naming
# the defect, on each copy of it with one defect planted.
set -uo pipefail
checker=$PWD/docs/check_docs.sh
work=${TEST_TMPDIR:-$(mktemp -d)}/trees
failures=0

# A clean tree: a README linking into docs, an ARCHITECTURE.md stating two rules, a comment
# citing one, a doc naming a path and a section that exist; comments with what is not history
# (a time format's example, a limit) and a script whose "#" are not comments.
make_tree() {
  local t=$1
  rm -rf "$t"
  mkdir -p "$t/docs" "$t/engine"
  cat >"$t/README.md" <<'MD'
# Leash
See [the rules](docs/ARCHITECTURE.md#the-rules-leash-keeps-and-where) and
[operations](docs/OPERATIONS.md#when-leashd-gives-up-a-failure-never-un-confines).
MD
  cat >"$t/docs/ARCHITECTURE.md" <<'MD'
# Architecture
## The rules Leash keeps, and where
| rule | what holds | where |
|---|---|---|
| N2 | One chain per UID. | `engine/tiers.cc` |
| P7 | Deny lists add up. | `Overlay` in `engine/tiers.cc` |
```
# not a heading
```
MD
  cat >"$t/docs/PERFORMANCE.md" <<'MD'
# Performance
| what | target | current | ratio | command | commit |
|---|---|---|---|---|---|
| One decision | ≤ 1 µs | 458 ns | 0.46 | `//engine:engine_benchmark` (a \| b) | 04008ac |
MD
  cat >"$t/docs/OPERATIONS.md" <<'MD'
# Operating
## When leashd gives up: a failure never un-confines
Back to the [README](../README.md).
MD
  cat >"$t/engine/tiers.cc" <<'CC'
// Deny lists add up (docs/ARCHITECTURE.md, rule P7); see docs/OPERATIONS.md, "When leashd gives up".
struct Overlay {};
const char* kStamp = "issue 7 of the format";  // a string, not a comment's issue number
CC
  cat >"$t/engine/format.h" <<'CC'
// A log time looks like "2026-12-02T06:00:00Z" or "2026-12-02 10:30:01"; a wait is 2 s at most.
#include "engine/generated.pb.h"
CC
  mkdir -p "$t/scripts"
  cat >"$t/scripts/count.sh" <<'SH'
#!/usr/bin/env bash
# Counts what engine/tiers.cc declares.
list=(a b); echo "${#list[@]}"  # how many
SH
}

# expect_fail NAME PATTERN...: the checker fails on tree NAME and its output matches every
# PATTERN (one per defect planted in that tree).
expect_fail() {
  local out name=$1 pattern
  shift
  if out=$("$checker" "$work/$name" 2>&1); then
    echo "FAIL: $name: check_docs passed a tree with a planted defect"; failures=$((failures + 1))
    return
  fi
  for pattern in "$@"; do
    if ! grep -qE -- "$pattern" <<<"$out"; then
      echo "FAIL: $name: check_docs failed without naming the defect ($pattern):"; echo "$out"
      failures=$((failures + 1))
    else
      echo "ok: $name: $(grep -E -- "$pattern" <<<"$out" | head -1)"
    fi
  done
}

make_tree "$work/clean"
if ! out=$("$checker" "$work/clean" 2>&1); then
  echo "FAIL: the clean tree did not pass:"; echo "$out"; failures=$((failures + 1))
fi

make_tree "$work/shared"
echo '// The behaviour: ../shared/spec/how-leash-works.txt' >>"$work/shared/engine/tiers.cc"
expect_fail shared 'engine/tiers.cc:4: points outside the repository'

make_tree "$work/issue"
echo '// Added for issue 21.' >>"$work/issue/engine/tiers.cc"
expect_fail issue 'engine/tiers.cc:4: carries an issue number'

make_tree "$work/link"
echo 'The [example](docs/examples/leash.yaml).' >>"$work/link/README.md"
expect_fail link 'README.md:4: link to a missing file: docs/examples/leash.yaml'

make_tree "$work/anchor"
echo 'The [matrix](docs/OPERATIONS.md#fidelity-matrix).' >>"$work/anchor/README.md"
expect_fail anchor 'README.md:4: no heading for anchor #fidelity-matrix'

make_tree "$work/fenced"
echo 'The [heading in code](docs/ARCHITECTURE.md#not-a-heading).' >>"$work/fenced/README.md"
expect_fail fenced 'no heading for anchor #not-a-heading'

make_tree "$work/outside-link"
echo 'The [spec](../../shared/spec/x.txt).' >>"$work/outside-link/docs/OPERATIONS.md"
expect_fail outside-link 'docs/OPERATIONS.md:4: (link leaves the repository|points outside)'

make_tree "$work/rule"
echo '// One listener per UID (docs/ARCHITECTURE.md, rules N2 and N3).' >>"$work/rule/engine/tiers.cc"
expect_fail rule 'cites rule N3'

make_tree "$work/path"
echo 'Kept by `controlplane/reconciler.cc`.' >>"$work/path/docs/ARCHITECTURE.md"
expect_fail path 'names a missing path: controlplane/reconciler.cc'

make_tree "$work/section"
echo '// See docs/OPERATIONS.md, "Fidelity matrix".' >>"$work/section/engine/tiers.cc"
expect_fail section 'has no section "Fidelity matrix"'

make_tree "$work/doc"
echo '// How to fuzz: test/fuzz/README.md.' >>"$work/doc/engine/tiers.cc"
expect_fail doc 'engine/tiers.cc:4: names a missing doc: test/fuzz/README.md'

make_tree "$work/name"
echo '| N3 | One listener per UID. | `ListenerManager::Handle` in `engine/tiers.cc` |' \
  >>"$work/name/docs/ARCHITECTURE.md"
expect_fail name 'names `ListenerManager::Handle`, which no C\+\+ source declares'

# History in comments, one defect a line, all in one tree (each run of the checker is costly
# on a loaded machine): a date, bare and in words; a "#N"; a pasted figure; the spec quoted; a
# source file that does not exist. And a performance row that lost a cell.
make_tree "$work/history"
echo '| Policy compile | none | 324 ms | `//engine:engine_benchmark` | 04008ac |' \
  >>"$work/history/docs/PERFORMANCE.md"
cat >>"$work/history/engine/tiers.cc" <<'CC'
// Added on 2026-11-30, after the review.
// Since November 2026 the writer batches.
// Measured on this machine: the peak rose by 112 MiB.
// Spec: "one listener per UID".
CC
cat >>"$work/history/scripts/count.sh" <<'SH'
# Fixes #21.
# A root test fails rather than skips (see test/root.h).
SH
expect_fail history 'engine/tiers.cc:4: carries a date' 'engine/tiers.cc:5: carries a date' \
  'engine/tiers.cc:6: carries a measured figure' 'engine/tiers.cc:7: cites the spec' \
  'scripts/count.sh:4: carries an issue or PR number' \
  'scripts/count.sh:5: names a missing file: test/root.h' \
  'docs/PERFORMANCE.md:5: a table row with 5 cells, not 6'

if [ "$failures" -ne 0 ]; then
  echo "$failures case(s) failed"
  exit 1
fi
echo "check_docs passed the clean tree and reported each planted defect"
