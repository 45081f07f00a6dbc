#!/usr/bin/env bash
# packaging/leash.service as systemd reads it, checked without booting systemd:
#   - `systemd-analyze verify` prints nothing at all (any warning line fails the test);
#   - `systemd-analyze security` scores its exposure at most 5.0 (the score is printed);
#   - every system call leashd and both sidecars made through the whole of scripts/demo (run
#     under strace) is one the unit's SystemCallFilter= lines allow, so the filter cannot
#     refuse enforcement a call it needs.
# Usage (Bazel passes these): unit_test.sh <leash.service> <leash> <leashd> <leash-proxy>
#   <leash-fswatch>
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "FAIL: this test needs root (it runs scripts/demo); run it as root (CI does)" >&2
  exit 1
fi
unit=$1
shift
work=$(mktemp -d /tmp/leash-unit-test.XXXXXX)
trap 'rm -rf "$work"' EXIT

# A root holding systemd's own units, the binary the unit starts, and the unit.
root=$work/root
mkdir -p "$root/usr/bin" "$root/lib/systemd"
cp -a /lib/systemd/system "$root/lib/systemd/"
cp "$1" "$root/usr/bin/leash"
cp "$unit" "$root/lib/systemd/system/leash.service"

verify=$(systemd-analyze verify --root="$root" leash.service 2>&1) && rc=0 || rc=$?
if [ $rc -ne 0 ] || [ -n "$verify" ]; then
  echo "FAIL: systemd-analyze verify (exit $rc) says:" >&2
  echo "$verify" >&2
  exit 1
fi
echo "systemd-analyze verify: no warning"

score=$(systemd-analyze security --offline=yes --root="$root" leash.service 2>&1 |
  sed -n 's/.*Overall exposure level for leash.service: \([0-9.]*\).*/\1/p')
if [ -z "$score" ]; then
  echo "FAIL: systemd-analyze security printed no exposure level" >&2
  exit 1
fi
echo "systemd-analyze security: exposure $score (target at most 5.0)"
if ! awk -v s="$score" 'BEGIN { exit !(s <= 5.0) }'; then
  echo "FAIL: the unit's exposure $score is above 5.0" >&2
  exit 1
fi

# The system calls the unit refuses. systemd.exec(5): a SystemCallFilter= line without "~" is an
# allow list (calls outside every such line are refused), a line with "~" refuses its calls;
# groups expand recursively. Both kinds are read, so the check holds whichever the unit uses.
expand() {  # expand <name>...: the system calls the names stand for, one per line
  local name
  for name in "$@"; do
    if [[ $name == @* ]]; then
      # `syscall-filter @g` prints the group's name, its description, then one entry a line.
      expand $(systemd-analyze syscall-filter --no-pager "$name" 2>/dev/null |
        sed -e '1d' -e 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$')
    else
      echo "$name"
    fi
  done
}
: >"$work/allow"
: >"$work/deny"
while IFS= read -r line; do
  value=${line#SystemCallFilter=}
  if [[ $value == ~* ]]; then
    expand ${value#\~} >>"$work/deny"
  else
    expand $value >>"$work/allow"
  fi
done < <(grep -E '^SystemCallFilter=' "$unit")
sort -u -o "$work/allow" "$work/allow"
sort -u -o "$work/deny" "$work/deny"
if [ ! -s "$work/allow" ] && [ ! -s "$work/deny" ]; then
  echo "FAIL: the unit has no SystemCallFilter= this test could read" >&2
  exit 1
fi
echo "the unit's filter: $(wc -l <"$work/allow") calls allowed by list, $(wc -l <"$work/deny") refused"

# The demo, with leashd (and so both sidecars) under strace.
bin=$work/bin
mkdir -p "$bin"
cp "$@" "$bin/"
demo=$(LEASH_DEMO_BINARIES=$bin LEASH_DEMO_STRACE=$work/trace scripts/demo 2>&1) && rc=0 || rc=$?
if [ $rc -ne 0 ]; then
  echo "$demo"
  echo "FAIL: scripts/demo under strace exited $rc" >&2
  exit 1
fi
# Lines read "<pid> <call>(..." or "<pid> <... <call> resumed>...".
sed -nE -e 's/^[0-9]+ +([a-z0-9_]+)\(.*/\1/p' -e 's/^[0-9]+ +<\.\.\. ([a-z0-9_]+) resumed>.*/\1/p' \
  "$work/trace" | sort -u >"$work/made"
for program in leashd leash-proxy leash-fswatch; do
  if ! grep -qE "execve\(\"[^\"]*/$program\"" "$work/trace"; then
    echo "FAIL: the trace holds no execve of $program" >&2
    exit 1
  fi
done
echo "system calls made by leashd and the sidecars through the demo: $(wc -l <"$work/made")"
outside=$(comm -12 "$work/made" "$work/deny")
if [ -s "$work/allow" ]; then
  outside=$(printf '%s\n%s' "$outside" "$(comm -23 "$work/made" "$work/allow")" | grep -v '^$' || true)
fi
if [ -n "$outside" ]; then
  echo "FAIL: calls made through the demo that the unit's SystemCallFilter= refuses:" >&2
  echo "$outside" | sed 's/^/  /' >&2
  exit 1
fi
echo "PASS: every one of them is allowed by the unit's SystemCallFilter="
