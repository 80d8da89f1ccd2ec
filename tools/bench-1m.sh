#!/usr/bin/env bash
# adaptkv against RocksDB at 1M x 1 KB records (or, with BENCH_SIZE=10m, at
# 10M x 100 B records), in alternating pairs.
#
#   tools/bench-1m.sh BUILD_DIR WORK_DIR
#   BENCH_SIZE=10m tools/bench-1m.sh BUILD_DIR WORK_DIR
#
# WORK_DIR (default $BENCH_DIR, else BUILD_DIR/bench-1m) holds the databases
# (~1-1.5 GB each, up to three at a time) and the results; put it on a disk
# with room, outside the repository. Databases are deleted as soon as they
# are done with; results stay in WORK_DIR/runs, the summary in
# WORK_DIR/summary.csv and WORK_DIR/summary.md. Plots go to docs/plots/1m-*.png.
#
# For each pair (adaptkv, then RocksDB, BENCH_PAIRS times), each engine:
#   1. load recordcount records (workloada's load) with a load timeline;
#      du -sb of the database after the load;
#   2. fresh absent keys (workloadn, every read a key never asked before:
#      uniform over 10^9 absent keys) for BENCH_FRESH0_SECONDS, right after
#      the load: the tree as the load left it, the "right after a load" row
#      (no --settle);
#   3. workloadc, then workloadn with negativeproportion=1.0 (zipfian), then
#      fresh absent keys, BENCH_SECONDS each (operationcount=0: no op limit),
#      on the same database, each in steady state (--settle BENCH_SETTLE:
#      no flush or compaction due or running when it starts);
#   4. BENCH_EXTRA_WORKLOADS ("a f" at 1M, none at 10M; "" = none), each on
#      its own copy of the database as it was after the load (they write),
#      settled.
# Both engines hold the same filter memory per key (--equal-filter-memory:
# adaptkv's bits_per_key also covers RocksDB's memtable Bloom filter); the
# summary checks the two totals are within 5 %.
# BENCH_SIZE=10m: 10M records of one 100-byte field (-p fieldcount=1 -p
# fieldlength=100), BENCH_SECONDS 30 and no extra workloads by default, the
# work directory BUILD_DIR/bench-10m, plots docs/plots/10m-*.png. One pair
# took 23 min on a busy machine (load average 12-19), 17 of them the two
# loads; a load takes about 190 s per engine on an idle one.
# The load average (uptime) is recorded before and after every run in
# WORK_DIR/loadavg.txt: the numbers mean little on a busy machine without it.
# BENCH_RECORDS, BENCH_PAIRS, BENCH_SECONDS, BENCH_THREADS change the defaults.
# BENCH_REPORT_ONLY=1 only remakes the summary and plots from WORK_DIR.
# A kvbench failure stops the script (the command is in WORK_DIR/runs/TAG.cmd).
set -eu
build=${1:-build}
work=${2:-${BENCH_DIR:-$build/bench-1m}}
[ -x "$build/kvbench" ] || { echo "bench-1m: $build/kvbench is missing; run 'make tools' first" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "bench-1m: gnuplot is missing (tools/install-deps.sh)" >&2; exit 1; }

size=${BENCH_SIZE:-1m}
case $size in
  1m) records=${BENCH_RECORDS:-1000000}; secs=${BENCH_SECONDS:-60}; shape=()
      extra_wls=(${BENCH_EXTRA_WORKLOADS-a f}) ;;
  10m) records=${BENCH_RECORDS:-10000000}; secs=${BENCH_SECONDS:-30}; shape=(-p fieldcount=1 -p fieldlength=100)
       extra_wls=(${BENCH_EXTRA_WORKLOADS-})
       work=${2:-${BENCH_DIR:-$build/bench-10m}} ;;
  *) echo "bench-1m: BENCH_SIZE is 1m or 10m, not '$size'" >&2; exit 2 ;;
