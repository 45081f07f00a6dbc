#!/usr/bin/env bash
# scripts/install and scripts/uninstall, run for real in a throwaway root: every file, mode and
# owner the install promises; an upgrade over it (config content kept, a wrong mode and owner
# repaired, leashd's state untouched byte for byte); uninstall (everything the install added
# goes, the operator's policy stays unless --purge, the unbind ledger always stays); and
# `systemd-analyze verify` on the installed unit.
#
#   install_test.sh LEASH LEASHD LEASH_PROXY LEASH_FSWATCH
#
# The throwaway root is a tmpfs in a private mount namespace holding an overlay of the host's
# /usr and a copy of its /etc (so the real `leash` and useradd run in it with chroot) and a
# fresh /var, /run and /home. The test account is made in the copy's /etc/passwd, never the host's,
# and everything vanishes with the namespace, also on failure.
set -euo pipefail
source "$(dirname "$0")/testlib.sh"
require_root
in_private_mount_namespace "$@"

[ $# -eq 4 ] || fail "usage: install_test.sh LEASH LEASHD LEASH_PROXY LEASH_FSWATCH"
repo=$PWD  # Bazel runs a test from its runfiles tree, which mirrors the repository.
[ -x "$repo/scripts/install" ] || fail "run from the runfiles root (scripts/install not found in $repo)"
NAMES=(leash leashd leash-proxy leash-fswatch)
DESTS=(/usr/bin/leash /usr/lib/leash/leashd /usr/lib/leash/leash-proxy /usr/lib/leash/leash-fswatch)

work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/install_test.XXXXXX")
mount -t tmpfs -o mode=0755 tmpfs "$work"
# shellcheck disable=SC2034  # read by testlib.sh
SHOW_RELATIVE_TO=$work
cleanup() {
  umount -R -l "$work" 2>/dev/null || true
  rmdir "$work" 2>/dev/null || true
}
trap cleanup EXIT

# --- Binaries: version 1 as given, version 2 the same plus a trailing line, which an ELF
# loader ignores, so the upgrade visibly replaces every file. ---
mkdir "$work/v1" "$work/v2"
for i in 0 1 2 3; do
  cp "${@:$((i + 1)):1}" "$work/v1/${NAMES[$i]}"
done
for name in "${NAMES[@]}"; do
  chmod 0755 "$work/v1/$name"
  { cat "$work/v1/$name"; printf '\n# v2\n'; } >"$work/v2/$name"
  chmod 0755 "$work/v2/$name"
done

# --- The throwaway root. ---
R=$work/root
make_root() {
  local root=$1 layer=$2 dir link
  mkdir -p "$root"
  for dir in usr etc var var/log var/lib var/tmp var/mail run tmp home root proc dev; do
    mkdir -m 0755 "$root/$dir"
  done
  chmod 1777 "$root/tmp" "$root/var/tmp"
  chmod 0700 "$root/root"
  for link in bin lib lib32 lib64 sbin; do
    if [ -L "/$link" ]; then
      ln -s "$(readlink "/$link")" "$root/$link"
    elif [ -e "/$link" ]; then
      fail "/$link is not a symlink: this test expects a merged-/usr host (Debian 12)"
    fi
  done
  mkdir -p "$layer/usr/upper" "$layer/usr/work"
  mount -t overlay overlay -o "lowerdir=/usr,upperdir=$layer/usr/upper,workdir=$layer/usr/work" \
    "$root/usr"
  # /etc is copied, not overlaid: an overlay shows the host's /etc as it changes, including
  # the *.lock files of a useradd running on the host at that moment (other tests make
  # accounts), which then block the useradd in here. A copy is a snapshot; its locks are
  # the host's and are dropped.
  cp -a /etc/. "$root/etc/"
  rm -f "$root"/etc/{passwd,group,shadow,gshadow,subuid,subgid}.lock "$root/etc/.pwd.lock"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  # A host that has Leash installed must not leak into the throwaway root.
  rm -rf "$root/etc/leash" "$root/usr/bin/leash" "$root/usr/lib/leash" \
    "$root/usr/lib/systemd/system/leash.service"
}
make_root "$R" "$work/layers"

user="lsinst$(printf '%05d' $((RANDOM % 100000)))"  # never leash-*: that is the agent namespace
grep -q "^$user:" /etc/passwd && fail "host account $user exists; rerun"

run_install() {  # LOG UMASK ARGS...
  local log=$1 mask=$2
  shift 2
  if ! (umask "$mask" && "$repo/scripts/install" "$@") >"$log" 2>&1; then
    cat "$log" >&2
    fail "scripts/install $* failed"
  fi
  sed 's/^/    | /' "$log"
}
run_uninstall() {  # LOG ARGS...
  local log=$1
  shift
  if ! "$repo/scripts/uninstall" "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "scripts/uninstall $* failed"
  fi
  sed 's/^/    | /' "$log"
}
account_ids() {  # NAME -> "uid gid" from the throwaway root's passwd
  awk -F: -v n="$1" '$1 == n { print $3, $4 }' "$R/etc/passwd"
}
snapshot() {  # ROOT: mode, owner and content of everything the install owns
  local root=$1 path
  for path in "${DESTS[@]}" /usr/lib/leash /lib/systemd/system/leash.service /etc/leash \
    /etc/leash/leash.yaml /var/log/leash; do
    if [ -f "$root$path" ]; then
      echo "$path $(stat -c '%a %u %g' "$root$path") $(sha256sum <"$root$path" | cut -d' ' -f1)"
    else
      echo "$path $(stat -c '%a %u %g' "$root$path" 2>/dev/null || echo absent)"
    fi
  done
}

# ========== 1. Fresh install, under the most permissive umask ==========
echo "== 1. fresh install (umask 000) --user $user"
run_install "$work/install1.log" 000 --destdir "$R" --user "$user" --from "$work/v1"
read -r uid gid <<<"$(account_ids "$user")"
[ -n "$uid" ] || fail "leash init did not create the account $user in the throwaway root"
pass "account $user created (uid $uid gid $gid) in the throwaway root"
grep -q "^$user:" /etc/passwd && fail "the account was created on the host, not in the root"
pass "the host's passwd is untouched"
grep -q "account created" "$work/install1.log" || fail "init did not say it created the account"
for i in 0 1 2 3; do
  expect_stat "$R${DESTS[$i]}" "755 0 0"
  cmp -s "$work/v1/${NAMES[$i]}" "$R${DESTS[$i]}" || fail "$R${DESTS[$i]} is not ${NAMES[$i]}"
done
expect_stat "$R/usr/lib/leash" "755 0 0"
expect_stat "$R/lib/systemd/system/leash.service" "644 0 0"
cmp -s "$repo/packaging/leash.service" "$R/lib/systemd/system/leash.service" ||
  fail "the installed unit is not packaging/leash.service"
expect_stat "$R/etc/leash" "755 0 0"
expect_stat "$R/etc/leash/leash.yaml" "640 0 $gid"
expect_stat "$R/etc/leash/lists" "755 0 0"
for list in system package-registries github; do
  expect_stat "$R/etc/leash/lists/$list" "644 0 0"
  cmp -s "$repo/packaging/lists/$list" "$R/etc/leash/lists/$list" || fail "lists/$list differs from the shipped one"
done
pass "the named lists are installed root's, 0644, as shipped"
grep -qE "^user: \"?$user\"?\$" "$R/etc/leash/leash.yaml" || fail "the config does not name $user"
pass "the config names $user"
expect_stat "$R/var/log/leash" "750 0 0"
expect_absent "$R/var/lib/leash"
stray=$(find "$R/usr/bin" "$R/usr/lib/leash" "$R/lib/systemd/system" -maxdepth 1 -name '.*.new.*')
[ -z "$stray" ] || fail "staged files left behind: $stray"

# `leash` with no command finds leashd in /usr/lib/leash (it is not next to /usr/bin/leash)
# and execs it with the config. --from is a CLI option that leashd does not know, so the real
# leashd answers with its own name instead of starting.
layout=$(chroot "$R" /usr/bin/leash --from=layout-probe 2>&1 || true)
echo "$layout" | grep -q "cannot find leashd" && fail "leash did not find /usr/lib/leash/leashd: $layout"
echo "$layout" | grep -q "leashd" && echo "$layout" | grep -q -- "--from" ||
  fail "leash did not exec leashd: $layout"
pass "leash execs /usr/lib/leash/leashd ($layout)"

# --- The unit: systemd's own check, in the root where /usr/bin/leash exists. ---
if ! verify=$(cd / && systemd-analyze --root="$R" verify leash.service 2>&1); then
  fail "systemd-analyze verify failed: $verify"
fi
[ -z "$verify" ] || fail "systemd-analyze verify warned: $verify"
pass "systemd-analyze --root verify leash.service: clean"
unit=$R/lib/systemd/system/leash.service
grep -q '^ExecReload=' "$unit" && fail "the unit has ExecReload=; systemctl reload must be refused"
grep -qx 'ExecStart=/usr/bin/leash' "$unit" || fail "ExecStart is not /usr/bin/leash"
# Released after a deliberate stop only: a failure leaves the chains closed.
grep -qx 'ExecStopPost=/usr/bin/leash teardown --unless-failed' "$unit" ||
  fail "no ExecStopPost=/usr/bin/leash teardown --unless-failed"
grep -qx 'Restart=on-failure' "$unit" || fail "Restart= is not on-failure"
# leashd's own rule for its sidecars, one level up: restart after each of 3 deaths in 10 min.
grep -qx 'StartLimitIntervalSec=10min' "$unit" && grep -qx 'StartLimitBurst=4' "$unit" ||
  fail "the start limit is not 4 starts in 10 minutes"
grep -qx 'KillMode=process' "$unit" || fail "KillMode= is not process (signals to leashd alone; the watchers outlive a crash)"
grep -qE '^CapabilityBoundingSet=.*CAP_SYS_ADMIN' "$unit" && grep -qE '^CapabilityBoundingSet=.*CAP_NET_ADMIN' "$unit" ||
  fail "the unit's bounding set lacks CAP_SYS_ADMIN or CAP_NET_ADMIN"
pass "unit: no ExecReload=, ExecStopPost=leash teardown --unless-failed, Restart=on-failure, 4 starts/10 min, KillMode=process, bounding set"

# ========== 2. Upgrade over it: a hand-edited config with a wrong mode and owner, leashd's
# state present, a wrong log-folder mode, new binaries, the opposite umask, no --user ==========
echo "== 2. upgrade (umask 077, no --user)"
config=$R/etc/leash/leash.yaml
printf '# the operator added this line by hand; an upgrade keeps it\n' >>"$config"
cp -p "$config" "$work/config.before"
chmod 0666 "$config"
chown "$uid:$gid" "$config"
chmod 0755 "$R/var/log/leash"
printf '{"ref":"r1","action":"block"}\n' >"$R/var/log/leash/decisions.jsonl"
chmod 0600 "$R/var/log/leash/decisions.jsonl"
state=$R/var/lib/leash
mkdir -m 0700 "$state" "$state/profiles"
printf 'bindings:\n  - scope: agent:leash-iris\n    profile: web\n' >"$state/bindings.yaml"
printf 'network: { mode: whitelist, allow: ["example.org"] }\n' >"$state/profiles/web.yaml"
printf '{"ts":"2026-10-14T00:00:00Z","scope":"agent:leash-iris","acks":["fail_closed:web"]}\n' >"$state/unbinds.jsonl"
printf '{"assignments":[{"uid":1234,"port":18001}]}\n' >"$state/ports.json"
chmod 0600 "$state/bindings.yaml" "$state/profiles/web.yaml" "$state/unbinds.jsonl"
chmod 0640 "$state/ports.json"
state_files=(bindings.yaml profiles/web.yaml unbinds.jsonl ports.json)
declare -A before
for f in "${state_files[@]}" profiles .; do before[$f]=$(fingerprint "$state/$f" 2>/dev/null || stat -c '%a %u %g %y' "$state/$f"); done
log_before=$(fingerprint "$R/var/log/leash/decisions.jsonl")
listing_before=$(cd "$state" && find . -printf '%p %m %U %G %s %T@\n' | sort)

run_install "$work/install2.log" 077 --destdir "$R" --from "$work/v2"
grep -q "upgrade: the leashed user is '$user'" "$work/install2.log" ||
  fail "the upgrade did not reuse the user recorded in the config"
pass "the upgrade reused the recorded user $user"
grep -q "account created" "$work/install2.log" && fail "the upgrade created the account again"
for i in 0 1 2 3; do
  expect_stat "$R${DESTS[$i]}" "755 0 0"
  cmp -s "$work/v2/${NAMES[$i]}" "$R${DESTS[$i]}" || fail "$R${DESTS[$i]} was not upgraded"
done
pass "every binary replaced by its new version"
cmp -s "$work/config.before" "$config" || fail "the upgrade changed the config's content: $(diff "$work/config.before" "$config")"
pass "the config's content is byte for byte what it was (hand edit kept)"
expect_stat "$config" "640 0 $gid"
expect_stat "$R/var/log/leash" "750 0 0"
[ "$(fingerprint "$R/var/log/leash/decisions.jsonl")" = "$log_before" ] || fail "the decision log was touched"
pass "the decision log untouched"
for f in "${state_files[@]}" profiles .; do
  now=$(fingerprint "$state/$f" 2>/dev/null || stat -c '%a %u %g %y' "$state/$f")
  [ "$now" = "${before[$f]}" ] || fail "/var/lib/leash/$f changed: '${before[$f]}' -> '$now'"
  pass "/var/lib/leash/$f untouched"
done
[ "$(cd "$state" && find . -printf '%p %m %U %G %s %T@\n' | sort)" = "$listing_before" ] ||
  fail "/var/lib/leash gained or lost a file"
pass "/var/lib/leash holds exactly what it held"

# A third run changes nothing at all.
after2=$(snapshot "$R")
run_install "$work/install3.log" 022 --destdir "$R" --from "$work/v2"
[ "$(snapshot "$R")" = "$after2" ] || fail "a repeated install changed something: $(diff <(echo "$after2") <(snapshot "$R"))"
pass "install is idempotent"

# ========== 3. Uninstall: the program goes, the operator's policy and records stay ==========
echo "== 3. uninstall"
config_before=$(fingerprint "$config")
run_uninstall "$work/uninstall1.log" --destdir "$R"
for path in "${DESTS[@]}" /usr/lib/leash /lib/systemd/system/leash.service; do
  expect_absent "$R$path"
done
[ "$(fingerprint "$config")" = "$config_before" ] || fail "uninstall touched the config"
pass "the config is kept (the operator's policy)"
[ "$(fingerprint "$R/var/log/leash/decisions.jsonl")" = "$log_before" ] || fail "uninstall touched the decision log"
pass "the non-empty decision-log folder is kept"
[ "$(cd "$state" && find . -printf '%p %m %U %G %s %T@\n' | sort)" = "$listing_before" ] ||
  fail "uninstall changed /var/lib/leash"
pass "/var/lib/leash untouched"
grep -q "^$user:" "$R/etc/passwd" || fail "uninstall removed the account"
pass "the account is kept"
run_uninstall "$work/uninstall2.log" --destdir "$R"
pass "uninstall again: nothing to do, exit 0"

echo "== 3b. uninstall --purge"
ledger_before=$(fingerprint "$state/unbinds.jsonl")
run_uninstall "$work/uninstall3.log" --destdir "$R" --purge
expect_absent "$config"
expect_absent "$R/etc/leash"
expect_absent "$R/var/log/leash"
[ "$(ls -A "$state")" = "unbinds.jsonl" ] || fail "/var/lib/leash holds '$(ls -A "$state")', want only unbinds.jsonl"
[ "$(fingerprint "$state/unbinds.jsonl")" = "$ledger_before" ] || fail "the unbind ledger was touched"
pass "only the unbind ledger is left, untouched"
grep -q "^$user:" "$R/etc/passwd" || fail "uninstall --purge removed the account"
pass "the account is kept"

# ========== 4. Install again where the account already exists ==========
echo "== 4. install with an existing account and no config"
run_install "$work/install4.log" 000 --destdir "$R" --user "$user" --from "$work/v1"
grep -q "account created" "$work/install4.log" && fail "init created an account that existed"
pass "the existing account was used"
expect_stat "$config" "640 0 $gid"
[ "$(fingerprint "$state/unbinds.jsonl")" = "$ledger_before" ] || fail "install touched the unbind ledger"
pass "the ledger is still untouched"

# ========== 5. Staging into an empty folder: no user, so no chroot ==========
echo "== 5. staging --destdir into an empty folder"
S=$work/stage
mkdir -m 0700 "$S"
run_install "$work/stage.log" 000 --destdir "$S" --from "$work/v1"
for i in 0 1 2 3; do expect_stat "$S${DESTS[$i]}" "755 0 0"; done
for dir in /usr /usr/bin /usr/lib /lib /lib/systemd /lib/systemd/system /etc /var /var/log; do
  expect_stat "$S$dir" "755 0 0"
done
expect_stat "$S/lib/systemd/system/leash.service" "644 0 0"
expect_stat "$S/var/log/leash" "750 0 0"
expect_absent "$S/etc/leash/leash.yaml"
expect_absent "$S/var/lib"
if out=$("$repo/scripts/install" --destdir "$S" --user "$user" --from "$work/v1" 2>&1); then
  fail "--user into a root that cannot run leash succeeded: $out"
fi
echo "$out" | grep -q "cannot run /usr/bin/leash inside it" || fail "unclear refusal: $out"
pass "--user into a root that cannot run leash is refused, saying why"

# ========== 6. A missing binary installs nothing ==========
echo "== 6. a missing binary"
E=$work/empty
mkdir "$E" "$work/partial"
cp "$work/v1/leash" "$work/v1/leashd" "$work/partial/"
if out=$("$repo/scripts/install" --destdir "$E" --from "$work/partial" 2>&1); then
  fail "install with leash-proxy and leash-fswatch missing succeeded: $out"
fi
echo "$out" | grep -q "leash-proxy" && echo "$out" | grep -q "Nothing was installed" || fail "unclear refusal: $out"
[ -z "$(ls -A "$E")" ] || fail "a failed install left files: $(ls -A "$E")"
pass "a missing binary is named and nothing is installed"

# ========== 7. Without --destdir, as on a real host: run inside a second throwaway root ==========
# The scripts themselves run in the chroot, so the path an operator takes (leash init run
# directly, no systemd here, leashd found by its pidfile) is the one exercised.
echo "== 7. the host path (no --destdir), inside a second throwaway root"
H=$work/host
make_root "$H" "$work/layers-host"
mkdir -p "$H/tmp/src/scripts/lib" "$H/tmp/src/packaging/logrotate.d" "$H/tmp/bins"
cp -L "$repo"/scripts/{install,uninstall,reload-policy} "$H/tmp/src/scripts/"
cp -L "$repo"/scripts/lib/*.sh "$H/tmp/src/scripts/lib/"
cp -L "$repo/packaging/leash.service" "$H/tmp/src/packaging/"
cp -rL "$repo/packaging/lists" "$H/tmp/src/packaging/"
cp -L "$repo/packaging/logrotate.d/leash" "$H/tmp/src/packaging/logrotate.d/"
cp "$work/v1/"* "$H/tmp/bins/"
in_host() { chroot "$H" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
# /etc was copied from this host, which may have a leash-tools group of its own already.
in_host groupdel leash-tools >/dev/null 2>&1 || true
if ! out=$(in_host /tmp/src/scripts/install --user "$user" --from /tmp/bins 2>&1); then
  echo "$out" >&2
  fail "scripts/install (no --destdir) failed inside the root"
fi
echo "$out" | sed 's/^/    | /'
read -r huid hgid <<<"$(awk -F: -v n="$user" '$1 == n { print $3, $4 }' "$H/etc/passwd")"
[ -n "$huid" ] || fail "the account was not created"
for i in 0 1 2 3; do expect_stat "$H${DESTS[$i]}" "755 0 0"; done
expect_stat "$H/lib/systemd/system/leash.service" "644 0 0"
expect_stat "$H/etc/leash/leash.yaml" "640 0 $hgid"
expect_stat "$H/var/log/leash" "750 0 0"
expect_stat "$H/etc/logrotate.d/leash" "644 0 0"
cmp -s "$repo/packaging/logrotate.d/leash" "$H/etc/logrotate.d/leash" ||
  fail "the installed logrotate snippet is not packaging/logrotate.d/leash"
grep -q "^copytruncate\|^ *copytruncate" "$H/etc/logrotate.d/leash" || fail "the log is not rotated with copytruncate"
# The tools socket's own group, with the leashed user in it: never the user's own group.
awk -F: -v u="$user" '$1 == "leash-tools" && ("," $4 ",") ~ ("," u ",") { found = 1 } END { exit !found }' \
  "$H/etc/group" || fail "the group leash-tools was not created with $user in it"
echo "$out" | grep -q "created the group leash-tools" || fail "install did not say it created leash-tools"
pass "install: /etc/logrotate.d/leash (copytruncate) and the group leash-tools with $user in it"
expect_absent "$H/var/lib/leash"
echo "$out" | grep -q "no systemd here" || fail "install did not say how to start the service without systemd"
pass "no systemd: install says to start \`leash\` itself"

# A leashd running (a stand-in named leashd holding /run/leash/leashd.pid, as leashd does):
# an upgrade says it runs the old binaries; uninstall stops it with SIGTERM before removing.
cat >"$H/tmp/leashd" <<'EOF'
#!/bin/bash
# STAND-IN for a running leashd: its PID in /run/leash/leashd.pid; SIGTERM stops it.
mkdir -p /run/leash
trap 'echo stopped >/run/leash/stopped; rm -f /run/leash/leashd.pid; exit 0' TERM
echo $$ >/run/leash/leashd.pid
while :; do sleep 0.05; done
EOF
chmod 0755 "$H/tmp/leashd"
chroot "$H" /tmp/leashd &
running=$!
wait_for 10 test -s "$H/run/leash/leashd.pid"
out=$(in_host /tmp/src/scripts/install --from /tmp/bins 2>&1) || fail "upgrade with leashd running failed: $out"
echo "$out" | grep -q "leashd (pid $running) is running the previous binaries" ||
  fail "the upgrade did not say leashd runs the previous binaries: $out"
kill -0 "$running" || fail "the upgrade stopped leashd; it must leave that to the operator"
pass "upgrade with leashd running: told, not restarted"
out=$(in_host /tmp/src/scripts/uninstall 2>&1) || fail "uninstall failed: $out"
echo "$out" | grep -q "stopping leashd (pid $running)" || fail "uninstall did not stop leashd: $out"
wait "$running" 2>/dev/null || true
[ -f "$H/run/leash/stopped" ] || fail "leashd was not stopped with SIGTERM (its stop path never ran)"
pass "uninstall stopped leashd with SIGTERM before removing it"
for path in "${DESTS[@]}" /lib/systemd/system/leash.service; do expect_absent "$H$path"; done
expect_stat "$H/etc/leash/leash.yaml" "640 0 $hgid"

echo "PASS"
