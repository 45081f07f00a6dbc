#!/usr/bin/env bash
# leashd at scale, for real: N agent accounts (default 1,000) made with useradd, the real
# service with its sidecars in a network namespace, then
#   - the start (first reconcile of every subject: chains, listeners, watcher map),
#   - the resident memory of leashd and each sidecar,
#   - a reconcile after one agent's binding changed (`leash reconcile`, wall time, and what it
#     reports re-applied),
#   - the Control RPC round trip over the admin socket (p50/p99).
# Everything it makes is removed at the end, also on failure. Root.
#
#   bazel build -c opt //cli:leash //controlplane/main:leashd //proxy:leash-proxy \
#       //fswatch:leash-fswatch //test/leashd:control_rpc_latency
#   test/leashd/scale_benchmark.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-1000}
BIN=bazel-bin
NS=leash-scale
D=$(mktemp -d /tmp/leash-scale.XXXXXX)
chmod 0755 "$D"
PREFIX=leash-s
cleanup() {
  set +e
  trap '' INT TERM
  [ -n "${LEASHD:-}" ] && kill -TERM "$LEASHD" 2>/dev/null && wait "$LEASHD" 2>/dev/null
  ip netns delete "$NS" 2>/dev/null
  getent passwd | awk -F: -v p="$PREFIX" 'index($1, p) == 1 { print $1 }' | while read -r u; do
    userdel "$u" 2>/dev/null
  done
  id leashscale >/dev/null 2>&1 && userdel leashscale
  umount "$D/fs" 2>/dev/null
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== making $N agent accounts"
t0=$(date +%s.%N)
useradd -M -U -s /usr/sbin/nologin leashscale
for i in $(seq -w 1 "$N"); do useradd -M -N -g nogroup -s /usr/sbin/nologin "$PREFIX$i"; done
echo "   $(echo "$(date +%s.%N) - $t0" | bc) s"

ip netns add "$NS"; ip -n "$NS" link set lo up
mkdir -p "$D/fs" "$D/run" "$D/state"
mount -t tmpfs -o size=8m leash-test "$D/fs"
echo "nameserver 192.0.2.53" >"$D/resolv.conf"
cat >"$D/leash.yaml" <<YAML
user: leashscale
fail_mode: closed
network: { mode: whitelist, allow: ["github.com"], deny: [] }
filesystem: { mode: blacklist, allow: [], deny: ["$D/fs/secret"] }
commands: { mode: blacklist, allow: [], deny: ["$D/fs/bin/x"] }
tools: { mode: whitelist, allow: ["read_file"], deny: [] }
logging: { level: info, decisions: $D/decisions.jsonl }
YAML
mkdir -p "$D/state/profiles"
printf 'network: { deny: ["a.example"] }\n' >"$D/state/profiles/tight.yaml"
printf 'network: { deny: ["a.example", "b.example"] }\n' >"$D/state/profiles/tighter.yaml"
{
  echo "bindings:"
  for i in $(seq -w 1 "$N"); do
    printf '  "agent:%s%s":\n    profile: "tight"\n    acks: []\n' "$PREFIX" "$i"
  done
} >"$D/state/bindings.yaml"
LEASH=("$BIN/cli/leash" "--config=$D/leash.yaml" "--socket=$D/run/leash.sock")

echo "== starting leashd with $((N + 1)) subjects"
t0=$(date +%s.%N)
nsenter --net=/run/netns/$NS -- "$BIN/controlplane/main/leashd" --config="$D/leash.yaml" \
  --state-dir="$D/state" --run-dir="$D/run" --resolv-conf="$D/resolv.conf" \
  --fswatch-mark-only-under="$D/fs" --proxy-binary="$BIN/proxy/leash-proxy" \
  --fswatch-binary="$BIN/fswatch/leash-fswatch" >"$D/leashd.log" 2>&1 &
LEASHD=$!
# Up means the first reconcile has put every subject in force (status reports a pass).
until "${LEASH[@]}" --json status 2>/dev/null | grep -q '"reconcile_passes":[1-9]'; do
  kill -0 "$LEASHD" 2>/dev/null || { cat "$D/leashd.log"; exit 1; }
  sleep 0.1
done
echo "   up and every subject in force after $(echo "$(date +%s.%N) - $t0" | bc) s"
"${LEASH[@]}" status | grep -E "^subjects|^sidecars|running|last:" | grep -v "uid " | sed 's/^/   /' || true
enforced=$("${LEASH[@]}" --json status | grep -o '"state":"enforced"' | wc -l)
echo "   subjects enforced: $enforced"

rss() { awk '/^VmRSS/ { printf "%.1f MB", $2 / 1024 }' "/proc/$1/status"; }
PROXY=$(pgrep -f "leash-proxy --admin-socket=$D/run" | head -1)
FSWATCH=$(pgrep -f "leash-fswatch --socket=$D/run" | head -1)
echo "== resident memory with $((N + 1)) subjects"
echo "   leashd $(rss "$LEASHD"), leash-proxy $(rss "$PROXY"), leash-fswatch $(rss "$FSWATCH")"

echo "== a reconcile after one agent's binding changed"
first_agent="${PREFIX}$(printf "%0${#N}d" 1)"
for round in 1 2 3 4 5; do
  profile=$([ $((round % 2)) -eq 1 ] && echo tighter || echo tight)
  "${LEASH[@]}" bind "agent:$first_agent" "$profile" --no-reconcile >/dev/null
  t0=$(date +%s.%N)
  out=$("${LEASH[@]}" reconcile)
  t1=$(date +%s.%N)
  echo "   round $round: $(echo "($t1 - $t0) * 1000" | bc | cut -d. -f1) ms wall (CLI round trip included): $(head -1 <<<"$out")"
done
t0=$(date +%s.%N); out=$("${LEASH[@]}" reconcile); t1=$(date +%s.%N)
echo "   nothing changed: $(echo "($t1 - $t0) * 1000" | bc | cut -d. -f1) ms wall: $(head -1 <<<"$out")"

echo "== Control RPC round trip over the admin socket"
"$BIN/test/leashd/control_rpc_latency" "$D/run/leash.sock" 2000 check | sed 's/^/   /'
"$BIN/test/leashd/control_rpc_latency" "$D/run/leash.sock" 500 bindings | sed 's/^/   /'
