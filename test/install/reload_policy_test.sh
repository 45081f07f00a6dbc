#!/usr/bin/env bash
# scripts/reload-policy on a host without systemd: SIGHUP goes to the leashd named by
# <run dir>/leashd.pid, and to nothing else — not to a process that reused a stale PID (SIGHUP
# would kill it), not when the pidfile is missing or garbage.
#
# The process signalled is a STAND-IN named leashd, not the real leashd, which does not link
# yet on this branch (it waits on the nft, tools and sidecar merges). The stand-in is a
# #!/bin/bash script, so its comm is "leashd" like the real one's (with env in the #! line it
# would be "bash"); it writes its PID where leashd does, <run dir>/leashd.pid, and records each
# SIGHUP. The pidfile rule and the signal are what is under test.
set -euo pipefail
source "$(dirname "$0")/testlib.sh"
repo=$PWD
reload=$repo/scripts/reload-policy
[ -x "$reload" ] || fail "scripts/reload-policy not found in $repo"

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/reload_policy_test.XXXXXX")
run=$work/run
mkdir -m 0755 "$run"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do
    { kill -KILL "$pid" && wait "$pid"; } 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/leashd" <<'EOF'
#!/bin/bash
# STAND-IN for leashd: writes its PID to <run dir>/leashd.pid, logs each SIGHUP.
run=$1
trap 'echo HUP >>"$run/hups"' HUP
trap 'rm -f "$run/leashd.pid"; exit 0' TERM
echo $$ >"$run/leashd.pid"
while :; do sleep 0.05; done
EOF
chmod 0755 "$work/leashd"
"$work/leashd" "$run" &
standin=$!
pids+=("$standin")
wait_for 10 test -s "$run/leashd.pid"
[ "$(cat "/proc/$standin/comm")" = leashd ] || fail "the stand-in's comm is $(cat "/proc/$standin/comm")"
hups() { [ -f "$run/hups" ] && wc -l <"$run/hups" || echo 0; }
has_hups() { [ "$(hups)" -ge "$1" ]; }

# --- The pidfile names a live leashd: it gets SIGHUP, and lives. ---
out=$("$reload" --run-dir "$run") || fail "reload-policy failed: $out"
echo "$out" | grep -q "sent SIGHUP to leashd (pid $standin)" || fail "unexpected: $out"
wait_for 10 has_hups 1
"$reload" --run-dir="$run" >/dev/null || fail "second reload-policy failed"
wait_for 10 has_hups 2
kill -0 "$standin" || fail "leashd died of the SIGHUP"
pass "SIGHUP reached leashd (pid $standin) twice; it is still running"

# --- The pidfile names a live process that is not leashd: refused, not signalled. ---
sleep 60 &
other=$!
pids+=("$other")
echo "$other" >"$run/leashd.pid"
if out=$("$reload" --run-dir "$run" 2>&1); then fail "signalled a process that is not leashd: $out"; fi
echo "$out" | grep -q "which is 'sleep', not leashd" || fail "unclear refusal: $out"
kill -0 "$other" || fail "the unrelated process was signalled (SIGHUP killed it)"
pass "a stale pidfile naming 'sleep' is refused and sleep is untouched"

# --- The pidfile names a PID that is not running. ---
kill -KILL "$other"
wait "$other" 2>/dev/null || true
if out=$("$reload" --run-dir "$run" 2>&1); then fail "succeeded on a dead PID: $out"; fi
echo "$out" | grep -q "which is not running: the pidfile is stale" || fail "unclear refusal: $out"
pass "a pidfile naming a dead PID is refused"

# --- Garbage, and no pidfile. ---
echo "12ab" >"$run/leashd.pid"
if out=$("$reload" --run-dir "$run" 2>&1); then fail "succeeded on garbage: $out"; fi
echo "$out" | grep -q "does not hold a PID" || fail "unclear refusal: $out"
rm -f "$run/leashd.pid"
if out=$("$reload" --run-dir "$run" 2>&1); then fail "succeeded with no pidfile: $out"; fi
echo "$out" | grep -q "does not exist: leashd is not running" || fail "unclear refusal: $out"
pass "garbage and a missing pidfile are refused, saying which"
[ "$(hups)" -eq 2 ] || fail "leashd got $(hups) SIGHUPs, want exactly 2"
pass "leashd got exactly the two SIGHUPs it was sent"
echo "PASS"
