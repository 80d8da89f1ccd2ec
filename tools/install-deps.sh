#!/usr/bin/env bash
# Installs the Debian packages adaptkv needs to build, test and plot.
# Silent when everything is present; installs only what is missing, with one
# `apt-get update` when needed. Exits non-zero with a clear message when it cannot.
set -u

# build-essential brings gcc, g++ (test/cxx/smoke.cpp) and make; binutils
# (objdump, readelf) is listed for test_install's checks of the shared library;
# cppcheck (`make lint`) and clang-format with git-clang-format (`make
# format-check`, whose output depends on the clang-format version: Debian's
# is the reference) are the CI's checks.
PKGS=(build-essential binutils pkg-config librocksdb-dev libxxhash-dev libzstd-dev
      libcriterion-dev libedit-dev gnuplot-nox cppcheck clang-format)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    SUDO=(sudo -n)
  else
    echo "install-deps: missing packages (${missing[*]}) and not root;" \
         "run 'sudo tools/install-deps.sh' once" >&2
    exit 1
  fi
else
  SUDO=()
fi

export DEBIAN_FRONTEND=noninteractive
if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/akv-apt.log 2>&1; then
  if ! "${SUDO[@]}" apt-get update -q >>/tmp/akv-apt.log 2>&1; then
    echo "install-deps: apt-get update failed (no network?); see /tmp/akv-apt.log" >&2
    exit 1
  fi
  if ! "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/akv-apt.log 2>&1; then
    echo "install-deps: apt-get install ${missing[*]} failed; see /tmp/akv-apt.log" >&2
    exit 1
  fi
fi
exit 0