esac
pairs=${BENCH_PAIRS:-3}
threads=${BENCH_THREADS:-2}
settle=${BENCH_SETTLE:-900}
fresh0_secs=${BENCH_FRESH0_SECONDS:-30}
plots=docs/plots
common=(--threads "$threads" --cache-mb 8 --memtable-mb 16 --direct-reads --bits-per-key 10
        --equal-filter-memory --interval 1000 --quiet)
runprops=(-p recordcount="$records" "${shape[@]}" -p operationcount=0 -p maxexecutiontime="$secs")
fresh=(-P workloads/workloadn -p negativeproportion=1.0 -p negativedistribution=uniform
       -p negativekeycount=1000000000)
engines=(adaptkv rocksdb)

mkdir -p "$work/runs" "$plots"
start=$(date +%s)
kvbench="$work/kvbench"

loadavg() { uptime | sed 's/.*load average: *//'; }

# run TAG kvbench-args...: one kvbench run, with the load average around it.
run() {
  local tag=$1 rc=0
  shift
  printf '%q ' "$kvbench" "$@" >"$work/runs/$tag.cmd"
  echo "$tag before $(loadavg)" >>"$work/loadavg.txt"
  printf 'bench-1m: %-16s (%ds) ' "$tag" $(($(date +%s) - start)) >&2
  "$kvbench" "$@" >"$work/runs/$tag.log" 2>&1 || rc=$?
  echo "$tag after $(loadavg)" >>"$work/loadavg.txt"
  if [ $rc -ne 0 ]; then
    echo "FAILED (exit $rc): $(cat "$work/runs/$tag.cmd"); see $work/runs/$tag.log" >&2
    exit 1
  fi
  jget "$work/runs/$tag.json" throughput_ops | awk '{ printf "%.0f ops/s\n", $1 }' >&2
}

