#!/usr/bin/env bash
# make demo: load an embedded database under ./demo-db, let both engines'
# background work catch up (steady state, kvbench --settle), then replay a
# skewed stream of lookups for absent keys (workloads/workloadn with every
# read a miss, 5 % updates) on adaptkv and on plain RocksDB with the same
# settings, and print the three side by side. Absent keys are adaptkv's
# main job; the mix with 80 % absent reads is in docs/benchmarks.md.
#
#   tools/demo.sh BUILD_DIR        (the Makefile builds first)
#
# Sizes are chosen so the whole demo takes about a minute on 2 cores while
# the data (~200 MB) is larger than the block cache (8 MiB) and reads
# bypass the page cache (direct reads): what a lookup costs is disk.
set -eu
build=${1:-build}
kvbench="$build/kvbench"
[ -x "$kvbench" ] || { echo "demo: $kvbench is missing; run 'make' first" >&2; exit 1; }

root=demo-db
records=${DEMO_RECORDS:-200000}
ops=${DEMO_OPS:-4000000}
common=(-P workloads/workloadn -p negativeproportion=1.0 -p recordcount="$records" -p operationcount="$ops"
        --threads 2 --cache-mb 8 --memtable-mb 16 --direct-reads --quiet --settle 300)

rm -rf "$root"
mkdir -p "$root"
cp "$kvbench" "$root/kvbench" # immune to a rebuild while the demo runs
kvbench="$root/kvbench"
start=$(date +%s)

run() { # name, extra args...
  local name=$1; shift
  printf 'demo: %-16s load %s records, run %s ops of workloadn ...\n' "$name" "$records" "$ops" >&2
  if ! "$kvbench" "${common[@]}" --db "$root/$name" --csv "$root/results.csv" \
       --json "$root/$name.json" --timeline "$root/$name.timeline.csv" "$@" 2>"$root/$name.log"; then
    echo "demo: kvbench failed for $name:" >&2
    cat "$root/$name.log" >&2
    exit 1
  fi
}

# The same filter memory on every side, counted in bytes at the end of the
# run (the table's last row): RocksDB's Bloom at 10 bits/key holds its SST
# filters plus a memtable Bloom (2 % of the 16 MiB memtable, ~11 bits per
# record here); adaptkv's bits_per_key is its whole budget (SST slots, the
# memtable guard, the L0 front), so 15 gives it the same bytes, with ~10
# bits/key in its SST slots; Ribbon's bits are Bloom-equivalent, and 14
# gives it the same bytes too (about 640 KB each).
run adaptkv --engine adaptkv --bits-per-key 15
run rocksdb-bloom --engine rocksdb --filter bloom --bits-per-key 10
run rocksdb-ribbon --engine rocksdb --filter ribbon --bits-per-key 14

# Wasted probes per negative lookup in the last full timeline interval:
# where adaptive filters have learned the hot negatives, static ones have not.
steady() {
  awk -F, 'NR > 1 { if ($3 - t >= 0.5) v = $7; t = $3 } END { printf "%.4f", v }' "$root/$1.timeline.csv"
}
steady_row=$(for n in adaptkv rocksdb-bloom rocksdb-ribbon; do steady "$n"; printf ' '; done)
kb_row=$(for n in adaptkv rocksdb-bloom rocksdb-ribbon; do
  grep -o '"filter_bytes": *[0-9]*' "$root/$n.json" | awk -F: '{ printf "%.0f ", $2 / 1024 }'
done)

# Side-by-side table from the CSV (one row per engine, header first).
awk -F, -v steady="$steady_row" -v kb="$kb_row" '
  NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
  { n++; for (i = 1; i <= NF; i++) v[n, i] = $i; gsub(/"/, "", v[n, 2]) }
  function row(label, name, fmt,   i) {
    printf "%-36s", label
    for (i = 1; i <= n; i++) printf " %18s", sprintf(fmt, v[i, col[name]])
    printf "\n"
  }
  END {
    printf "%-36s", "workloadn, every read a miss, steady"
    for (i = 1; i <= n; i++) printf " %18s", v[i, col["label"]]
    printf "\n"
    row("throughput (ops/s)", "throughput_ops", "%.0f")
    row("read latency p50 (us)", "read_p50_us", "%.1f")
    row("read latency p99 (us)", "read_p99_us", "%.1f")
    row("read latency p99.9 (us)", "read_p999_us", "%.1f")
    row("negative lookups", "negative_lookups", "%d")
    row("wasted probes / negative lookup", "wasted_probes_per_negative_lookup", "%.4f")
    split(steady, st, " ")
    printf "%-36s", "  ... in the last second of the run"
    for (i = 1; i <= n; i++) printf " %18s", st[i]
    printf "\n"
    row("RocksDB block reads / op", "block_reads_per_op", "%.4f")
    row("SST filter memory (bits/key)", "sst_filter_bits_per_key", "%.2f")
    row("all filter memory (bits/key)", "filter_bits_per_key", "%.2f")
    row("adaptations", "adaptations", "%d")
    split(kb, k, " ")
    printf "%-36s", "all filter memory (KB)"
    for (i = 1; i <= n; i++) printf " %18s", k[i]
    printf "\n"
  }' "$root/results.csv"

echo
echo "demo: $(($(date +%s) - start)) s; databases, logs and JSON in $root/"
