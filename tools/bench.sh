#!/usr/bin/env bash
# make bench: the full kvbench matrix, written up as docs/benchmarks.md with
# PNG plots in docs/plots/.
#
#   tools/bench.sh BUILD_DIR [kvbench args ...]
#
# Workloads A-F (YCSB), N (negative-heavy) and X (adversarial), each on
#   adaptkv: slot policies default, all-blocked and l1+=habf, layouts hash and
#            ordered (E needs ordered: hash is recorded as "not supported"),
#   RocksDB: its full Bloom filter and its Ribbon filter at the same bits/key,
# all with direct reads and a block cache much smaller than the data.
# Each configuration loads recordcount records (1M x 1 KB by default) once,
# into a pristine database; every cell of that configuration runs on a copy
# of it (a load per cell would take hours at this size), for at most
# BENCH_SECONDS seconds. The pristine database is deleted once its cells are
# done, so the work directory holds two databases at a time (~1-2 GB each).
# Every cell measures the steady state: each pristine database is settled
# once after its load (a one-read run with --settle, so that no flush or
# compaction is due or running when it closes: RocksDB's close would cancel
# them), and every cell runs with --settle too. Right after its load, before
# that, workloadn runs once per engine as a separate row ("right after a
# load"). Both engines hold the same filter memory per key
# (--equal-filter-memory: adaptkv's bits_per_key covers RocksDB's memtable
# Bloom filter too).
# Then the second size, 10M x 100 B (BENCH_10M_RECORDS; 0 skips it):
# adaptkv-hash and rocksdb-bloom only, fresh absent keys, workloadn with
# every read absent and workloadc, settled, BENCH_SECONDS each (about 10 min
# more, most of it the two loads).
# Extra arguments go to every kvbench run (later -p override earlier ones),
# e.g. `tools/bench.sh build -p recordcount=50000`. BENCH_RECORDS, BENCH_OPS,
# BENCH_SECONDS, BENCH_THREADS, BENCH_SETTLE (the longest wait, seconds) and
# BENCH_WORKLOADS ("a c n") change the defaults.
set -eu
build=${1:-build}
shift || true
[ -x "$build/kvbench" ] || { echo "bench: $build/kvbench is missing; run 'make' first" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "bench: gnuplot is missing (tools/install-deps.sh)" >&2; exit 1; }

records=${BENCH_RECORDS:-1000000}
ops=${BENCH_OPS:-1000000}
secs=${BENCH_SECONDS:-15}
threads=${BENCH_THREADS:-2}
read -r -a workloads <<<"${BENCH_WORKLOADS:-a b c d e f n x}"
work=${BENCH_DIR:-$build/bench}
docs=docs
plots=$docs/plots
settle=${BENCH_SETTLE:-900}
records10m=${BENCH_10M_RECORDS:-10000000}
settings=(-p recordcount="$records" -p operationcount="$ops" -p maxexecutiontime="$secs"
          --threads "$threads" --cache-mb 8 --memtable-mb 16 --direct-reads --bits-per-key 10
          --equal-filter-memory)
# Fresh absent keys: every read asks for a key never asked before.
fresh=(-p negativeproportion=1.0 -p negativedistribution=uniform -p negativekeycount=1000000000)
extra=("$@")

configs=(
  "adaptkv-hash|--engine adaptkv --layout hash"
  "adaptkv-ordered|--engine adaptkv --layout ordered"
  "blocked-hash|--engine adaptkv --layout hash --policy mem=sscf,l0=blocked,l1+=blocked"
  "blocked-ordered|--engine adaptkv --layout ordered --policy mem=sscf,l0=blocked,l1+=blocked"
  "habf-hash|--engine adaptkv --layout hash --policy mem=sscf,l0=aqf,l1+=habf"
  "habf-ordered|--engine adaptkv --layout ordered --policy mem=sscf,l0=aqf,l1+=habf"
  "rocksdb-bloom|--engine rocksdb --filter bloom"
  "rocksdb-ribbon|--engine rocksdb --filter ribbon"
)

