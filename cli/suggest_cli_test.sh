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
for allowed in "network api.github.com:443" "filesystem /home/iris/work/src/a.py" \
               "commands /usr/bin/git" "tools search"; do
  # shellcheck disable=SC2086
  if ! "$leash" --offline -c "$TEST_TMPDIR/as_floor.yaml" check $allowed > /dev/null; then
    echo "FAIL: the fragment does not allow $allowed" >&2; failed=1
  fi
done
# The fixture's /home/iris does not exist here, so no folder of it is known to be root's: its
# files stay separate entries, and a file beside them is not allowed.
for refused in "network paste.example:443" "network github.com:443" \
               "network downloads.github.com:443" "filesystem /home/iris/work/src/new.py" \
               "filesystem /home/iris/.ssh/id_ed25519" "commands /usr/bin/curl" "tools shell"; do
  # shellcheck disable=SC2086
  if "$leash" --offline -c "$TEST_TMPDIR/as_floor.yaml" check $refused > /dev/null; then
    echo "FAIL: the fragment allows $refused, which the agent never did" >&2; failed=1
  fi
done

# Nothing the agent could turn into a way out: the loader run directly, a program in a folder
# others can write, and two Host names of its choosing under one parent. Each is left out (or
# kept exact) and the output says why.
ways="$TEST_TMPDIR/ways_out"
mkdir -p "$ways/open"
chmod 0777 "$ways/open"
cp /bin/true "$ways/open/tool"
loader="$(readlink -f /lib64/ld-linux-x86-64.so.2)"
line() {  # ref surface subject-json
  printf '{"ts":"2026-12-02T06:10:00.000000Z","ref":"%s","uid":65534,"surface":"%s",' "$1" "$2"
  printf '"action":"allow","reason":"%s: allowed by the policy","subject":{%s}}\n' "$2" "$3"
}
{
  line way00001 commands '"binary":"/lib64/ld-linux-x86-64.so.2"'
  line way00002 commands "\"binary\":\"$loader\""
  line way00003 commands "\"binary\":\"$ways/open/tool\""
  line way00004 network '"domain":"a1.herokuapp.com","ip":"192.0.2.20","port":8080'
  line way00005 network '"domain":"b2.herokuapp.com","ip":"192.0.2.21","port":8080'
  line way00006 network '"domain":"a1.herokuapp.com","ip":"192.0.2.20","port":8080'
  line way00007 commands '"binary":"/usr/bin/git"'
} > "$ways/decisions.jsonl"
out="$("$leash" suggest --account nobody --log "$ways/decisions.jsonl" \
  --config "$data/suggest_floor.yaml" --state-dir "$data/suggest_state" 2>&1)" || true
expect() {  # grep -F pattern, what it means
  if ! grep -qF -- "$1" <<<"$out"; then
    echo "FAIL: leash suggest over the ways-out log: $2 (no '$1' in:)" >&2
    echo "$out" >&2; failed=1
  fi
}
refuse() {
  if grep -qF -- "$1" <<<"$out"; then
    echo "FAIL: leash suggest over the ways-out log: $2 ('$1' in:)" >&2
    echo "$out" >&2; failed=1
  fi
}
refuse '- "/lib64/ld-linux-x86-64.so.2"' "the loader is suggested as a command"
refuse "- \"$loader\"" "the loader's real path is suggested as a command"
refuse "- \"$ways/open/tool\"" "a program in a folder others can write is suggested"
refuse 'herokuapp.com:8080"  # 3' "two agent-chosen names were joined"
refuse '*.herokuapp.com' "a wildcard was built from names the agent sent"
expect '- "a1.herokuapp.com:8080"  # 2 times, e.g. ref way00004' "each name exact, with its count"
expect '- "b2.herokuapp.com:8080"  # 1 time, e.g. ref way00005' "each name exact, with its count"
expect '- "/usr/bin/git"' "a root-owned program is still suggested"
expect "not suggested: commands '/lib64/ld-linux-x86-64.so.2' (1 time, e.g. ref way00001): the ELF loader" \
  "the loader is listed as left out, with why"
expect "not suggested: commands '$ways/open/tool' (1 time, e.g. ref way00003): an entry matches whatever file" \
  "the writable program is listed as left out, with why"
expect "the folder $ways/open (mode 0777) is writable by its group or by others" \
  "the reason names the folder and its mode"

[[ $failed == 0 ]] && echo "PASS"
exit $failed
