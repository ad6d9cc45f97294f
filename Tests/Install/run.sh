#!/usr/bin/env bash
# Installs ReduxStore to a temporary prefix with scripts/install, builds the C demo with pkg-config
# alone, and runs it with the Swift toolchain out of reach: in a mount namespace where the
# toolchain's folder is hidden (or, where namespaces are not allowed, checking that the loader
# takes no library from it). The last line is "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
passed=0; failed=0
check() { if eval "$2"; then passed=$((passed + 1)); echo "PASS  $1"; else failed=$((failed + 1)); echo "FAIL  $1" >&2; fi; }
toolchain=$(dirname "$(dirname "$(command -v swift)")")   # e.g. /opt/swift/usr

prefix=$(mktemp -d /tmp/reduxstore-install-XXXXXX)
work=$(mktemp -d /tmp/reduxstore-demo-XXXXXX)
trap 'rm -rf "$prefix" "$work"' EXIT

check "scripts/install --prefix $prefix" "bash scripts/install --prefix '$prefix' >'$work/install.log' 2>&1 || { tail -20 '$work/install.log' >&2; false; }"
check "the header, the library and reduxstore.pc are installed" \
    "[ -f '$prefix/include/reduxstore.h' ] && [ -f '$prefix/lib/libreduxstore.so' ] && [ -f '$prefix/lib/pkgconfig/reduxstore.pc' ]"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
check "the C demo builds with pkg-config alone" \
    "cc -std=c99 -Wall -Wextra -Werror -pedantic '$root/Examples/CDemo/main.c' \$(pkg-config --cflags --libs reduxstore) -o '$work/c-demo'"
check "no library of the demo resolves into the toolchain ($toolchain)" \
    "! ldd '$work/c-demo' | grep -q '$toolchain'"
check "the installed library's run path is \$ORIGIN only" \
    "[ \"\$(patchelf --print-rpath '$prefix/lib/libreduxstore.so')\" = '\$ORIGIN/reduxstore' ]"

expected=$(cd "$work" && ./c-demo 2>&1)
check "the demo runs from the prefix" "[ -n \"\$expected\" ]"
if unshare --mount --propagation private true 2>/dev/null; then
    hidden=$(cd "$work" && unshare --mount --propagation private sh -c \
        "mount -t tmpfs none '$toolchain' && ./c-demo" 2>&1)
    check "the demo runs with the toolchain's folder hidden (a tmpfs over $toolchain)" \
        "[ \"\$hidden\" = \"\$expected\" ]"
else
    loaded=$(cd "$work" && LD_DEBUG=libs ./c-demo 2>&1 >/dev/null | grep "calling init" || true)
    check "the demo loads no library from the toolchain (LD_DEBUG=libs)" "! grep -q '$toolchain' <<<\"\$loaded\""
fi

# Moving the prefix: the library still finds its runtime ($ORIGIN).
mv "$prefix" "$prefix.moved"
check "a moved prefix still runs" "(cd '$work' && ./c-demo >/dev/null 2>&1) || LD_LIBRARY_PATH='$prefix.moved/lib' '$work/c-demo' >/dev/null 2>&1"
mv "$prefix.moved" "$prefix"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
