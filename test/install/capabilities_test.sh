#!/usr/bin/env bash
# leash.service keeps exactly the capabilities Leash needs. For every capability in the unit's
# CapabilityBoundingSet= this test runs the operation Leash performs with it, as root under
# `setpriv --bounding-set` (what systemd does for a root service), twice: with the unit's set
# it must succeed, and with the unit's set minus that one capability it must fail. A
# capability added to the unit without such evidence here fails the test too. It also shows
# the operations that need no capability beyond the set (a 0600 file of another account
# reaches leash-fswatch as an event file without CAP_DAC_*; the proxy's 18443 binds without
# CAP_NET_BIND_SERVICE).
#
#   capabilities_test.sh CAPABILITY_PROBE LEASH_SERVICE
#
# Runs in a private mount namespace; each nftables/iptables operation runs in a fresh network
# namespace; the "agent" is UID 54321, which needs no account. Nothing outlives the test.
set -euo pipefail
source "$(dirname "$0")/testlib.sh"
require_root
in_private_mount_namespace "$@"

[ $# -eq 2 ] || fail "usage: capabilities_test.sh CAPABILITY_PROBE LEASH_SERVICE"
probe=$(realpath "$1")
unit=$(realpath "$2")
AGENT=54321
for tool in setpriv capsh nft iptables-legacy unshare; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/lib/deps.sh installs it)"
done

