#!/usr/bin/env bash
# Every binary Leash ships answers --help: its usage and flags on stdout, exit 0, nothing run.
# leashd's host commands (--init, --teardown) are read by the same parser as its other flags:
# listed by --help, and refused on a flag it does not know before anything runs.
# The shipped binaries are the ones scripts/install's BINARIES table installs (scripts/package
# builds the .deb through it); a binary added there and not handed to this test fails it.
#
#   help_test.sh BINARY...   (each a Bazel output named as scripts/install's table names it)
set -euo pipefail
source "$(dirname "$0")/testlib.sh"

repo=$PWD  # Bazel runs a test from its runfiles tree, which mirrors the repository.
[ -f "$repo/scripts/install" ] || fail "run from the runfiles root (scripts/install not found)"
# The table's rows: "name  //bazel:target  /installed/path".
mapfile -t shipped < <(sed -n '/^BINARIES=(/,/^)/p' "$repo/scripts/install" |
  sed -n 's/^ *"\([^ ]*\) .*/\1/p')
[ "${#shipped[@]}" -ge 4 ] || fail "found ${#shipped[@]} binaries in scripts/install's table"

declare -A given=()
for binary in "$@"; do given[$(basename "$binary")]=$binary; done
for name in "${shipped[@]}"; do
  binary=${given[$name]:-}
  [ -n "$binary" ] || fail "scripts/install ships $name, which this test was not handed"
  out=$(mktemp "${TEST_TMPDIR:-/tmp}/help.XXXXXX")
  code=0
  "$binary" --help >"$out" 2>&1 </dev/null || code=$?
  [ "$code" -eq 0 ] || fail "$name --help exited $code: $(head -c 2000 "$out")"
  grep -q "usage" "$out" || fail "$name --help prints no usage: $(head -c 2000 "$out")"
  grep -q -- "--help" "$out" || grep -q "^flags:" "$out" ||
    fail "$name --help lists no flags: $(head -c 2000 "$out")"
  pass "$name --help exits 0 with its usage ($(wc -l <"$out") lines)"
done

# leashd names its floor as leash does: -c PATH or --config=PATH, else $LEASH_CONFIG, else the
# installed path. Its help is rendered from the same rules its parser reads.
leashd_help=$("${given[leashd]}" --help)
grep -qF -- '-c, --config  the floor config (default: $LEASH_CONFIG, else /etc/leash/leash.yaml)' \
  <<<"$leashd_help" || fail "leashd --help does not offer -c and \$LEASH_CONFIG: $leashd_help"
pass "leashd takes -c and \$LEASH_CONFIG"

leashd=${given[leashd]}
"$leashd" --help 2>&1 | grep -q -- "--teardown" || fail "leashd --help does not list --teardown"
code=0
out=$("$leashd" --init --teardown --no-such-flag 2>&1 </dev/null) || code=$?
[ "$code" -eq 2 ] && grep -q "unknown flag '--no-such-flag'" <<<"$out" ||
  fail "leashd --init --teardown --no-such-flag: exit $code, not the parser's refusal: $out"
pass "leashd's host commands go through its one flag parser"
