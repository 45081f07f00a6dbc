# shellcheck shell=bash disable=SC2034  # LEASHD_PID and LEASHD_WHY are for the caller
# Finding the running leashd on a host without systemd: leashd writes its PID to
# <run dir>/leashd.pid (default /run/leash). Sourced by scripts/reload-policy and
# scripts/uninstall.

# leash_find_leashd [RUN_DIR]: sets LEASHD_PID to the PID of the live leashd named by the
# pidfile and returns 0; otherwise sets LEASHD_WHY to the reason and returns 1. A PID whose
# process is not leashd (a stale pidfile after a crash, the PID since reused) is never
# returned: signalling it would hit an unrelated process, and SIGHUP kills most of them.
leash_find_leashd() {
  local run_dir=${1:-/run/leash}
  local pidfile="$run_dir/leashd.pid" pid comm
  LEASHD_PID=""
  LEASHD_WHY=""
  if [ ! -e "$pidfile" ]; then
    LEASHD_WHY="$pidfile does not exist: leashd is not running (start it with \`leash\`)"
    return 1
  fi
  pid=$(head -c 32 "$pidfile" | tr -d '[:space:]')
  if ! [[ "$pid" =~ ^[1-9][0-9]*$ ]]; then
    LEASHD_WHY="$pidfile does not hold a PID (it holds '$pid')"
    return 1
  fi
  if ! comm=$(cat "/proc/$pid/comm" 2>/dev/null); then
    LEASHD_WHY="$pidfile names PID $pid, which is not running: the pidfile is stale (leashd exited without removing it)"
    return 1
  fi
  if [ "$comm" != leashd ]; then
    LEASHD_WHY="$pidfile names PID $pid, which is '$comm', not leashd: the pidfile is stale; not signalling it"
    return 1
  fi
  LEASHD_PID=$pid
}

# leash_systemd_running: true when systemd is the init system here (its own test).
leash_systemd_running() {
  [ -d /run/systemd/system ]
}