# The mount point must be reachable by the agent UID, so not under TEST_TMPDIR (in /root).
mnt=$(mktemp -d /tmp/leash-capabilities.XXXXXX)
chmod 0755 "$mnt"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/capabilities_test.XXXXXX")
cleanup() {
  umount -l "$mnt" 2>/dev/null || true
  rmdir "$mnt" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
mount -t tmpfs -o mode=0755 tmpfs "$mnt"
mkdir -m 0700 "$mnt/private"
echo "the agent's own secret" >"$mnt/private/secret"
chmod 0600 "$mnt/private/secret"
chown -R "$AGENT:$AGENT" "$mnt/private"

# --- The unit's set, as setpriv spells it. ---
read -r -a unit_caps <<<"$(sed -n 's/^CapabilityBoundingSet=//p' "$unit")"
[ ${#unit_caps[@]} -gt 0 ] || fail "$unit has no CapabilityBoundingSet="
setpriv_set() {  # CAP_A CAP_B ... -> -all,+cap_a,+cap_b
  local out="-all" cap
  for cap in "$@"; do out+=",+$(tr '[:upper:]' '[:lower:]' <<<"${cap#CAP_}")"; done
  echo "$out"
}
without() {  # CAP -> the unit's set minus CAP
  local cap kept=()
  for cap in "${unit_caps[@]}"; do [ "$cap" = "$1" ] || kept+=("$cap"); done
  setpriv_set "${kept[@]}"
}
UNIT_SET=$(setpriv_set "${unit_caps[@]}")
# As leash.service runs it: root, this bounding set, no inherited capabilities,
# NoNewPrivileges=yes.
as_service() {
  local set=$1
  shift
  setpriv --no-new-privs --inh-caps=-all --bounding-set="$set" -- "$@"
}
echo "unit: CapabilityBoundingSet=${unit_caps[*]} -> setpriv --bounding-set=$UNIT_SET"

# The process's effective set is exactly the unit's list (and every name in it is real:
# setpriv refuses one it does not know).
eff=$(as_service "$UNIT_SET" "$probe" caps) || fail "setpriv refused the unit's set $UNIT_SET"
mask=$(awk '{ print $2 }' <<<"$eff")
decoded=$(capsh --decode="$mask" | sed 's/.*=//' | tr ',' '\n' | sort | xargs)
wanted=$(for cap in "${unit_caps[@]}"; do tr '[:upper:]' '[:lower:]' <<<"$cap"; done | sort | xargs)
[ "$decoded" = "$wanted" ] || fail "effective set under the unit is '$decoded', want '$wanted'"
pass "a root process under the unit's bounding set has exactly: $decoded"

# --- leash-fswatch handling one permission event from the agent (see capability_probe.cc).
# Sets ANSWER (the probe's key=value lines), AGENT_RC and AGENT_OUT. ---
answer_event() {
  local set=$1 out=$work/answer.out pid
  : >"$out"
  as_service "$set" "$probe" answer "$mnt" >"$out" 2>&1 &
  pid=$!
  wait_for 10 grep -qE '^(ready|fanotify_(init|mark)=E)' "$out"
  AGENT_OUT=$(timeout 20 setpriv --reuid="$AGENT" --regid="$AGENT" --clear-groups -- \
    cat "$mnt/private/secret" 2>&1) && AGENT_RC=0 || AGENT_RC=$?
  wait "$pid" || true
  ANSWER=$(cat "$out")
}
answered() {  # KEY VALUE: the probe reported KEY=VALUE in the last answer_event
  grep -qx "$1=$2" <<<"$ANSWER"
}

# --- One piece of evidence per capability: succeeds when the operation worked. ---
evidence_CAP_SYS_ADMIN() {  # leash-fswatch: fanotify_init(FAN_CLASS_CONTENT) + FAN_MARK_FILESYSTEM
  as_service "$1" "$probe" fanotify "$mnt" >"$work/out" 2>&1
}
evidence_CAP_NET_ADMIN() {  # leashd: an nftables table over netlink, in a fresh netns
  unshare --net -- setpriv --no-new-privs --inh-caps=-all --bounding-set="$1" -- \
    nft add table inet leash_capprobe >"$work/out" 2>&1
}
evidence_CAP_NET_RAW() {  # leashd's iptables fallback (it prefers iptables-legacy when present)
  unshare --net -- setpriv --no-new-privs --inh-caps=-all --bounding-set="$1" -- \
    iptables-legacy -w -t nat -A OUTPUT -p tcp -m owner --uid-owner "$AGENT" \
    -j REDIRECT --to-ports 18001 >"$work/out" 2>&1
}
evidence_CAP_CHOWN() {  # leashd: the config re-stated root:<leashed user's group>
  local file=$work/leash.yaml
  rm -f "$file"
  install -m 0640 /dev/null "$file"
  as_service "$1" chown "0:$AGENT" "$file" >"$work/out" 2>&1
}
evidence_CAP_KILL() {  # leash-fswatch on kernels without PIDFD_GET_INFO: pidfd_send_signal(0)
  answer_event "$1"
  echo "$ANSWER" >"$work/out"
  answered pidfd_signal0 ok
}

# leash-fswatch: the kernel stack of an agent's process, read to tell the kernel's own open of
# an allowed program's ELF interpreter (from load_elf_binary) from the loader run directly.
agent_stack() {
  local pid rc=0
  setpriv --reuid="$AGENT" --regid="$AGENT" --clear-groups -- sleep 30 &
  pid=$!
  wait_for 10 grep -q "^Uid:.*$AGENT" "/proc/$pid/status"
  as_service "$1" cat "/proc/$pid/stack" >"$work/out" 2>&1 || rc=$?
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  return "$rc"
}
evidence_CAP_SYS_PTRACE() { agent_stack "$1"; }       # ptrace access to the agent's process
evidence_CAP_DAC_READ_SEARCH() { agent_stack "$1"; }  # /proc/<pid>/stack is 0400, the agent's

# Both directions: every capability with evidence here is in the unit, and (below) every one
# in the unit has evidence here.
for fn in $(declare -F | awk '$3 ~ /^evidence_CAP_/ { print $3 }'); do
  [[ " ${unit_caps[*]} " == *" ${fn#evidence_} "* ]] ||
    fail "${fn#evidence_} is needed (see $fn) but missing from the unit's CapabilityBoundingSet="
done
for cap in "${unit_caps[@]}"; do
  declare -F "evidence_$cap" >/dev/null ||
    fail "$cap is in the unit with no evidence in this test: show an operation that fails without it, then add it"
  "evidence_$cap" "$UNIT_SET" || fail "$cap: the operation failed even with the unit's set: $(cat "$work/out")"
  if "evidence_$cap" "$(without "$cap")"; then
    fail "$cap: the operation succeeded without it, so the unit does not need it: $(cat "$work/out")"
  fi
  pass "$cap needed: without it -> $(grep -m1 -E 'EPERM|ermission|not permitted' "$work/out" || head -n1 "$work/out")"
done

# --- What the unit's set does without. ---
answer_event "$(without CAP_DAC_READ_SEARCH)"
echo "$ANSWER" | sed 's/^/    | /'
answered event_read ok && answered event_fd ok ||
  fail "leash-fswatch could not take the agent's event under the unit's set: $ANSWER"
[ "$AGENT_RC" -eq 0 ] && [ "$AGENT_OUT" = "the agent's own secret" ] ||
  fail "the agent's open of its own 0600 file was not allowed through (rc $AGENT_RC: $AGENT_OUT)"
pass "no CAP_DAC_OVERRIDE (nor CAP_DAC_READ_SEARCH) for events: the kernel hands leash-fswatch the event file of another account's 0600 file in a 0700 folder, and the agent's open goes through"
answered pidfd_signal0 ok || fail "pidfd_send_signal(0) failed under the unit's set: $ANSWER"
answered pidfd_open_info ok ||
  fail "pidfd_open + PIDFD_GET_INFO (leash-fswatch's identity) failed under the unit's set: $ANSWER"
pass "no extra capability for identity: pidfd_open of the agent's PID and PIDFD_GET_INFO work under the unit's set"
bound=$(unshare --net -- sh -c "ip link set lo up && setpriv --no-new-privs --inh-caps=-all --bounding-set='$UNIT_SET' -- '$probe' bind 18443" 2>&1) ||
  fail "leash-proxy's single-agent listener 127.0.0.1:18443 did not bind under the unit's set: $bound"
pass "no CAP_NET_BIND_SERVICE: 127.0.0.1:18443 binds ($bound)"
echo "PASS"
