#!/usr/bin/env bash
# Totals fuzz/runs.log (written by scripts/fuzz.sh) per target, as a
# Markdown table: runs, wall-clock minutes given, CPU minutes received
# (logged since runs recorded them; "-" before), fuzzing minutes (each
# run's CPU time where it was logged, its wall-clock time before that:
# the figure the one-hour-per-target goal is read against), executions,
# the most edges any run covered, the corpus after the last run, and how
# many runs crashed.
#
#   scripts/fuzz-summary.sh [RUNS_LOG]
set -euo pipefail
cd "$(dirname "$0")/.."
log="${1:-fuzz/runs.log}"
echo "| target | runs | minutes | CPU minutes | fuzzing minutes | executions | edges (most) | corpus | runs that crashed |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
awk '
{
    t = $2; runs[t]++
    secs = $3; sub(/s$/, "", secs); wall[t] += secs
    run_cpu = -1
    for (i = 4; i <= NF; i++) {
        split($i, kv, "=")
        v = kv[2]; sub(/s$/, "", v)
        if (kv[1] == "cpu") { cpu[t] += v; hascpu[t] = 1; run_cpu = v }
        if (kv[1] == "execs") execs[t] += v
        if (kv[1] == "edges" && v + 0 > edges[t]) edges[t] = v + 0
        if (kv[1] == "corpus") corpus[t] = v
    }
    fuzzed[t] += run_cpu >= 0 ? run_cpu : secs
    if ($NF == "crashed") crashed[t]++
}
END {
    for (t in runs) {
        c = hascpu[t] ? sprintf("%.0f", cpu[t] / 60) : "-"
        printf "| `%s` | %d | %.0f | %s | %.0f | %.1f M | %d | %d | %d |\n", t, runs[t], wall[t] / 60, c, fuzzed[t] / 60, execs[t] / 1e6, edges[t], corpus[t], crashed[t]
    }
}' "$log" | sort
awk '
{ secs = $3; sub(/s$/, "", secs); total += secs
  for (i = 4; i <= NF; i++) if ($i ~ /^cpu=/) { v = $i; sub(/^cpu=/, "", v); sub(/s$/, "", v); cpu += v } }
END { printf "\ntotal: %.1f h given, %.1f h of CPU logged\n", total / 3600, cpu / 3600 }' "$log"