# jget FILE KEY [OP]: a top-level number of kvbench's JSON, or latency_us.OP.KEY.
jget() {
  if [ $# -eq 3 ]; then
    grep -o "\"$3\":{[^}]*}" "$1" | grep -o "\"$2\":[^,}]*" | head -n 1 | cut -d: -f2
  else
    grep -o "\"$2\":[^,}]*" "$1" | head -n 1 | cut -d: -f2
  fi
}

if [ -z "${BENCH_REPORT_ONLY:-}" ]; then
# A private copy of the binary: a rebuild during the bench must not change it.
cp "$build/kvbench" "$kvbench"
: >"$work/loadavg.txt"
: >"$work/du.txt"
for i in $(seq 1 "$pairs"); do
  for e in "${engines[@]}"; do
    db="$work/db-$e-$i"
    rm -rf "$db"
    run "$e-$i-load" --engine "$e" --phase load -P workloads/workloada -p recordcount="$records" "${shape[@]}" \
      "${common[@]}" --db "$db" --json "$work/runs/$e-$i-load.json" \
      --load-timeline "$work/runs/$e-$i-load.timeline.csv"
    echo "$e-$i $(du -sb "$db" | cut -f1)" >>"$work/du.txt"
    for w in "${extra_wls[@]}"; do cp -a "$db" "$db-$w"; done
    sync
    # Right after the load: not settled, a row of its own.
    run "$e-$i-fresh0" --engine "$e" --phase run "${fresh[@]}" "${runprops[@]}" -p maxexecutiontime="$fresh0_secs" \
      "${common[@]}" --db "$db" --json "$work/runs/$e-$i-fresh0.json" --timeline "$work/runs/$e-$i-fresh0.timeline.csv"
    run "$e-$i-c" --engine "$e" --phase run -P workloads/workloadc "${runprops[@]}" "${common[@]}" \
      --settle "$settle" --db "$db" --json "$work/runs/$e-$i-c.json" --timeline "$work/runs/$e-$i-c.timeline.csv"
    run "$e-$i-n" --engine "$e" --phase run -P workloads/workloadn "${runprops[@]}" \
      -p negativeproportion=1.0 "${common[@]}" --settle "$settle" \
      --db "$db" --json "$work/runs/$e-$i-n.json" --timeline "$work/runs/$e-$i-n.timeline.csv"
    run "$e-$i-fresh" --engine "$e" --phase run "${fresh[@]}" "${runprops[@]}" "${common[@]}" \
      --settle "$settle" --db "$db" --json "$work/runs/$e-$i-fresh.json" --timeline "$work/runs/$e-$i-fresh.timeline.csv"
    rm -rf "$db"
    for w in "${extra_wls[@]}"; do
      run "$e-$i-$w" --engine "$e" --phase run -P "workloads/workload$w" "${runprops[@]}" "${common[@]}" \
        --settle "$settle" --db "$db-$w" --json "$work/runs/$e-$i-$w.json" --timeline "$work/runs/$e-$i-$w.timeline.csv"
      rm -rf "$db-$w"
    done
  done
done
fi
elapsed=$(($(date +%s) - start))

# ---- summary -------------------------------------------------------------------------
# last10 FILE: throughput and wasted probes per negative lookup over the last 10
# timeline rows (10 s at --interval 1000). Columns: 3 seconds, 4 ops and 6 negative
# lookups (both cumulative), 7 wasted probes per negative lookup (this interval).
last10() {
  awk -F, 'NR > 1 { s[++n] = $3; o[n] = $4; neg[n] = $6; w[n] = $7 }
    END { k = n > 10 ? n - 10 : 1; tn = tw = 0
          for (j = k + 1; j <= n; j++) { d = neg[j] - neg[j - 1]; tn += d; tw += d * w[j] }
          printf "%.1f,%.4f", (o[n] - o[k]) / (s[n] - s[k]), tn ? tw / tn : 0 }' "$1"
}
la() { awk -v t="$1" -v w="$2" '$1 == t && $2 == w { sub(/,$/, "", $3); print $3 }' "$work/loadavg.txt"; }

sum=$work/summary.csv
echo "engine,pair,workload,throughput_ops,p50_us,p99_us,max_us,write_amp,write_stalls,write_slowdowns,stall_seconds,du_bytes,wasted_per_negative,filters_per_negative,block_reads_per_op,filter_bits_per_key,sst_filter_bits_per_key,adaptations,last10_ops,last10_wasted_per_negative,load1_before,load1_after" >"$sum"
for i in $(seq 1 "$pairs"); do
  for e in "${engines[@]}"; do
    for w in load fresh0 c n fresh "${extra_wls[@]}"; do
      f="$work/runs/$e-$i-$w.json"
      [ -s "$f" ] || continue
      case $w in load) op=INSERT ;; f) op=READ-MODIFY-WRITE ;; *) op=READ ;; esac
      du=""; [ "$w" = load ] && du=$(awk -v t="$e-$i" '$1 == t { print $2 }' "$work/du.txt")
      tl="$work/runs/$e-$i-$w.timeline.csv"; [ "$w" = load ] && tl="$work/runs/$e-$i-load.timeline.csv"
      echo "$e,$i,$w,$(jget "$f" throughput_ops),$(jget "$f" p50 "$op"),$(jget "$f" p99 "$op"),$(jget "$f" max "$op"),$(jget "$f" write_amp),$(jget "$f" write_stalls),$(jget "$f" write_slowdowns),$(jget "$f" stall_seconds),$du,$(jget "$f" wasted_probes_per_negative_lookup),$(jget "$f" filters_per_negative_lookup),$(jget "$f" block_reads_per_op),$(jget "$f" filter_bits_per_key),$(jget "$f" sst_filter_bits_per_key),$(jget "$f" adaptations),$(last10 "$tl"),$(la "$e-$i-$w" before),$(la "$e-$i-$w" after)"
    done
  done
done >>"$sum"

