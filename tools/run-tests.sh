#!/usr/bin/env bash
# Runs Criterion test binaries one after another, prints each one's synthesis
# and time, and ends with the total as "tests: N passed, N failed".
set -u
build=$1; shift
pass=0; fail=0; status=0
for t in "$@"; do
  name=$(basename "$t")
  out=$(mktemp)
  start=$SECONDS
  "$t" --jobs 2 >"$out" 2>&1
  rc=$?
  secs=$((SECONDS - start))
  syn=$(grep -a 'Synthesis:' "$out" | tail -n 1)
  p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$syn")
  f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$syn")
  c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$syn")
  p=${p:-0}; f=${f:-0}; c=${c:-0}
  if [ $rc -ne 0 ] || [ -z "$syn" ]; then
    status=1
    [ -z "$syn" ] && f=$((f + 1))
    cat "$out"
  fi
  printf '%-28s %-72s %4ds\n' "$name" "${syn:-no synthesis (exit $rc)}" "$secs"
  pass=$((pass + p)); fail=$((fail + f + c))
  rm -f "$out"
done
echo "tests: $pass passed, $fail failed"
exit $status
