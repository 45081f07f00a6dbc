#!/usr/bin/env bash
# //docs:check_docs_fails_test: docs/check_docs.sh passes a small clean tree, and fails on a copy
# of it with defects planted, naming each one at its file and line.
#
# The defects share one tree so the checker runs twice in all (each run starts dozens of
# processes, which is most of this test's time on a loaded machine). That proves as much as a
# tree per defect: the checker's exit status is whether it named any problem, and each defect
# sits in a file of its own (or on a line of its own), so a defect that went unreported shows
# as its missing "file:line: what" line. No planted defect mends another's: the cited rule N9
# is one no row of the tree's ARCHITECTURE.md states.
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
    # Bash's own matching: a grep per pattern would start as many processes as the checker.
    if [[ $out =~ $pattern ]]; then
      echo "ok: $name: ${BASH_REMATCH[0]}"
    else
      echo "FAIL: $name: check_docs failed without naming the defect ($pattern):"; echo "$out"
      failures=$((failures + 1))
    fi
  done
}

make_tree "$work/clean"
if ! out=$("$checker" "$work/clean" 2>&1); then
  echo "FAIL: the clean tree did not pass:"; echo "$out"; failures=$((failures + 1))
fi

# plant FILE LINE...: writes the lines to FILE of the planted tree (a new file, so each defect's
# line number is its line in FILE).
t=$work/planted
make_tree "$t"
plant() {
  local file=$1
  shift
  printf '%s\n' "$@" >"$t/$file"
}

# A pointer outside the repository, and an issue number.
plant engine/case_shared.cc '// The behaviour: ../shared/spec/how-leash-works.txt'
plant engine/case_issue.cc '// Added for issue 21.'
# A link to a missing file, to a missing heading, to a heading inside a fenced code block, and
# one leaving the repository.
plant case_link.md 'The [example](docs/examples/leash.yaml).'
plant case_anchor.md 'The [matrix](docs/OPERATIONS.md#fidelity-matrix).'
plant case_fenced.md 'The [heading in code](docs/ARCHITECTURE.md#not-a-heading).'
plant docs/case_outside_link.md 'The [spec](../../shared/spec/x.txt).'
# A rule the architecture page does not state, a missing path in backticks, a missing section,
# a missing doc.
plant engine/case_rule.cc '// One listener per UID (docs/ARCHITECTURE.md, rules N2 and N9).'
plant docs/case_path.md 'Kept by `controlplane/reconciler.cc`.'
plant engine/case_section.cc '// See docs/OPERATIONS.md, "Fidelity matrix".'
plant engine/case_doc.cc '// How to fuzz: test/fuzz/README.md.'
# A place the rules' table names that no C++ source declares (line 10 of ARCHITECTURE.md).
echo '| N3 | One listener per UID. | `ListenerManager::Handle` in `engine/tiers.cc` |' \
  >>"$t/docs/ARCHITECTURE.md"
# History in comments: a date, bare and in words; a pasted figure; the spec quoted; a "#N"; a
# source file that does not exist. And a performance row that lost a cell (line 5).
plant engine/case_history.cc '// Added on 2026-11-30, after the review.' \
  '// Since November 2026 the writer batches.' \
  '// Measured on this machine: the peak rose by 112 MiB.' \
  '// Spec: "one listener per UID".'
plant scripts/case_history.sh '#!/usr/bin/env bash' '# Fixes #21.' \
  '# A root test fails rather than skips (see test/root.h).'
echo '| Policy compile | none | 324 ms | `//engine:engine_benchmark` | 04008ac |' \
  >>"$t/docs/PERFORMANCE.md"

expect_fail planted \
  'engine/case_shared.cc:1: points outside the repository' \
  'engine/case_issue.cc:1: carries an issue number' \
  'case_link.md:1: link to a missing file: docs/examples/leash.yaml' \
  'case_anchor.md:1: no heading for anchor #fidelity-matrix' \
  'case_fenced.md:1: no heading for anchor #not-a-heading' \
  'docs/case_outside_link.md:1: (link leaves the repository|points outside)' \
  'engine/case_rule.cc:1: cites rule N9' \
  'docs/case_path.md:1: names a missing path: controlplane/reconciler.cc' \
  'engine/case_section.cc:1: docs/OPERATIONS.md has no section "Fidelity matrix"' \
  'engine/case_doc.cc:1: names a missing doc: test/fuzz/README.md' \
  'docs/ARCHITECTURE.md:10: names `ListenerManager::Handle`, which no C\+\+ source declares' \
  'engine/case_history.cc:1: carries a date' 'engine/case_history.cc:2: carries a date' \
  'engine/case_history.cc:3: carries a measured figure' 'engine/case_history.cc:4: cites the spec' \
  'scripts/case_history.sh:2: carries an issue or PR number' \
  'scripts/case_history.sh:3: names a missing file: test/root.h' \
  'docs/PERFORMANCE.md:5: a table row with 5 cells, not 6'

if [ "$failures" -ne 0 ]; then
  echo "$failures case(s) failed"
  exit 1
fi
echo "check_docs passed the clean tree and reported each planted defect"