# Markdown: one row per run, the adaptkv/RocksDB throughput ratio of its pair,
# and the median of each column over the pairs.
awk -F, -v pairs="$pairs" '
  # kvbench reports write stalls and slowdowns for adaptkv only, stall seconds for RocksDB only.
  function nr(e, who, x, f) { return e == who ? sprintf(f, x) : "—" }
  function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                 return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  NR == 1 { for (c = 1; c <= NF; c++) col[$c] = c; next }
  { key = $1 SUBSEP $2 SUBSEP $3; for (c = 1; c <= NF; c++) v[key, c] = $c; wl[$3] = 1; order[++nw] = $3 }
  END {
    split("load fresh0 c n fresh a f", ws, " ")
    for (x = 1; x <= 7; x++) {
      w = ws[x]; if (!(w in wl)) continue
      printf "\n#### %s\n\n", (w == "load" ? "load (workloada load phase)" : w == "fresh0" ? "fresh absent keys, right after a load (not settled)" : w == "fresh" ? "fresh absent keys (steady state)" : "workload" w " (steady state)")
      if (w == "load")
        printf "| run | ops/s | ratio | INSERT p99 µs | INSERT max µs | write amp | stalls | slowdowns | stall s | du -sb | last 10 s ops/s | load avg before → after |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
      else
        printf "| run | ops/s | ratio | p50 µs | p99 µs | max µs | block reads/op | wasted/neg | wasted/neg last 10 s | filters/neg | filter bits/key | adaptations | last 10 s ops/s | load avg before → after |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n"
      split("adaptkv rocksdb", es, " ")
      for (y = 1; y <= 2; y++) {
        e = es[y]; n = 0; delete m
        for (i = 1; i <= pairs; i++) {
          k = e SUBSEP i SUBSEP w; if (!((k, 1) in v)) continue
          r = e == "adaptkv" ? v[k, 4] / v["rocksdb", i, w, 4] : 1
          n++; m[1, n] = v[k, 4]; m[2, n] = r
          if (w == "load")
            printf "| %s #%d | %.0f | %.2f | %.0f | %.0f | %.3f | %s | %s | %s | %d | %.0f | %s → %s |\n", e, i, v[k, 4], r, v[k, 6], v[k, 7], v[k, 8], nr(e, "adaptkv", v[k, 9], "%d"), nr(e, "adaptkv", v[k, 10], "%d"), nr(e, "rocksdb", v[k, 11], "%.1f"), v[k, 12], v[k, 19], v[k, 21], v[k, 22]
          else
            printf "| %s #%d | %.0f | %.2f | %.1f | %.1f | %.0f | %.3f | %.4f | %.4f | %.3f | %.2f | %d | %.0f | %s → %s |\n", e, i, v[k, 4], r, v[k, 5], v[k, 6], v[k, 7], v[k, 15], v[k, 13], v[k, 20], v[k, 14], v[k, 16], v[k, 18], v[k, 19], v[k, 21], v[k, 22]
          for (c = 5; c <= 20; c++) m[c, n] = v[k, c]
        }
        if (!n) continue
        for (c = 1; c <= 20; c++) { delete a; for (j = 1; j <= n; j++) a[j] = m[c, j]; md[c] = med(a, n) }
        if (w == "load")
          printf "| **%s median** | %.0f | %.2f | %.0f | %.0f | %.3f | %s | %s | %s | %d | %.0f | |\n", e, md[1], md[2], md[6], md[7], md[8], nr(e, "adaptkv", md[9], "%d"), nr(e, "adaptkv", md[10], "%d"), nr(e, "rocksdb", md[11], "%.1f"), md[12], md[19]
        else
          printf "| **%s median** | %.0f | %.2f | %.1f | %.1f | %.0f | %.3f | %.4f | %.4f | %.3f | %.2f | %d | %.0f | |\n", e, md[1], md[2], md[5], md[6], md[7], md[15], md[13], md[20], md[14], md[16], md[18], md[19]
      }
    }
  }' "$sum" >"$work/summary.md"

