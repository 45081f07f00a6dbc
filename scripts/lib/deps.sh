# Debian 12 packages Leash builds and tests with. Sourced by scripts/test and scripts/demo.
# Idempotent and quiet when everything is already installed; needs root to install.

LEASH_PACKAGES=(
  bazel-bootstrap g++ pkg-config
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libyaml-cpp-dev libnftnl-dev libmnl-dev libre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # zlib: the decision log's compressed rotations (base/rotated_log.cc).
  zlib1g-dev
  nftables iptables iproute2 util-linux passwd procps
  # newuidmap/newgidmap: the subordinate-UID tests map an agent's ranges for real.
  uidmap
  systemd libcap2-bin
  # test/install/unit_test.sh: every system call of the demo's leashd and sidecars, traced.
  strace
  # test/install/package_test.sh: the .deb scripts/package builds is checked by lintian.
  lintian
  python3 python3-grpcio
  # tools_api: google/rpc/status.proto for CheckTool's error details (shipped, unchanged
  # from googleapis, in golang-github-gogo-googleapis-dev); the Python client's stubs come
  # from protobuf-compiler-grpc's grpc_python_plugin at build time.
  golang-github-gogo-googleapis-dev
)

leash_install_deps() {
  local missing=() pkg status
  for pkg in "${LEASH_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
    [ "$status" = "installed" ] || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]}; run as root to install them" >&2
    return 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
