#!/usr/bin/env bash
# format-check.sh — the format check of CI (`make format-check`, .ci/run):
# every C and C++ line changed since the baseline commit named in
# .ci/format-baseline must be as clang-format (Debian's, installed by
# tools/install-deps.sh; style in .clang-format) would write it. Lines older
# than the baseline are not checked, so the check does not demand one
# reformatting of the whole tree, which would collide with every branch in
# flight. `make format` formats exactly the lines checked here.
#
#   tools/format-check.sh          check; exit 0 clean, 1 unformatted lines
#   tools/format-check.sh --fix    format those lines in place
# Exit 2: no git history, no baseline, or no clang-format.
set -u
cd "$(dirname "$0")/.."

die() { echo "format-check: $*" >&2; exit 2; }

command -v clang-format >/dev/null && command -v git-clang-format >/dev/null ||
  die "clang-format (with git-clang-format) is missing; run tools/install-deps.sh"
[ -f .ci/format-baseline ] || die ".ci/format-baseline is missing"
base=$(grep -m1 -E '^[0-9a-f]{40}$' .ci/format-baseline) || die ".ci/format-baseline names no commit"
git rev-parse -q --verify "$base^{commit}" >/dev/null ||
  die "the baseline $base is not in this clone's history (a shallow clone? fetch more of it)"

echo "format-check: $(clang-format --version | head -n 1); lines changed since ${base:0:12}"
if [ "${1:-}" = "--fix" ]; then
  git clang-format --extensions c,h,cc "$base" -- . || exit 1
  exit 0
fi
out=$(git clang-format --diff --extensions c,h,cc "$base" -- . 2>&1)
rc=$?
case "$out" in
  "no modified files to format" | "clang-format did not modify any files" | "")
    [ "$rc" -eq 0 ] && { echo "format-check: clean"; exit 0; } ;;
esac
printf '%s\n' "$out"
echo "format-check: the lines above are not formatted; 'make format' formats them" >&2
exit 1