rm -rf "$work"
mkdir -p "$work/runs" "$plots"
# Run a private copy: a rebuild of the tree during the bench must not swap
# the binary (or the engine linked into it) between cells.
kvbench="$work/kvbench"
cp "$build/kvbench" "$kvbench"
results=$work/results.csv
: >"$results"
start=$(date +%s)
total=$((${#workloads[@]} * ${#configs[@]}))
n=0

# The pristine database of a configuration: workloada's load (every
# workload here writes the same 10 x 100-byte records). 0 when it loaded.
load_one() { # cfgname cfgargs
  local name=$1 args=$2 rc=0
  rm -rf "$work/pristine-$name"
  printf 'bench: load %-16s ' "$name" >&2
  # shellcheck disable=SC2086
  "$kvbench" -P workloads/workloada --phase load "${settings[@]}" $args "${extra[@]}" --quiet \
    --db "$work/pristine-$name" --json "$work/runs/$name-load.json" >"$work/runs/$name-load.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    printf 'FAILED (exit %s; see %s)\n' "$rc" "$work/runs/$name-load.log" >&2
    return 1
  fi
  awk -F: '/"throughput_ops"/ { sub(/,.*/, "", $2); printf "%.0f inserts/s\n", $2; exit }' \
    <(tr ',' '\n' <"$work/runs/$name-load.json") >&2
}

# Settle a pristine database: a run of one read that first waits until no
# flush or compaction is due or running, so that the database closes in
# steady state and its copies open in it.
settle_one() { # cfgname cfgargs
  local name=$1 args=$2 rc=0
  [ -d "$work/pristine-$name" ] || return 1
  # shellcheck disable=SC2086
  "$kvbench" -P workloads/workloadc --phase run "${settings[@]}" $args "${extra[@]}" -p operationcount=1 \
    --settle "$settle" --quiet --db "$work/pristine-$name" --json "$work/runs/$name-settle.json" \
    >"$work/runs/$name-settle.log" 2>&1 || rc=$?
  [ $rc -eq 0 ] || printf 'bench: settling %s FAILED (exit %s; see %s)\n' "$name" "$rc" "$work/runs/$name-settle.log" >&2
  grep -h 'settled after\|not settled' "$work/runs/$name-settle.log" | sed 's/^kvbench/bench: '"$name"'/' >&2 || true
}

# One cell: the run phase on a copy of the configuration's pristine
# database, settled first (RUN_STATE=asfound: not). Appends
# "config,<kvbench csv row>". wl "fresh": workloadn, every read a key never
# asked before.
run_one() { # wl cfgname cfgargs [pristine-name]
  local wl=$1 name=$2 args=$3 src=${4:-$2} tag="$2-workload$1" rc=0
  local -a tl=() wlargs=(-P "workloads/workload$wl") st=(--settle "$settle")
  [ "$wl" = fresh ] && wlargs=(-P workloads/workloadn "${fresh[@]}")
  [ "${RUN_STATE:-}" = asfound ] && st=()
  [ "$wl" = n ] || [ "$wl" = x ] && tl=(--timeline "$work/runs/$tag.timeline.csv" --interval 500)
  rm -rf "$work/db-$tag"
  if [ ! -d "$work/pristine-$src" ]; then
    rc=1
  else
    cp -a "$work/pristine-$src" "$work/db-$tag"
    # The copy on the disk before the clock starts: its dirty pages would
    # otherwise be written back ~30 s later, during the run, behind one
    # engine's reads and not the other's (docs/benchmarks.md, 2026-12-07).
    sync
    # shellcheck disable=SC2086
    "$kvbench" "${wlargs[@]}" --phase run "${settings[@]}" $args "${tl[@]}" "${st[@]}" "${extra[@]}" --quiet \
      --db "$work/db-$tag" --csv "$work/runs/$tag.csv" --json "$work/runs/$tag.json" \
      >"$work/runs/$tag.log" 2>&1 || rc=$?
  fi
  rm -rf "$work/db-$tag"
  if [ $rc -eq 3 ]; then
    echo "$name,skipped,workload$wl" >>"$results"
    printf 'not supported (needs --layout ordered)\n' >&2
  elif [ $rc -ne 0 ] || [ ! -s "$work/runs/$tag.csv" ]; then
    echo "$name,failed,workload$wl" >>"$results"
    printf 'FAILED (exit %s; see %s)\n' "$rc" "$work/runs/$tag.log" >&2
  else
    tail -n 1 "$work/runs/$tag.csv" | sed "s/^/$name,/" >>"$results"
    awk -F, '{ printf "%.0f ops/s\n", $8 }' <(tail -n 1 "$work/runs/$tag.csv") >&2
  fi
}

cfg_args() { printf '%s\n' "${configs[@]}" | sed -n "s/^$1|//p"; }

for c in "${configs[@]}"; do
  name=${c%%|*}
  load_one "$name" "${c#*|}" || true
  case $name in adaptkv-hash | rocksdb-bloom)
    printf 'bench: [right after a load] workloadn %-16s ' "$name" >&2
    RUN_STATE=asfound run_one n "asfound-$name" "${c#*|}" "$name" ;;
  esac
  settle_one "$name" "${c#*|}" || true
  for wl in "${workloads[@]}"; do
    n=$((n + 1))
    printf 'bench: [%2d/%d] workload%s %-16s ' "$n" "$total" "$wl" "$name" >&2
    run_one "$wl" "$name" "${c#*|}"
  done
  # workloadc decides whether adaptkv's positive path is as fast as
  # RocksDB's; single cells are noisy on shared disks, so that pair runs
  # three more times, alternating, and the median ratio is reported. Both
  # pristine databases are kept until then.
  case $name in adaptkv-hash | rocksdb-bloom) ;; *) rm -rf "$work/pristine-$name" ;; esac
