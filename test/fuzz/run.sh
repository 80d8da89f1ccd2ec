#!/usr/bin/env bash
# test/fuzz/run.sh — build and run the libFuzzer targets (docs/reliability.md,
# "Fuzzing"). `make fuzz SECONDS=N` runs `run.sh run N`.
#
#   run.sh build                     build every target into build/fuzz/
#   run.sh run SECS [TARGET...]      build, then run each target (default: all)
#                                    for SECS seconds, one after another
#   run.sh replay TARGET FILE...     run inputs once through a target (a crash)
#   run.sh seeds                     regenerate the seed corpora (normal build)
#
# Targets are test/fuzz/fuzz_NAME.c; NAME's seeds are test/fuzz/NAME/ (with
# regressions/ under it). New corpus entries go to build/fuzz/corpus/NAME,
# crashes to build/fuzz/artifacts/NAME/, logs to build/fuzz/logs/. One
# fuzzer process at a time, at nice 10. The library is compiled with clang,
# libFuzzer coverage, AddressSanitizer and UBSan (aborting on the first
# report), separately from the normal build; its C++ files
# (engine/*.cc) with the matching clang++, never the default c++
# (g++ knows no -fsanitize=fuzzer-no-link). Environment: FUZZ_CC (clang),
# FUZZ_CXX (clang++, or the clang++ named like FUZZ_CC: clang-14 ->
# clang++-14), FUZZ_BUILD (build/fuzz), FUZZ_FLAGS (extra libFuzzer flags).
set -eu
cd "$(dirname "$0")/../.."
cc=${FUZZ_CC:-clang}
cxx=${FUZZ_CXX:-${cc/clang/clang++}}
[[ $cxx != "$cc" ]] || cxx=clang++
for tool in "$cc" "$cxx"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "run.sh: $tool not found: the fuzz targets need clang and clang++ with libFuzzer" \
             "(Debian: apt-get install clang), or FUZZ_CC and FUZZ_CXX naming them" >&2
        exit 2
    fi
done
out=${FUZZ_BUILD:-build/fuzz}
make=${MAKE:-make}
san=address,undefined
cflags=(-std=c17 -g -O1 -Wall -Wextra -Werror -D_GNU_SOURCE -pthread -I. -Iinclude
        -fno-omit-frame-pointer -fno-sanitize-recover=all)
libs=(-lrocksdb -lxxhash -lzstd -lm -pthread)

all_targets() { for f in test/fuzz/fuzz_*.c; do n=${f##*/fuzz_}; echo "${n%.c}"; done; }

build() {
    local jobs=()
    [[ ${MAKEFLAGS:-} == *j* ]] || jobs=(-j2)
    "$make" --no-print-directory "${jobs[@]}" BUILD="$out" CC="$cc" CXX="$cxx" SAN="fuzzer-no-link,$san" \
        OPT="-O1 -fno-sanitize-recover=all" "$out/libadaptkv.a"
    for t in $(all_targets); do
        local src=test/fuzz/fuzz_$t.c bin=$out/fuzz_$t
        if [[ ! -x $bin || $src -nt $bin || $out/libadaptkv.a -nt $bin || test/fuzz/fuzz.h -nt $bin ]] ||
           grep -q '#include "tools/' "$src"; then
            echo "  CC $bin"
            "$cc" "${cflags[@]}" -fsanitize=fuzzer,$san -o "$bin" "$src" "$out/libadaptkv.a" "${libs[@]}"
        fi
    done
}

run() {
    local secs=$1; shift
    local targets=("$@")
    [[ ${#targets[@]} -gt 0 ]] || mapfile -t targets < <(all_targets)
    build
    mkdir -p "$out/logs"
    local status=0
    for t in "${targets[@]}"; do
        mkdir -p "$out/corpus/$t" "$out/artifacts/$t"
        local log=$out/logs/$t.log
        echo "fuzz_$t: ${secs}s (log $log)"
        set +e
        nice -n 10 "$out/fuzz_$t" "$out/corpus/$t" "test/fuzz/$t" -max_total_time="$secs" -timeout=10 \
            -rss_limit_mb=2048 -malloc_limit_mb=512 -max_len=4096 -print_final_stats=1 \
            -artifact_prefix="$out/artifacts/$t/" ${FUZZ_FLAGS:-} >"$log" 2>&1
        local rc=$?
        set -e
        local execs time
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        time=$(grep -ao 'Done [0-9]* runs in [0-9]* second' "$log" | tail -n 1)
        if [[ $rc -ne 0 ]]; then
            status=1
            echo "  FAILED (exit $rc): $(grep -a -m1 -E 'ERROR|property failed|runtime error' "$log")"
            echo "  input: $(ls -t "$out/artifacts/$t" | head -n 1)"
        else
            echo "  ok: ${execs:-?} executions (${time:-?})"
        fi
        echo "$(date -u +%FT%TZ) fuzz_$t secs=$secs rc=$rc execs=${execs:-?}" >>"$out/logs/history"
    done
    return $status
}

case ${1:-} in
build) build ;;
run) shift; [[ $# -ge 1 ]] || { echo "usage: $0 run SECONDS [TARGET...]" >&2; exit 2; }; run "$@" ;;
replay)
    shift; t=$1; shift
    build
    "$out/fuzz_$t" -runs=1 "$@"
    ;;
seeds)
    "$make" --no-print-directory -j2 lib
    cc -std=c17 -O1 -g -D_GNU_SOURCE -pthread -I. -Iinclude -o build/gen_seeds test/fuzz/gen_seeds.c \
        build/libadaptkv.a "${libs[@]}"
    build/gen_seeds test/fuzz
    ;;
*) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