# Ratios adaptkv / RocksDB of the same pair, against the targets.
# (summary.csv columns: 4 throughput, 6 p99, 7 max, 8 write amp, 12 du, 20 wasted last 10 s)
awk -F, -v pairs="$pairs" '
  function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                 return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  NR > 1 { for (c = 1; c <= NF; c++) v[$1, $2, $3, c] = $c }
  function row(name, w, c, target,   i, n, a, out) {
    n = 0; out = ""
    for (i = 1; i <= pairs; i++)
      if ((("rocksdb", i, w, c) in v) && v["rocksdb", i, w, c] > 0) {
        a[++n] = v["adaptkv", i, w, c] / v["rocksdb", i, w, c]; out = out sprintf(" %.2f", a[n]) }
    if (n) printf "| %s | %s | **%.2f** | %s |\n", name, out, med(a, n), target
  }
  END {
    print "| adaptkv / RocksDB | per pair | median | target |"
    print "|---|---|---:|---|"
    row("load throughput", "load", 4, "≥ 1.0")
    row("load write amplification", "load", 8, "≤ 1.2")
    row("load INSERT p99", "load", 6, "")
    row("load INSERT max", "load", 7, "adaptkv max ≤ 1 s")
    row("disk after load (du -sb)", "load", 12, "")
    row("workloadc throughput", "c", 4, "≥ 0.95")
    row("workloadc READ p99", "c", 6, "≤ 1.2")
    row("workloadn throughput", "n", 4, "≥ 1.3")
    row("workloadn wasted probes/negative, last 10 s", "n", 20, "≤ 0.1")
    row("workloadn wasted probes/negative, whole run", "n", 13, "")
    row("workloadn filters/negative", "n", 14, "")
    row("fresh absent keys throughput", "fresh", 4, "≥ 1.5")
    row("fresh absent keys wasted probes/negative", "fresh", 13, "≤ 1.0")
    row("fresh absent keys filters/negative", "fresh", 14, "≤ 1.0")
    row("right after a load: fresh absent keys throughput", "fresh0", 4, "")
    row("right after a load: fresh absent keys filters/negative", "fresh0", 14, "")
    row("filter memory per key, all of it (workloadn)", "n", 16, "0.95–1.05")
    row("filter memory per key, all of it (fresh)", "fresh", 16, "0.95–1.05")
    row("workloada throughput", "a", 4, "")
    row("workloadf throughput", "f", 4, "")
  }' "$sum" >"$work/ratios.md"

# ---- plots (all pairs; x = seconds) -------------------------------------------------------
tplot() { # phase col png title ylabel scale
  local files="" titles=""
  for i in $(seq 1 "$pairs"); do
    for e in "${engines[@]}"; do
      local f="$work/runs/$e-$i-$1.timeline.csv"
      [ -s "$f" ] && files+="$f " && titles+="$e#$i "
    done
  done
  [ -n "$files" ] && gnuplot -e "files='$files'; titles='$titles'; col=$2; xcol=3; xlabel='seconds'; \
    scale=$6; out='$plots/$3.png'; title='$4'; ylabel='$5'" tools/plot/timeline.gp
}
if [ "$size" = 1m ]; then what="1M x 1 KB"; else what="10M x 100 B"; fi
tplot load 14 "$size-load-max-latency" "Load, $what: slowest insert per 1 s interval" "max insert latency (ms)" 0.001
tplot load 5 "$size-load-throughput" "Load, $what: inserts per second, per 1 s interval" "inserts / s" 1
tplot n 7 "$size-wasted-workloadn" "workloadn (all reads absent), $what: wasted probes per negative lookup, per 1 s" \
  "wasted probes / negative lookup" 1

echo "bench-1m: done in ${elapsed}s; $work/summary.md, $work/ratios.md, $work/summary.csv, $plots/$size-*.png" >&2