done
for i in 1 2 3; do
  for c in adaptkv-hash rocksdb-bloom; do
    printf 'bench: [repeat %d] workloadc %-16s ' "$i" "$c" >&2
    run_one c "rep$i-$c" "$(cfg_args "$c")" "$c"
  done
done
rm -rf "$work"/pristine-*

# ---- the second size: 10M x 100 B ---------------------------------------------------------
# adaptkv-hash and rocksdb-bloom, absent-key rows and workloadc, steady state.
if [ "$records10m" -gt 0 ]; then
  size10m=(-p recordcount="$records10m" -p fieldcount=1 -p fieldlength=100)
  for c in adaptkv-hash rocksdb-bloom; do
    a="$(cfg_args "$c") ${size10m[*]}"
    load_one "10m-$c" "$a" || true
    settle_one "10m-$c" "$a" || true
    for wl in fresh n c; do
      printf 'bench: [10M x 100 B] workload%s %-16s ' "$wl" "$c" >&2
      if [ "$wl" = n ]; then
        run_one n "10m-$c" "$a -p negativeproportion=1.0"
      else
        run_one "$wl" "10m-$c" "$a"
      fi
    done
    rm -rf "$work/pristine-10m-$c"
  done
fi
header=""
for f in "$work"/runs/*.csv; do
  case $f in *timeline*) continue ;; esac
  header=$(head -n 1 "$f")
  break
done
elapsed=$(($(date +%s) - start))

# ---- tables (awk over results.csv) ------------------------------------------------
names=$(printf '%s\n' "${configs[@]}" | cut -d'|' -f1 | tr '\n' ' ')

# table METRIC FORMAT [markdown|dat]: rows = workloads, columns = configurations.
table() {
  awk -F, -v hdr="config,$header" -v metric="$1" -v fmt="$2" -v mode="${3:-markdown}" \
      -v names="$names" -v wls="${workloads[*]}" '
    BEGIN {
      nh = split(hdr, h, ","); for (i = 1; i <= nh; i++) col[h[i]] = i
      nc = split(names, cn, " "); nw = split(wls, wn, " ")
    }
    { key = $1 SUBSEP ($2 == "skipped" || $2 == "failed" ? $3 : $4)
      if ($2 == "skipped") val[key] = "n/s"; else if ($2 == "failed") val[key] = "failed"
      else {
        m = metric
        if (m == "p99") m = ($4 == "workloade") ? "scan_p99_us" : "read_p99_us"
        val[key] = sprintf(fmt, $(col[m]))
      }
    }
    END {
      if (mode == "markdown") {
        printf "| workload |"; for (c = 1; c <= nc; c++) printf " %s |", cn[c]; printf "\n"
        printf "|---|"; for (c = 1; c <= nc; c++) printf "---:|"; printf "\n"
      } else {
        printf "workload"; for (c = 1; c <= nc; c++) printf " %s", cn[c]; printf "\n"
      }
      for (w = 1; w <= nw; w++) {
        printf (mode == "markdown" ? "| %s |" : "%s"), wn[w]
        for (c = 1; c <= nc; c++) {
          v = val[cn[c], "workload" wn[w]]
          if (mode != "markdown" && (v == "" || v == "n/s" || v == "failed")) v = "-"
          printf (mode == "markdown" ? " %s |" : " %s"), (v == "" ? "-" : v)
        }
        printf "\n"
      }
    }' "$results"
}

# ---- plots ------------------------------------------------------------------------------
bars() { # metric fmt png title ylabel logy
  table "$1" "$2" dat >"$work/$3.dat"
  gnuplot -e "data='$work/$3.dat'; out='$plots/$3.png'; title='$4'; ylabel='$5'; logy=$6" tools/plot/bars.gp
}
bars throughput_ops "%.0f" throughput "Throughput per workload" "operations per second" 0
bars p99 "%.1f" p99 "p99 latency of the main operation (read; scan for E)" "microseconds" 1

timeline_plot() { # wl col png title ylabel
  local files="" titles=""
  for c in "${configs[@]}"; do
    local f="$work/runs/${c%%|*}-workload$1.timeline.csv"
    [ -s "$f" ] && files+="$f " && titles+="${c%%|*} "
  done
  [ -n "$files" ] && gnuplot -e "files='$files'; titles='$titles'; col=$2; out='$plots/$3.png'; \
    title='$4'; ylabel='$5'" tools/plot/timeline.gp
}
for wl in "${workloads[@]}"; do
  [ "$wl" = n ] && timeline_plot n 7 wasted-workloadn \
    "workloadn: wasted probes per negative lookup, per 0.5 s interval" "wasted probes / negative lookup"
  [ "$wl" = x ] && timeline_plot x 11 wasted-workloadx \
    "workloadx: wasted probes per attacker read, per 0.5 s interval" "wasted probes / attacker read"
done

# ---- docs/benchmarks.md -------------------------------------------------------------------
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
mem=$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
rocks=$(dpkg-query -W -f='${Version}' librocksdb-dev 2>/dev/null || echo unknown)
ratio() { # workload config-a config-b: throughput ratio a/b
  awk -F, -v w="workload$1" -v a="$2" -v b="$3" '$4 == w && $1 == a { x = $9 } $4 == w && $1 == b { y = $9 }
    END { if (x > 0 && y > 0) printf "%.2f", x / y; else printf "n/a" }' "$results"
}

# Median over the repeats of adaptkv-hash / rocksdb-bloom on workloadc.
repeat_ratios=$(awk -F, '$1 ~ /^rep[0-9]-/ && $4 == "workloadc" {
    split($1, p, "-"); if ($1 ~ /adaptkv/) a[p[1]] = $9; else r[p[1]] = $9 }
  END { for (k in a) if (r[k] > 0) printf "%.2f\n", a[k] / r[k] }' "$results" | sort -n | tr '\n' ' ')
repeat_median=$(tr ' ' '\n' <<<"$repeat_ratios" | awk 'NF { v[++n] = $1 } END { if (n) print v[int((n + 1) / 2)]; else print "n/a" }')

# jnum TAG KEY: a number from runs/TAG.json ("-" when missing).
jnum() {
  local f="$work/runs/$1.json" x
  x=$(grep -o "\"$2\":[^,}]*" "$f" 2>/dev/null | head -n 1 | cut -d: -f2)
  echo "${x:--}"
}
jratio() { # TAG-A TAG-B KEY
  awk -v a="$(jnum "$1" "$3")" -v b="$(jnum "$2" "$3")" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "n/a" }'
}
# state_table TAG...: one row per cell: the state it measured and its figures.
state_table() {
  echo "| cell | state | settle s | L0 files at start | ops/s | wasted probes/neg | filters/neg | filter bits/key |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|"
  for t in "$@"; do
    [ -s "$work/runs/$t.json" ] || continue
    st=$(grep -o '"state":"[^"]*"' "$work/runs/$t.json" | cut -d'"' -f4)
    printf '| %s | %s | %s | %s | %.0f | %.4f | %.3f | %.2f |\n' "$t" "$st" "$(jnum "$t" settle_seconds)" \
      "$(jnum "$t" start_l0_files)" "$(jnum "$t" throughput_ops)" "$(jnum "$t" wasted_probes_per_negative_lookup)" \
      "$(jnum "$t" filters_per_negative_lookup)" "$(jnum "$t" filter_bits_per_key)"
  done
}

{
  echo "## Matrix (\`make bench\`)"
  echo
  echo "Generated by \`make bench\` (tools/bench.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'); the whole matrix took"
  echo "$((elapsed / 60)) min $((elapsed % 60)) s. Numbers from one run on one machine: compare columns"
  echo "within a table (same machine, same run), not with other machines."
  echo
  echo "### Machine"
  echo
  echo "- CPUs (\`nproc\`): $(nproc)"
  echo "- CPU model: ${cpu:-unknown}"
  echo "- memory: $mem"
  echo "- kernel: $(uname -sr); RocksDB (librocksdb-dev): $rocks"
  echo
  echo "### Setup"
  echo
  echo "Each configuration loads \`recordcount\` records (YCSB's 10 fields × 100 bytes) once, into a pristine"
  echo "database; every cell runs on a copy of it, for at most $secs s or \`operationcount\` operations, with"
  echo "$threads client threads. Both engines"
  echo "get the same settings: direct reads (no page cache), an 8 MiB block cache (the data is"
  echo "~$((records / 1000)) MB), a 16 MiB memtable and 10 filter bits per key. RocksDB runs its default leveled LSM with"
  echo "its full Bloom filter (\`rocksdb_filterpolicy_create_bloom_full(10)\`) or its Ribbon filter"
  echo "(\`rocksdb_filterpolicy_create_ribbon(10)\`: Bloom-equivalent 10 bits/key, so it spends ~7 bits/key for"
  echo "the same false-positive rate), and with its memtable Bloom filter on (kvbench's default"
  echo "\`--rocksdb-memtable-bloom 0.02\`, counted in its filter memory), as a RocksDB user tunes it for point"
  echo "lookups."
  echo
  echo "| column | engine | slot policy / filter | layout |"
  echo "|---|---|---|---|"
  for c in "${configs[@]}"; do
    a=${c#*|}
    eng=$(sed -n 's/.*--engine \([a-z]*\).*/\1/p' <<<"$a")
    pol=$(sed -n 's/.*--policy \([^ ]*\).*/\1/p' <<<"$a")
    fil=$(sed -n 's/.*--filter \([a-z]*\).*/\1/p' <<<"$a")
    lay=$(sed -n 's/.*--layout \([a-z]*\).*/\1/p' <<<"$a")
    # kvbench reports the policy in effect; show that for the default.
    eff=$(grep -h -o '"slot_policy_in_effect":"[^"]*"' "$work/runs/${c%%|*}-load.json" 2>/dev/null | head -n 1 | cut -d'"' -f4)
    if [ "$eng" = rocksdb ]; then d="RocksDB $fil"; else d=${pol:-default${eff:+: $eff}}; fi
    echo "| ${c%%|*} | $eng | \`$d\` | ${lay:--} |"
  done
  echo
  echo "Commands (one per cell; \`W\` = a b c d e f n x, CONFIG = the column's options above):"
  echo
  echo '```'
  echo "make bench        # = tools/bench.sh build"
  echo "build/kvbench -P workloads/workloadW ${settings[*]} CONFIG ${extra[*]} \\"
  echo "    --settle $settle --db DIR --csv FILE --json FILE [--timeline FILE --interval 500   # N and X]"
  echo "# right after a load: the same for workloadn, without --settle"
  echo "# 10M x 100 B: the same with -p recordcount=$records10m -p fieldcount=1 -p fieldlength=100"
  echo '```'
  echo
  echo "\"n/s\": not supported — workload E scans, and the hash layout keeps data in hash order"
  echo "(kvbench stops with exit status 3 and says to use \`--layout ordered\`)."
  echo
  echo "### Headline ratios (throughput, same run)"
  echo
  echo "- workloadc (all reads hit): adaptkv-hash / rocksdb-bloom = **$(ratio c adaptkv-hash rocksdb-bloom)**,"
  echo "  adaptkv-ordered / rocksdb-bloom = **$(ratio c adaptkv-ordered rocksdb-bloom)**,"
  echo "  adaptkv-hash / rocksdb-ribbon = **$(ratio c adaptkv-hash rocksdb-ribbon)**; three more alternating"
  echo "  adaptkv-hash / rocksdb-bloom pairs: ${repeat_ratios:-n/a}(median **$repeat_median**)"
  echo "- workloadn (negative-heavy): adaptkv-hash / rocksdb-bloom = **$(ratio n adaptkv-hash rocksdb-bloom)**"
  echo "- workloadx (adversarial): adaptkv-hash / rocksdb-bloom = **$(ratio x adaptkv-hash rocksdb-bloom)**"
  echo "- workloadn **right after a load** (not settled; a separate row, below): adaptkv-hash / rocksdb-bloom ="
  echo "  **$(jratio asfound-adaptkv-hash-workloadn asfound-rocksdb-bloom-workloadn throughput_ops)**"
  echo
  echo "Every cell but the \"right after a load\" rows runs in steady state: the pristine database was settled"
  echo "after its load, and each cell waited again (\`--settle $settle\`; docs/kvbench.md, \"Steady state\")."
  echo "Filter memory is matched (\`--equal-filter-memory\`: adaptkv's bits per key also cover RocksDB's"
  echo "memtable Bloom filter); both totals are in \"Filter memory\" below."
  echo
  echo "### Right after a load, and steady state: workloadn"
  echo
  state_table asfound-adaptkv-hash-workloadn asfound-rocksdb-bloom-workloadn adaptkv-hash-workloadn rocksdb-bloom-workloadn
  echo
  echo "### Throughput (operations per second)"
  echo
  table throughput_ops "%.0f"
  echo
  echo "![throughput](plots/throughput.png)"
  echo
  echo "### Wasted probes per negative lookup"
  echo
  echo "A probe is a read of one SST (or memtable) whose filter said \"maybe\"; for a key that does not exist"
  echo "every probe is wasted. RocksDB's figure is its perf context's \`bloom_sst_hit_count\`."
  echo
  table wasted_probes_per_negative_lookup "%.4f"
  echo
  echo "Wasted probes per attacker read (workload X only):"
  echo
  table adversary_wasted_probes_per_read "%.4f" | awk 'NR <= 2 || /workload|\| x \|/'
  echo
  echo "![wasted probes over time, workload N](plots/wasted-workloadn.png)"
  echo
  echo "![wasted probes over time, workload X](plots/wasted-workloadx.png)"
  echo
  echo "### RocksDB block reads per operation (perf context \`block_read_count\`)"
  echo
  table block_reads_per_op "%.4f"
  echo
  echo "### p99 latency of the main operation (µs; read, scan for E)"
  echo
  table p99 "%.1f"
  echo
  echo "![p99 latency](plots/p99.png)"
  echo
  echo "### Filter memory (bits per key)"
  echo
  echo "SST filters only (what RocksDB's figure measures: filter block bytes × 8 / entries):"
  echo
  table sst_filter_bits_per_key "%.2f"
  echo
  echo "All filter memory, memtable filters included (adaptkv's memtable guard, RocksDB's memtable Bloom):"
  echo
  table filter_bits_per_key "%.2f"
  echo
  echo "### Adaptations during the run phase"
  echo
  table adaptations "%d"
  echo
  if [ "$records10m" -gt 0 ]; then
    echo "### $((records10m / 1000000))M × 100 B records (steady state)"
    echo
    echo "The second size: \`-p recordcount=$records10m -p fieldcount=1 -p fieldlength=100\`, adaptkv-hash and"
    echo "rocksdb-bloom only, the settings above (equal filter memory), each cell settled; \"fresh\" is workloadn"
    echo "with every read a key never asked before (\`${fresh[*]}\`), \"n\" workloadn with every read absent"
    echo "(zipfian), \"c\" workloadc."
    echo
    echo "| workload | adaptkv / RocksDB ops/s | wasted probes/neg, adaptkv / RocksDB | filters/neg, adaptkv / RocksDB | filter bits/key, adaptkv / RocksDB |"
    echo "|---|---:|---|---|---|"
    for wl in fresh n c; do
      a="10m-adaptkv-hash-workload$wl" r="10m-rocksdb-bloom-workload$wl"
      echo "| $wl | $(jratio "$a" "$r" throughput_ops) | $(jnum "$a" wasted_probes_per_negative_lookup) / $(jnum "$r" wasted_probes_per_negative_lookup) | $(jnum "$a" filters_per_negative_lookup) / $(jnum "$r" filters_per_negative_lookup) | $(jnum "$a" filter_bits_per_key) / $(jnum "$r" filter_bits_per_key) |"
    done
    echo
    echo "Loads: adaptkv $(jnum 10m-adaptkv-hash-load throughput_ops) inserts/s, RocksDB $(jnum 10m-rocksdb-bloom-load throughput_ops)."
    echo
    state_table 10m-adaptkv-hash-workloadfresh 10m-rocksdb-bloom-workloadfresh 10m-adaptkv-hash-workloadn \
      10m-rocksdb-bloom-workloadn 10m-adaptkv-hash-workloadc 10m-rocksdb-bloom-workloadc
    echo
  fi
  cat tools/bench-reading.md
  echo
  echo "Raw results: one CSV row per cell in \`$work/results.csv\` (not committed); JSON and logs in \`$work/runs/\`."
} >"$work/matrix.md"

# docs/benchmarks.md keeps what is above its "## Matrix" heading (the 1M
# comparison written from tools/bench-1m.sh); the matrix replaces the rest.
if [ -f "$docs/benchmarks.md" ]; then
  sed '/^## Matrix/,$d' "$docs/benchmarks.md" >"$work/head.md"
else
  printf '# Benchmarks\n\n' >"$work/head.md"
fi
cat "$work/head.md" "$work/matrix.md" >"$docs/benchmarks.md"

echo "bench: done in ${elapsed}s; wrote the matrix into $docs/benchmarks.md and $plots/*.png" >&2
