#!/usr/bin/env bash
# `make test` setup: Debian packages two self-tests need, installed where that needs nobody's permission
# (apt-get present, running as root); elsewhere those tests are skipped and say why.
#   chromium    tests/test_pictures.py looks at `make graph`'s pictures in a real browser (FX_KATAS_NO_BROWSER=1
#               skips it)
#   bubblewrap  tests/test_grade_sandbox.py grades hostile attempts in the sandbox `checker grade` uses
set -u
{ [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; } || exit 0
wanted=()
command -v bwrap >/dev/null 2>&1 || wanted+=(bubblewrap)
browser=""
for name in chromium chromium-browser google-chrome; do
    command -v "$name" >/dev/null 2>&1 && browser=$name
done
[ -z "$browser" ] && [ "${FX_KATAS_NO_BROWSER:-0}" != 1 ] && wanted+=(chromium)
[ ${#wanted[@]} = 0 ] && exit 0
echo "fx-katas: installing Debian's ${wanted[*]} for the self-tests (first run only)"
log=$(mktemp)
if timeout 300 apt-get install -y -q --no-install-recommends "${wanted[@]}" >"$log" 2>&1 \
   || { timeout 300 apt-get update -q >>"$log" 2>&1 \
        && timeout 300 apt-get install -y -q --no-install-recommends "${wanted[@]}" >>"$log" 2>&1; }; then
    rm -f "$log"
else
    echo "fx-katas: could not install ${wanted[*]} (see $log); the tests that need them will be skipped"
fi
exit 0
