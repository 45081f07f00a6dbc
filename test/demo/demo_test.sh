#!/usr/bin/env bash
# Runs scripts/demo with the binaries Bazel built for this test and checks what it must show:
# each agent allowed and blocked per its own profile on HTTP, HTTPS, filesystem and exec, every
# verdict next to its decision-log line with a ref, the masked secret, the ack refusal then the
# acked save, the other agent untouched, and nothing left behind.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  if [ "${LEASH_SKIP_ROOT_TESTS:-}" = "1" ]; then
    echo "SKIPPED, NOT RUN: needs root (LEASH_SKIP_ROOT_TESTS=1 is set)"
    exit 0
  fi
  echo "FAIL: this test needs root; run it as root (CI does)" >&2
  exit 1
fi
bin=$(mktemp -d /tmp/leash-demo-test-bin.XXXXXX)
trap 'rm -rf "$bin"' EXIT
cp cli/leash controlplane/main/leashd proxy/leash-proxy fswatch/leash-fswatch "$bin/"
out=$(LEASH_DEMO_BINARIES=$bin scripts/demo 2>&1) && rc=0 || rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: scripts/demo exited $rc" >&2; exit 1; }

expect() {  # expect <regex> <what it shows>
  if ! grep -qE -- "$1" <<<"$out"; then
    echo "FAIL: the demo did not show $2 (no line matching: $1)" >&2
    exit 1
  fi
}
# Each run's accounts carry its own suffix (scripts/demo: LEASH_DEMO_RUN).
iris='leash-demo-iris-[0-9a-f]+'
vader='leash-demo-vader-[0-9a-f]+'
row() { echo "^$1 +$2 +$3 +$4 +[a-z2-9]{8} "; }
expect "$(row "$iris" 'http://allowed.example/' ok allow)" "iris allowed over HTTP"
expect "$(row "$iris" 'https://allowed.example/' ok allow)" "iris allowed over HTTPS"
expect "$(row "$iris" 'https://evil.example/' 'FAILED \(exit [0-9]+\)' block)" "iris blocked over HTTPS"
expect "$(row "$vader" 'http://allowed.example/' 'FAILED \(exit [0-9]+\)' block)" "vader blocked where iris is allowed"
expect "$(row "$vader" 'http://vader.example/' ok allow)" "vader allowed on its own host"
expect "$(row "$iris" 'read iris-work/notes.txt' ok allow)" "a read inside the whitelist"
expect "$(row "$iris" 'read secrets/key.txt' 'FAILED \(exit 1\)' block)" "a read outside it denied"
expect "$(row "$iris" 'run bin/build-tool' ok allow)" "an allowed command"
expect "$(row "$iris" 'run bin/exfiltrate' 'FAILED \(exit 126\)' block)" "a denied command (EPERM)"
expect "secrets/github_token at \\\$\\.cmd: ghp_\\*\\*\\*\\*" "the planted secret found and masked"
expect "raw secret appears nowhere in the log" "the log free of the raw secret"
expect "^ +--ack 'agent:$iris=network\\.allow:evil\\.example'\$" "the ack token in the profile-save refusal"
# The acked save is written and exits 0. Which reconcile re-applies iris is not the demo's to
# predict on a shared host: another run's useradd changes passwd, leashd's account-file watch
# reconciles, and that pass may pick up the saved profile before the save's own SIGHUP does.
# That the change is in force is the row below.
acked_save=$(awk '/^\$ leash profile save iris .*--ack/ {on = 1} on {print} on && /^\(exit/ {exit}' <<<"$out")
if ! grep -qx "written" <<<"$acked_save" || ! grep -qx "(exit 0)" <<<"$acked_save"; then
  echo "FAIL: the acked profile save was not written:" >&2
  echo "$acked_save" >&2
  exit 1
fi
expect "$(row "$iris" 'https://evil.example/ \(now allowed\)' ok allow)" "the change in force"
expect "vader untouched: its nft chain kept the same rule handles" "the other agent untouched"
expect "agent chains left in the namespace: 0" "the stop path releasing every chain"
expect "cleaned up: no account, namespace, mount or nft rule left behind" "a clean teardown"
echo "PASS: the demo showed every surface enforcing"
