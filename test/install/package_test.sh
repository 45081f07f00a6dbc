#!/usr/bin/env bash
# scripts/package for real: it builds leash_<version>_amd64.deb from the binaries Bazel built,
# lintian finds no error in it, and in a throwaway root (an overlay of this host's own root in a
# mount namespace of the test's own, so the host is never touched) `apt-get install ./<deb>`
# installs it without starting or enabling the service, `leash init` and `leash validate` work,
# and `apt-get remove` takes the program away and keeps the policy.
# Usage (Bazel passes these): package_test.sh <leash> <leashd> <leash-proxy> <leash-fswatch>
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "FAIL: this test needs root (dpkg-deb with root-owned files, a mount namespace); run it as root (CI does)" >&2
  exit 1
fi
work=$(mktemp -d /tmp/leash-package-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/out"
cp "$@" "$work/bin/"

deb=$(scripts/package --from "$work/bin" --out "$work/out" --version 0.1.0)
[ -f "$deb" ] || { echo "FAIL: scripts/package printed '$deb', which is not a file" >&2; exit 1; }
[ "$(basename "$deb")" = leash_0.1.0_amd64.deb ] || { echo "FAIL: the package is named $(basename "$deb")" >&2; exit 1; }
echo "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"

lint=$(lintian --fail-on error "$deb" 2>&1) && rc=0 || rc=$?
echo "$lint" | grep -v 'running with root privileges' | sed 's/^/  lintian: /'
if [ $rc -ne 0 ]; then
  echo "FAIL: lintian found errors (exit $rc)" >&2
  exit 1
fi

# The throwaway root, and the steps run in it. Everything below happens in the namespace's
# overlay: its upper layer is a tmpfs that goes with the namespace.
run=$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
user=leashpkg$run
cat >"$work/in-root.sh" <<EOF
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
fail() { echo "FAIL: \$*" >&2; exit 1; }
cd /root
apt-get install -y -qq ./leash_0.1.0_amd64.deb >/tmp/apt-install.log 2>&1 ||
  { cat /tmp/apt-install.log; fail "apt-get install ./leash_0.1.0_amd64.deb failed"; }
echo "installed: \$(dpkg-query -W -f='\${Package} \${Version} \${db:Status-Status}' leash)"
for path in /usr/bin/leash /usr/lib/leash/leashd /usr/lib/leash/leash-proxy /usr/lib/leash/leash-fswatch; do
  [ -x "\$path" ] || fail "\$path is not installed"
done
[ "\$(stat -c '%a %U:%G' /var/log/leash)" = "750 root:root" ] || fail "/var/log/leash is \$(stat -c '%a %U:%G' /var/log/leash)"
getent group leash-tools >/dev/null || fail "postinst did not create the group leash-tools"
# Never enabled, never started: no wants link, and no leashd running from this root.
if ls /etc/systemd/system/*.wants/leash.service >/dev/null 2>&1; then fail "the package enabled leash.service"; fi
/usr/bin/leash init --user $user
[ "\$(stat -c '%a %U:%G' /etc/leash/leash.yaml)" = "640 root:$user" ] ||
  fail "leash init wrote /etc/leash/leash.yaml as \$(stat -c '%a %U:%G' /etc/leash/leash.yaml)"
/usr/bin/leash validate || fail "leash validate on the fresh config exited \$?"
apt-get remove -y -qq leash >/tmp/apt-remove.log 2>&1 || { cat /tmp/apt-remove.log; fail "apt-get remove leash failed"; }
[ ! -e /usr/bin/leash ] || fail "/usr/bin/leash is still there after remove"
[ -f /etc/leash/leash.yaml ] || fail "remove took the policy /etc/leash/leash.yaml"
echo "removed: the program is gone, /etc/leash/leash.yaml is kept"
EOF
mkdir "$work/layer"
unshare --mount --propagation private bash -euo pipefail -c '
  work=$1
  mount -t tmpfs tmpfs "$work/layer"
  mkdir "$work/layer/upper" "$work/layer/work" "$work/layer/root"
  mount -t overlay overlay -o "lowerdir=/,upperdir=$work/layer/upper,workdir=$work/layer/work" "$work/layer/root"
  root=$work/layer/root
  for fs in proc sys dev; do mount --rbind "/$fs" "$root/$fs"; done
  mount -t tmpfs tmpfs "$root/tmp"
  mount -t tmpfs tmpfs "$root/run"
  cp "$work/out/leash_0.1.0_amd64.deb" "$root/root/"
  cp "$work/in-root.sh" "$root/in-root.sh"
  chroot "$root" bash /in-root.sh
' _ "$work" 2>&1 && rc=0 || rc=$?
[ $rc -eq 0 ] || { echo "FAIL: the install, init, validate and remove in the throwaway root failed (exit $rc)" >&2; exit 1; }
if getent passwd "$user" >/dev/null; then
  echo "FAIL: the throwaway root leaked: $user exists on the host" >&2
  exit 1
fi
echo "PASS: built, lintian-clean, installed, initialised, validated and removed"
