#!/usr/bin/env bash
# Start-up benchmark: a tiny python program, side by side in one run:
#   bare      /usr/bin/python3 -c 'print(1)'               (no sandbox: the floor)
#   nsfloor   build/bench-nsfloor: the same in fresh user, mount, pid, net, ipc,
#             uts and cgroup namespaces and nothing else (bench/nsfloor.c): what
#             any launcher with corral's namespaces pays before its first wall
#   bwrap     bubblewrap with the flags of research/baseline-bench.md section 2
#   corral    build/corral run -c 'print(1)'
# Reported per command: median and p90 wall time (ms) and the ratio of the
# median to bare python3's, with the host (kernel, CPU) it ran on.
#
# Environment:
#   BENCH_RUNS=40     runs per command
#   BENCH_WARMUP=3    warm-up runs per command (per round with hyperfine)
#   BENCH_ROUNDS=4    hyperfine rounds; the commands alternate between rounds, so a
#                     slow phase of the machine hits all of them alike (1: one hyperfine call)
#   BENCH_TOOL=auto   auto | alternate | hyperfine | python
#                     alternate (the default when built): build/bench-alternate runs the
#                     commands run by run in turn, without a shell, and also records each
#                     run's CPU time (the whole process tree's); hyperfine runs each command
#                     many times in a row per round; python is a fallback loop
#
# Writes bench/results/startup-<date>.json (raw times included).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
corral="$repo/build/corral"
runs=${BENCH_RUNS:-40}
warmup=${BENCH_WARMUP:-3}
rounds=${BENCH_ROUNDS:-4}
tool=${BENCH_TOOL:-auto}
py=/usr/bin/python3

die() { echo "bench/run.sh: $*" >&2; exit 1; }

