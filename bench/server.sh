#!/usr/bin/env bash
# Load benchmark of corral serve (the baseline figures of the server issue):
# wrk against POST /v1/execute with print(1) and against a session's
# execute with 1+1, throughput and p50/p99 latency, side by side with
# `corral run -c 'print(1)'` and bare python3 measured in the same run.
#   bench/server.sh            (BENCH_SECONDS=10 BENCH_CONNECTIONS=2 to change)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
corral="$repo/build/corral"
[ -x "$corral" ] || { echo "bench/server.sh: $corral is missing: run make build first" >&2; exit 1; }
command -v wrk >/dev/null || { echo "bench/server.sh: wrk is missing (apt-get install wrk)" >&2; exit 1; }
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-2}
port=$(( 20000 + RANDOM % 20000 ))
tmp=$(mktemp -d)
trap 'kill -TERM $srv 2>/dev/null; wait $srv 2>/dev/null; rm -rf "$tmp"' EXIT

"$corral" serve --listen "127.0.0.1:$port" --max-concurrent "$(nproc)" --queue 64 \
  2> "$tmp/serve.log" &
srv=$!
for _ in $(seq 100); do grep -q "listening on" "$tmp/serve.log" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$tmp/serve.log" || { cat "$tmp/serve.log" >&2; exit 1; }
base="http://127.0.0.1:$port"

cat > "$tmp/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = os.getenv("BODY")
LUA

run_wrk() {  # name url body
  local out="$tmp/wrk.txt"
  BODY="$3" wrk -t "$conns" -c "$conns" -d "${secs}s" --latency -s "$tmp/post.lua" "$2" > "$out"
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' "$out")
  p50=$(awk '$1 == "50%" {print $2}' "$out")
  p99=$(awk '$1 == "99%" {print $2}' "$out")
  printf '%-34s %10s req/s   p50 %8s   p99 %8s\n' "$1" "$rps" "$p50" "$p99"
  if grep -q "Non-2xx" "$out"; then grep "Non-2xx" "$out"; fi
}

echo "host: $(uname -sr), $(nproc) CPUs; $conns connections, ${secs} s each"
echo
run_wrk "POST /v1/execute print(1)" "$base/v1/execute" '{"code":"print(1)"}'
sid=$(curl -s "$base/v1/sessions" -d '{"language":"python"}' | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
run_wrk "POST /v1/sessions/ID/execute 1+1" "$base/v1/sessions/$sid/execute" '{"code":"1+1"}'
curl -s -X DELETE "$base/v1/sessions/$sid" > /dev/null

echo "same run, one process at a time (hyperfine medians):"
hyperfine -N --warmup 3 --runs 30 --export-json "$tmp/h.json" \
  "/usr/bin/python3 -c 'print(1)'" "$corral run -c 'print(1)'" > /dev/null
/usr/bin/python3 - "$tmp/h.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"  {r['command']:<34} median {r['median']*1000:7.1f} ms  -> {1/r['median']:7.1f} runs/s serially")
PY
