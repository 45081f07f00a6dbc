#!/bin/bash
# `leash suggest` run as an operator runs it, over a fixture decision log, floor and state
# folder (no root, no leashd): the printed fragment and the save/bind lines are compared with
# golden files. LEASH_UPDATE_GOLDEN=1 rewrites them (review the diff).
set -euo pipefail

leash="$1"
data="$(dirname "$2")"  # cli/testdata
failed=0

# Runs leash suggest with the fixture's files and compares stdout+exit code with a golden.
check() {
  local golden="$1"; shift
  local out rc=0
  out="$("$leash" suggest --log "$data/suggest_decisions.jsonl" \
      --config "$data/suggest_floor.yaml" --state-dir "$data/suggest_state" "$@" 2>&1)" || rc=$?
  local actual
  actual="$(printf '%s\nexit %s\n' "$out" "$rc")"
  if [[ "${LEASH_UPDATE_GOLDEN:-}" == 1 ]]; then
    printf '%s\n' "$actual" > "${BUILD_WORKSPACE_DIRECTORY}/cli/testdata/$golden"
    return
  fi
  if ! diff -u "$data/$golden" <(printf '%s\n' "$actual"); then
    echo "FAIL: leash suggest $* differs from $golden" >&2
    failed=1
  fi
}

# The fixture's account is `nobody` (65534), which every Debian host has.
check suggest_since.golden --account nobody --since 2026-12-02T06:00:00Z
check suggest_bound_elsewhere.golden --account nobody --surface tools,cmd --profile research
check suggest_nothing.golden --account nobody --surface network --surface files \
  --until 2026-12-02T05:30:00Z
check suggest_no_account.golden --account no-such-account-here
check suggest_bad_since.golden --account nobody --since yesterday

# What is printed is a profile the loader takes: `leash validate` judges a floor, so check
# the fragment through the offline check of a config built from it.
fragment="$TEST_TMPDIR/fragment.yaml"
"$leash" suggest --account nobody --log "$data/suggest_decisions.jsonl" \
  --config "$data/suggest_floor.yaml" --state-dir "$data/suggest_state" > "$fragment"
{ echo "user: nobody"; cat "$fragment"; } > "$TEST_TMPDIR/as_floor.yaml"
for allowed in "network api.github.com:443" "filesystem /home/iris/work/src/new.py" \
               "commands /usr/bin/git" "tools search"; do
  # shellcheck disable=SC2086
  if ! "$leash" --offline -c "$TEST_TMPDIR/as_floor.yaml" check $allowed > /dev/null; then
    echo "FAIL: the fragment does not allow $allowed" >&2; failed=1
  fi
done
for refused in "network paste.example:443" "network github.com:443" \
               "filesystem /home/iris/.ssh/id_ed25519" "commands /usr/bin/curl" "tools shell"; do
  # shellcheck disable=SC2086
  if "$leash" --offline -c "$TEST_TMPDIR/as_floor.yaml" check $refused > /dev/null; then
    echo "FAIL: the fragment allows $refused, which the agent never did" >&2; failed=1
  fi
done

[[ $failed == 0 ]] && echo "PASS"
exit $failed
