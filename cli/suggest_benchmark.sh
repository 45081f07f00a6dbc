#!/bin/bash
# Times `leash suggest` over a generated decision log of N lines (default 1,000,000), twice:
# every line the agent's, and a shared log where one line in ten is. Prints the wall and CPU
# time and peak memory of each run (CPU time is the steadier figure on a shared machine). Build first: bazel build -c opt //cli:leash
#   cli/suggest_benchmark.sh [path/to/leash] [lines]
set -euo pipefail

leash="${1:-bazel-bin/cli/leash}"
lines="${2:-1000000}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A floor to judge consent against, and an empty state folder.
printf 'user: nobody\nnetwork: { mode: whitelist, allow: ["floor.example"] }\n' > "$work/floor.yaml"
mkdir -p "$work/state"

# The agent is `nobody` (65534). Its lines look like the writers' (fswatch's fast renderer and
# the proxy's): files over 5,000 paths in 200 folders, 300 names, 40 commands, 20 tools; the
# tool lines carry escaped inputs, so they take protobuf's JSON parser.
generate() {  # generate <file> <one line in how many is the agent's>
  /usr/bin/python3 - "$1" "$lines" "$2" <<'PY'
import random, sys
path, n, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(7)
alphabet = "abcdefghijkmnpqrstuvwxyz23456789"
with open(path, "w") as out:
    for i in range(n):
        uid = 65534 if i % every == 0 else 2000 + i % 50
        ts = "2026-12-02T06:%02d:%02d.%06dZ" % (i // 60000 % 60, i // 1000 % 60, i % 1000000)
        ref = "".join(rnd.choice(alphabet) for _ in range(8))
        kind = rnd.random()
        if kind < 0.80:
            subject = '"path":"/home/agent/work/d%d/f%d.py"' % (rnd.randrange(200), rnd.randrange(25))
            surface, reason = "filesystem", "filesystem: allowed by /home/agent/work"
        elif kind < 0.92:
            subject = '"domain":"h%d.s%d.example.com","ip":"192.0.2.%d","port":443' % (
                rnd.randrange(10), rnd.randrange(30), rnd.randrange(250))
            surface, reason = "network", "network: allowed by *.example.com"
        elif kind < 0.98:
            subject = '"binary":"/usr/bin/tool%d"' % rnd.randrange(40)
            surface, reason = "commands", "commands: allowed by name"
        else:
            subject = '"name":"tool_%d","inputs":"{\\"q\\":\\"x\\"}"' % rnd.randrange(20)
            surface, reason = "tools", "tools: allowed"
        action = "block" if rnd.random() < 0.01 else "allow"
        out.write('{"ts":"%s","ref":"%s","uid":%d,"surface":"%s","action":"%s","reason":"%s",'
                  '"subject":{%s}}\n' % (ts, ref, uid, surface, action, reason, subject))
PY
}

run() {  # run <label> <log>
  local stats
  stats="$( { /usr/bin/time -f '%e %U %S %M' "$leash" suggest --account nobody --log "$2" \
      --config "$work/floor.yaml" --state-dir "$work/state" > "$work/out.yaml"; } 2>&1 | tail -1)"
  read -r seconds user sys kib <<< "$stats"
  echo "$1: $lines lines, ${seconds} s wall (CPU: ${user} s user, ${sys} s system)," \
       "peak RSS $((kib / 1024)) MiB," \
       "$(grep -c '^    - ' "$work/out.yaml") entries suggested"
}

generate "$work/all.jsonl" 1
run "every line the agent's" "$work/all.jsonl"
rm -f "$work/all.jsonl"
generate "$work/shared.jsonl" 10
run "one line in ten the agent's" "$work/shared.jsonl"
