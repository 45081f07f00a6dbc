# shellcheck shell=bash
# Shared by the shell tests in test/install: failing loudly, the root rule, bounded waits, and
# a private mount namespace so every mount a test makes goes away with it, even on SIGKILL.

# fail MESSAGE: the test fails here, saying why.
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# pass MESSAGE: one line per check that held, so the log shows what was checked.
pass() {
  echo "ok: $*"
}

# require_root: as LEASH_REQUIRE_ROOT (test/fixtures/root.h): without root the test FAILS,
# unless LEASH_SKIP_ROOT_TESTS=1 asks for a loud skip on a developer machine.
require_root() {
  if [ "$(id -u)" -ne 0 ]; then
    if [ "${LEASH_SKIP_ROOT_TESTS:-}" = 1 ]; then
      echo "SKIPPED, NOT RUN: needs root (LEASH_SKIP_ROOT_TESTS=1 is set)"
      exit 0
    fi
    fail "this test needs root; run it as root (CI does), or set --test_env=LEASH_SKIP_ROOT_TESTS=1 to skip it on a developer machine"
  fi
}

# in_private_mount_namespace "$@": re-runs the calling script in a new mount namespace with
# private propagation. Mounts made there never reach the host and vanish when the last
# process in it exits, however it exits.
in_private_mount_namespace() {
  if [ -z "${LEASH_TEST_IN_MOUNT_NS:-}" ]; then
    export LEASH_TEST_IN_MOUNT_NS=1
    exec unshare --mount --propagation private -- "$BASH" "$0" "$@"
  fi
}

# wait_for SECONDS COMMAND...: polls COMMAND every 20 ms until it succeeds; fails the test
# after SECONDS.
wait_for() {
  local seconds=$1
  shift
  local tries=$((seconds * 50))
  while ! "$@"; do
    tries=$((tries - 1))
    [ "$tries" -gt 0 ] || fail "timed out after ${seconds}s waiting for: $*"
    sleep 0.02
  done
}

# Paths in pass lines are shown relative to $SHOW_RELATIVE_TO when a test sets it.
shown() {
  echo "${1#"${SHOW_RELATIVE_TO:-}"}"
}

# expect_stat PATH "MODE UID GID": PATH's octal mode and numeric owner are exactly these.
expect_stat() {
  local got
  got=$(stat -c '%a %u %g' "$1" 2>/dev/null) || fail "$1 does not exist"
  [ "$got" = "$2" ] || fail "$1: mode and owner are '$got', want '$2'"
  pass "$(shown "$1") $2"
}

# expect_absent PATH
expect_absent() {
  if [ -e "$1" ] || [ -L "$1" ]; then fail "$1 exists and should not"; fi
  pass "$(shown "$1") absent"
}

# fingerprint PATH: content hash, mode, owner and mtime: equal fingerprints mean the file was
# not rewritten, not just rewritten with the same bytes.
fingerprint() {
  echo "$(sha256sum <"$1" | cut -d' ' -f1) $(stat -c '%a %u %g %y' "$1")"
}
