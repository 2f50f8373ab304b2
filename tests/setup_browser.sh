#!/usr/bin/env bash
# `make test` setup for tests/test_pictures.py, which looks at `make graph`'s pictures in a real browser:
# installs Debian's chromium where that needs nobody's permission (apt-get present, running as root).
# Elsewhere that test is skipped and says why. FX_KATAS_NO_BROWSER=1 skips the installation.
set -u
for name in chromium chromium-browser google-chrome; do
    command -v "$name" >/dev/null 2>&1 && exit 0
done
[ "${FX_KATAS_NO_BROWSER:-0}" = 1 ] && exit 0
{ [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; } || exit 0
echo "fx-katas: installing Debian's chromium for the picture test (first run only)"
log=$(mktemp)
if timeout 300 apt-get install -y -q --no-install-recommends chromium >"$log" 2>&1 \
   || { timeout 300 apt-get update -q >>"$log" 2>&1 && timeout 300 apt-get install -y -q --no-install-recommends chromium >>"$log" 2>&1; }; then
    rm -f "$log"
else
    echo "fx-katas: could not install chromium (see $log); the browser test will be skipped"
fi
exit 0
