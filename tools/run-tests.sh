#!/usr/bin/env bash
# Runs Criterion test binaries one after another, prints each one's synthesis
# and time, and ends with the total as "tests: N passed, N failed". A failing
# binary's whole output is printed where it ran; its failing tests' lines are
# repeated just above the total, so the end of a long log names them.
set -u
build=$1; shift
pass=0; fail=0; status=0; failed=()
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
  p=${p:-0}; f=${f:-0}  # Criterion's "Failing" counts the crashed too
  if [ $rc -ne 0 ] || [ -z "$syn" ]; then
    status=1
    [ -z "$syn" ] && f=$((f + 1))
    cat "$out"
    # A failed assertion's location, then its message (Criterion prints
    # it on the indented "[----]" lines that follow), then the test.
    mapfile -t lines < <(awk '/^\[FAIL\]/ || /^\[----\] [^ ]+:[0-9]+: / { print; m = 1; next }
                             m && /^\[----\]   / { if (NF > 1) print; next } { m = 0 }' "$out" | head -n 12)
    [ ${#lines[@]} -eq 0 ] && lines=("exit $rc, no synthesis")
    for l in "${lines[@]}"; do failed+=("$name: $l"); done
  fi
  printf '%-28s %-72s %4ds\n' "$name" "${syn:-no synthesis (exit $rc)}" "$secs"
  pass=$((pass + p)); fail=$((fail + f))
  rm -f "$out"
done
for l in "${failed[@]+"${failed[@]}"}"; do echo "failed: $l"; done
echo "tests: $pass passed, $fail failed"
exit $status