[ -x "$corral" ] || die "$corral does not exist or is not executable: build it first (meson setup build && ninja -C build)"
[ -x "$py" ] || die "$py is missing (the benchmark uses Debian's python3)"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer, not '$runs'"
[[ "$warmup" =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a non-negative integer, not '$warmup'"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "BENCH_ROUNDS must be a positive integer, not '$rounds'"

# What is timed must be what we think it is: each command prints 1 and exits 0.
names=(bare bwrap corral)
cmds=(
  "$py -c 'print(1)'"
  "bwrap --unshare-all --die-with-parent --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin --symlink usr/sbin /sbin --tmpfs /tmp --proc /proc --dev /dev $py -c 'print(1)'"
  "$corral run -c 'print(1)'"
)
if ! command -v bwrap >/dev/null; then
  echo "bench/run.sh: bwrap not installed: the bubblewrap row is left out" >&2
  names=(bare corral); cmds=("${cmds[0]}" "${cmds[2]}")
fi
nsfloor="$repo/build/bench-nsfloor"
if [ -x "$nsfloor" ]; then
  names+=(nsfloor); cmds+=("$nsfloor $py -c 'print(1)'")
else
  echo "bench/run.sh: $nsfloor is not built: the namespace floor row is left out" >&2
fi
for i in "${!cmds[@]}"; do
  out=$(eval "${cmds[$i]}" 2>/dev/null) || die "'${names[$i]}' failed: ${cmds[$i]}"
  [ "$out" = "1" ] || die "'${names[$i]}' printed '$out', not 1: ${cmds[$i]}"
done

alternate="$repo/build/bench-alternate"
if [ "$tool" = auto ]; then
  if [ -x "$alternate" ]; then tool=alternate
  elif command -v hyperfine >/dev/null; then tool=hyperfine
  else tool=python; fi
fi
mkdir -p "$here/results"
[ -f "$here/results/.gitignore" ] || printf '*\n!.gitignore\n' > "$here/results/.gitignore"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
result="$here/results/startup-$stamp.json"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ "$tool" = alternate ]; then
  [ -x "$alternate" ] || die "BENCH_TOOL=alternate but $alternate is not built (ninja -C build)"
  args=()
  for i in "${!cmds[@]}"; do
    eval "argv=(${cmds[$i]})"
    args+=("${names[$i]}" "${#argv[@]}" "${argv[@]}")
  done
  echo "alternating run by run: $runs runs each, warm-up $warmup" >&2
  "$alternate" "$runs" "$warmup" "$work/round-1.json" "${args[@]}"
elif [ "$tool" = hyperfine ]; then
  command -v hyperfine >/dev/null || die "BENCH_TOOL=hyperfine but hyperfine is not installed"
  per=$(( (runs + rounds - 1) / rounds ))
  for r in $(seq "$rounds"); do
    # rotate the order each round so that no command always goes first
    order=()
    for i in "${!cmds[@]}"; do order+=( $(( (i + r - 1) % ${#cmds[@]} )) ); done
    args=()
    for i in "${order[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
    echo "round $r/$rounds: $per runs each (hyperfine)" >&2
    hyperfine -N --style basic --warmup "$warmup" --runs "$per" --export-json "$work/round-$r.json" "${args[@]}" >/dev/null
  done
else
  echo "timing with a python loop (runs alternate command by command)" >&2
  BENCH_NAMES="${names[*]}" "$py" - "$work/round-1.json" "$runs" "$warmup" "${cmds[@]}" <<'EOF'
import json, os, shlex, subprocess, sys, time
out, runs, warmup, cmds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
names = os.environ["BENCH_NAMES"].split()
argvs = [shlex.split(c) for c in cmds]
times = [[] for _ in cmds]
for i in range(warmup + runs):
    for k, argv in enumerate(argvs):
        t0 = time.perf_counter_ns()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        dt = (time.perf_counter_ns() - t0) / 1e9
        if i >= warmup:
            times[k].append(dt)
json.dump({"results": [{"command": n, "times": t} for n, t in zip(names, times)]}, open(out, "w"))
EOF
fi

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
"$py" - "$result" "$tool" "$rounds" "$runs" "$warmup" "$(uname -sr)" "${cpu:-unknown}" "$(nproc)" \
  "$("$corral" --version 2>&1 | head -1)" "$work"/round-*.json <<'EOF'
import json, statistics, sys, platform
result, tool, rounds, runs, warmup, kernel, cpu, ncpu, version = sys.argv[1:10]
files = sys.argv[10:]
times, cpu_times, commands = {}, {}, {}
for f in files:
    for r in json.load(open(f))["results"]:
        times.setdefault(r["command"], []).extend(r["times"])
        if "cpu_times" in r:
            cpu_times.setdefault(r["command"], []).extend(r["cpu_times"])
        if "command" in r:
            commands.setdefault(r["command"], r["command"])

def pct(xs, p):
    xs = sorted(xs)
    k = (len(xs) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

stats = {}
for name, xs in times.items():
    ms = [x * 1000 for x in xs]
    stats[name] = {"n": len(ms), "median_ms": statistics.median(ms), "p90_ms": pct(ms, 0.9),
                   "mean_ms": statistics.fmean(ms), "min_ms": min(ms), "max_ms": max(ms)}
for name, xs in cpu_times.items():
    stats[name]["cpu_median_ms"] = statistics.median(x * 1000 for x in xs)
base = stats["bare"]["median_ms"]
for name, s in stats.items():
    s["ratio_to_bare"] = s["median_ms"] / base
    if "cpu_median_ms" in s:
        s["cpu_ratio_to_bare"] = s["cpu_median_ms"] / stats["bare"]["cpu_median_ms"]
host = {"kernel": kernel, "cpu": cpu, "cpus": int(ncpu), "python": "/usr/bin/python3 " + platform.python_version(),
        "corral": version}
print(f"host: {kernel}, {cpu}, {ncpu} CPUs; corral: {version}")
print(f"tool: {tool}" + (f", {rounds} alternating rounds" if tool == "hyperfine" else ", alternating run by run")
      + f", {runs} runs per command, warm-up {warmup}")
print()
cpu = bool(cpu_times)
print(f"{'command':<10} {'runs':>5} {'median ms':>10} {'p90 ms':>8} {'min ms':>8} {'x bare':>7}"
      + (f" {'cpu ms':>8} {'cpu x bare':>10}" if cpu else ""))
for name in ("bare", "nsfloor", "bwrap", "corral"):
    if name in stats:
        s = stats[name]
        line = f"{name:<10} {s['n']:>5} {s['median_ms']:>10.1f} {s['p90_ms']:>8.1f} {s['min_ms']:>8.1f} {s['ratio_to_bare']:>7.2f}"
        if cpu and name == "bwrap":
            # bubblewrap's program is reaped by its own pid 1 inside the
            # sandbox, which wait4 does not count: its CPU figure is partial.
            line += f" {'-':>8} {'-':>10}"
        elif cpu:
            line += f" {s['cpu_median_ms']:>8.1f} {s['cpu_ratio_to_bare']:>10.2f}"
        print(line)
json.dump({"benchmark": "startup: print(1)", "host": host, "tool": tool, "rounds": int(rounds),
           "runs_per_command": int(runs), "warmup": int(warmup), "stats": stats,
           "times_s": times, "cpu_times_s": cpu_times}, open(result, "w"), indent=1)
print(f"\nwritten: {result}")
EOF
