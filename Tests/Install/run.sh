#!/usr/bin/env bash
# The install for C programs, checked as a C programmer on a machine without Swift would meet it:
#
#   bash Tests/Install/run.sh
#
# installs ReduxStore with scripts/install into a temporary prefix; checks the files, the
# pkg-config files, what the libraries need (no Swift library, no run path into the toolchain;
# the inspector's and replication's need libreduxstore.so.0), their versioned names and sonames, and what they export (exactly their headers' rdx_
# functions); builds Examples/CDemo/main.c and Examples/CInspectorDemo/main.c with
# `cc $(pkg-config --cflags --libs reduxstore)` alone; runs it in a mount namespace where the
# toolchain's folder and this source tree are hidden under empty tmpfs mounts (the loader cannot
# reach them), and checks it prints what the demo prints built in the tree, and that the loader
# took every library from the prefix or the system; runs the C test programs (Tests/CTests) against
# the installed library the same way; runs the demo with another Swift runtime loaded first (no
# symbol may bind across); then moves the prefix and runs the demo again.
#
# Where no mount namespace can be made (not root, user namespaces off), the runs without the
# toolchain fall back to the loader's own record (LD_DEBUG) and say so. The last line is
# "N passed, N failed"; the exit status is non-zero when anything failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS  $1"; }
fail() { failed=$((failed + 1)); echo "FAIL  $1" >&2; }
# check LABEL COMMAND...: runs the command; its status decides.
check() { local label=$1; shift; if "$@"; then pass "$label"; else fail "$label"; fi; }
die() { echo "run.sh: $*" >&2; echo "$passed passed, $((failed + 1)) failed"; exit 1; }

command -v swift >/dev/null 2>&1 || die "swift is not on PATH (the install builds with it)"
command -v cc >/dev/null 2>&1 || die "cc is not on PATH"
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")   # e.g. /opt/swift/usr
runtime="$toolchain/lib/swift/linux"            # where the toolchain keeps libswiftCore.so
# What the runs "without the toolchain" hide: the toolchain's own folder, or only its runtime
# folder when the toolchain lives in /usr.
case "$toolchain" in /usr | /) hide="$runtime" ;; *) hide="$toolchain" ;; esac

prefix=$(mktemp -d /tmp/reduxstore-install-XXXXXX)
work=$(mktemp -d /tmp/reduxstore-install-test-XXXXXX)
trap 'rm -rf "$prefix" "$prefix.moved" "$work"' EXIT

# ---- 1. The install.
echo "== bash scripts/install --prefix $prefix"
started=$(date +%s)
if bash scripts/install --prefix "$prefix" >"$work/install.log" 2>&1; then
    pass "scripts/install --prefix $prefix ($(( $(date +%s) - started )) s)"
else
    tail -n 30 "$work/install.log" >&2
    die "scripts/install failed"
fi
lib="$prefix/lib/libreduxstore.so"
version=$(sed -n 's/^#define RDX_VERSION "\(.*\)"$/\1/p' include/reduxstore.h)
major=${version%%.*}

# Debian's naming: libNAME.so.VERSION the file, libNAME.so.MAJOR (its soname) and libNAME.so links.
soname_of() { readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p'; }
versioned() {
    local name=$1 lib="$prefix/lib"
    test -f "$lib/$name.so.$version" -a ! -L "$lib/$name.so.$version" -a -x "$lib/$name.so.$version" &&
        test "$(readlink "$lib/$name.so.$major")" = "$name.so.$version" &&
        test "$(readlink "$lib/$name.so")" = "$name.so.$major" &&
        test "$(soname_of "$lib/$name.so.$version")" = "$name.so.$major"
}

check "DIR/include/reduxstore.h is the header" cmp -s include/reduxstore.h "$prefix/include/reduxstore.h"
check "DIR/lib/libreduxstore.so is installed" test -f "$lib" -a -x "$lib"
check "DIR/lib/libreduxstore.so.$version, soname libreduxstore.so.$major, with the links libreduxstore.so.$major and libreduxstore.so" \
    versioned libreduxstore
check "DIR/lib/pkgconfig/reduxstore.pc is installed" test -f "$prefix/lib/pkgconfig/reduxstore.pc"
echo "      installed: $(cd "$prefix" && find . -type f -printf '%P %s bytes; ' )"

# ---- 2. The pkg-config file.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
flags=$(pkg-config --cflags --libs reduxstore 2>&1)
echo "      pkg-config --cflags --libs reduxstore: $flags"
has_words() { local word; for word in "${@:2}"; do grep -qwF -- "$word" <<<" $1 " || { echo "      missing: $word" >&2; return 1; }; done; }
check "reduxstore.pc gives the prefix's real paths, -lreduxstore and json-c's flags" \
    has_words "$flags" "-I$prefix/include" "-L$prefix/lib" -lreduxstore -ljson-c
check "reduxstore.pc requires json-c" test "$(pkg-config --print-requires reduxstore)" = json-c
check "reduxstore.pc's version is the header's" \
    test "$(pkg-config --modversion reduxstore)" = "$version"

# ---- 3. What the library needs and what it exports.
# A library the loader takes from outside the system's folders, or cannot find.
foreign_needs() { ldd "$1" | awk '$2 == "=>" && ($3 !~ /^\/(usr\/)?lib(64|x32)?\// ) { print }'; }
# The libraries a library names as NEEDED, on one line.
needed_by() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p' | tr '\n' ' '; }
# A header's functions: a name followed by "(" in the header without its comments (function
# pointer typedefs read "(*rdx_name)(" and do not match).
declared_in() {
    cc -fpreprocessed -dD -E -P "include/$1" 2>/dev/null |
        grep -oE '\brdx_[a-z0-9_]+[[:space:]]*\(' | sed 's/[[:space:]]*($//' | sort -u
}
# What a library exports: defined dynamic symbols bound globally or weakly (nm's upper-case letters).
exported_by() { nm -D --defined-only "$1" | awk '$2 ~ /^[A-Z]$/ { print $3 }' | sort -u; }
needs=$(foreign_needs "$lib")
check "the library loads nothing from outside the system's folders (ldd)" test -z "$needs"
[ -z "$needs" ] || echo "$needs" >&2
needed=$(needed_by "$lib")
echo "      NEEDED: $needed"
check "the library needs no Swift library (readelf -d)" \
    bash -c '! grep -Eq "swift|dispatch|BlocksRuntime|Foundation" <<<"$1"' _ "$needed"
runpath=$(readelf -d "$lib" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p')
echo "      RUNPATH: ${runpath:-(none)}"
check "the library's run path names no folder (only \$ORIGIN)" \
    bash -c '! tr ":" "\n" <<<"$1" | grep -v "^$" | grep -qv "^\$ORIGIN"' _ "$runpath"

declared=$(declared_in reduxstore.h)
exported=$(exported_by "$lib")
extra=$(comm -13 <(echo "$declared") <(echo "$exported"))
absent=$(comm -23 <(echo "$declared") <(echo "$exported"))
echo "      exported: $(grep -c . <<<"$exported") symbols; the header declares $(grep -c . <<<"$declared") functions"
check "the library exports every rdx_ function of the header" test -z "$absent" -a -n "$declared"
[ -z "$absent" ] || echo "      not exported: $(echo $absent)" >&2
check "the library exports nothing else (no Swift runtime, libdispatch or Swift symbol)" test -z "$extra"
[ -z "$extra" ] || echo "      also exported: $(echo $extra | cut -c1-2000)" >&2

# ---- 3b. The live inspector's and replication's libraries: header, .pc file, needs and exports.
# check_layered PRODUCT HEADER WHAT: the checks of DIR/lib/libPRODUCT.so (WHAT names it in the
# labels); leaves its pkg-config flags in $layer_flags.
check_layered() {
    local product=$1 header=$2 what=$3 library="$prefix/lib/lib$1.so" needs needed declared exported
    check "DIR/include/$header is the header" cmp -s "include/$header" "$prefix/include/$header"
    check "DIR/lib/lib$product.so is installed" test -f "$library" -a -x "$library"
    check "DIR/lib/lib$product.so.$version, soname lib$product.so.$major, with its two links" versioned "lib$product"
    layer_flags=$(pkg-config --cflags --libs "$product" 2>&1)
    echo "      pkg-config --cflags --libs $product: $layer_flags"
    check "$product.pc gives -l$product and, through reduxstore, -lreduxstore and json-c" \
        has_words "$layer_flags" "-I$prefix/include" "-L$prefix/lib" "-l$product" -lreduxstore -ljson-c
    needs=$(foreign_needs "$library" | grep -v "$prefix/lib/libreduxstore.so.$major")
    check "$what library loads nothing from outside the system's folders and the prefix (ldd)" test -z "$needs"
    [ -z "$needs" ] || echo "$needs" >&2
    needed=$(needed_by "$library")
    echo "      NEEDED: $needed"
    check "$what library needs libreduxstore.so.$major and no Swift library (readelf -d)" \
        bash -c 'grep -qwF "libreduxstore.so.$2" <<<" $1 " && ! grep -Eq "swift|dispatch|BlocksRuntime|Foundation" <<<"$1"' _ "$needed" "$major"
    declared=$(declared_in "$header")
    exported=$(exported_by "$library")
    check "$what library exports exactly the rdx_ functions of $header" test -n "$declared" -a "$declared" = "$exported"
    [ "$declared" = "$exported" ] || echo "      exported: $(echo $exported | cut -c1-500)" >&2
}
check_layered reduxstore-inspector reduxstore_inspector.h "the inspector's"
iflags=$layer_flags
check "Examples/CInspectorDemo/main.c builds with \`cc \$(pkg-config --cflags --libs reduxstore-inspector)\` alone" \
    cc -std=c99 -Wall -Wextra -Werror -pedantic Examples/CInspectorDemo/main.c $iflags -o "$work/c-inspector-demo"
check_layered reduxstore-postgres reduxstore_postgres.h "replication's"
pflags=$layer_flags

# ---- 4. The demo, built with pkg-config alone.
echo "== the C demo"
check "Examples/CDemo/main.c builds with \`cc \$(pkg-config --cflags --libs reduxstore)\` alone" \
    cc -std=c99 -Wall -Wextra -Werror -pedantic Examples/CDemo/main.c $flags -o "$work/c-demo"
check "the demo needs libreduxstore.so.$major, the library's soname (readelf -d)" \
    bash -c 'grep -qwF "libreduxstore.so.$2" <<<" $1 "' _ "$(needed_by "$work/c-demo")" "$major"
check "the demo loads nothing from outside the system's folders and the prefix (ldd)" \
    bash -c '! ldd "$1" | awk '\''$2 == "=>" { print $3 }'\'' | grep -v "^$2/" | grep -Ev "^/(usr/)?lib(64|x32)?/"' \
    _ "$work/c-demo" "$prefix/lib"

# The demo as it runs in the tree (SwiftPM builds it there, linked to the in-tree library).
swift build --product reduxstore-c-demo >"$work/in-tree-build.log" 2>&1 ||
    { tail -n 30 "$work/in-tree-build.log" >&2; die "could not build reduxstore-c-demo in the tree"; }
expected=$("$(swift build --show-bin-path)/reduxstore-c-demo" 2>&1) || die "the in-tree demo failed"
[ -n "$expected" ] || die "the in-tree demo printed nothing"

# ---- 5. Runs without the toolchain.
# without_toolchain COMMAND...: runs the command in a new mount namespace where $hide (the
# toolchain) and $root (this source tree and its build folders) are empty tmpfs mounts; exits 97
# when the hiding did not work.
ns=()
if unshare --mount --propagation private true 2>/dev/null; then
    ns=(unshare --mount --propagation private)
elif unshare --user --map-root-user --mount --propagation private true 2>/dev/null; then
    ns=(unshare --user --map-root-user --mount --propagation private)
fi
without_toolchain() {
    if [ ${#ns[@]} -eq 0 ]; then "$@"; return; fi
    "${ns[@]}" bash -c 'mount -t tmpfs -o ro none "$1" && mount -t tmpfs -o ro none "$2" &&
        [ ! -e "$3" ] && [ ! -e "$2/Package.swift" ] || exit 97; shift 3; exec "$@"' \
        _ "$hide" "$root" "$runtime/libswiftCore.so" "$@"
}
check "the toolchain's runtime is where hiding it proves something ($runtime/libswiftCore.so)" \
    test -f "$runtime/libswiftCore.so"
if [ ${#ns[@]} -gt 0 ]; then
    check "a mount namespace hides the toolchain ($hide) and the source tree" \
        without_toolchain test ! -e "$(command -v swift)"
else
    echo "NOTE  no mount namespace here (unshare refused): the runs below see the toolchain, and" \
         "only the loader's record (LD_DEBUG) shows they take nothing from it" >&2
fi

# same_output LABEL COMMAND...: the command (run without the toolchain) prints what the in-tree
# demo printed.
same_output() {
    local label=$1 got status
    shift
    got=$(cd "$work" && without_toolchain "$@" 2>&1)
    status=$?
    if [ "$status" -eq 0 ] && [ "$got" = "$expected" ]; then pass "$label"; return; fi
    fail "$label (exit status $status)"
    diff <(echo "$expected") <(echo "$got") | head -n 20 >&2
}
same_output "the demo, toolchain hidden, prints what it prints in the tree" "$work/c-demo"
# The inspector's demo serves until its standard input ends: with none, it prints its address
# (having applied its actions) and stops.
iurl=$(cd "$work" && without_toolchain "$work/c-inspector-demo" --actions 100 </dev/null 2>&1)
check "the inspector's demo, toolchain hidden, starts, prints its address and stops" \
    grep -Eq '^http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{32}$' <<<"$iurl"
[ -n "$iurl" ] && echo "      printed: $iurl"

# The loader's own record: every object it loaded (it calls the init of each) is the installed
# library or a system library, and it never even looked in the toolchain.
#   loader_record LIBDIR WRAPPER COMMAND...   (WRAPPER: without_toolchain or visible)
visible() { "$@"; }
loader_record() {
    local libdir=$1 wrapper=$2 log="$work/ld-debug" bad
    shift 2
    rm -f "$log".*
    (cd "$work" && "$wrapper" env LD_DEBUG=libs LD_DEBUG_OUTPUT="$log" LD_BIND_NOW=1 "$@" >/dev/null 2>&1) ||
        return 1
    ls "$log".* >/dev/null 2>&1 || { echo "      the loader wrote no record" >&2; return 1; }
    bad=$(cat "$log".* | sed -n 's/.*calling init: //p' |
          grep -v "^$libdir/libreduxstore.so.$major$" | grep -Ev '^/(usr/)?lib(64|x32)?/')
    [ -z "$bad" ] || { echo "      loaded: $bad" >&2; return 1; }
    ! grep -F "$toolchain" "$log".* >&2
}
check "the loader takes every library from the prefix or the system, and never looks into $toolchain (LD_DEBUG=libs, toolchain visible)" \
    loader_record "$prefix/lib" visible "$work/c-demo"
check "the same with the toolchain hidden" loader_record "$prefix/lib" without_toolchain "$work/c-demo"

# The C test programs, against the installed library, the toolchain hidden.
echo "== the C test programs against the installed library, toolchain hidden"
for source in Tests/CTests/test_*.c; do
    name=$(basename "$source" .c)
    libs=$flags
    [[ "$name" != test_inspector* ]] || libs=$iflags
    [[ "$name" != test_postgres* ]] || libs=$pflags
    if ! cc -std=c99 -Wall -Wextra -Werror -pedantic "$source" -o "$work/$name" $libs -lpthread \
        2>"$work/$name.compile.log"; then
        cat "$work/$name.compile.log" >&2
        fail "$name compiles against the installed header and library"
        continue
    fi
    # (test_postgres: no Swift program can run with the toolchain hidden; a C thread writes the
    # Swift process's share. It needs the server REDUXSTORE_TEST_POSTGRES names.)
    (cd "$work" && without_toolchain env RDX_CTEST_WITHOUT_SWIFT=1 timeout 600 "$work/$name") >"$work/$name.log" 2>&1 &&
        status=0 || status=$?
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$work/$name.log" | tail -n 1)
    if [ "$status" -eq 0 ] && [ -n "$line" ] && [ "${line#*passed, }" = "0 failed" ]; then
        pass "$name: $line"
    else
        tail -n 20 "$work/$name.log" >&2
        fail "$name: ${line:-no summary line} (exit status $status)"
    fi
done

# ---- 6. Another Swift runtime in the same process: the toolchain's, loaded first. Nothing of the
# installed library may bind to it, and nothing but rdx_ functions may bind into the library.
echo "== another Swift runtime loaded first"
preload=""
for name in libswiftCore.so libswift_Concurrency.so libdispatch.so libFoundationEssentials.so; do
    [ -f "$runtime/$name" ] && preload="$preload${preload:+:}$runtime/$name"
done
got=$(cd "$work" && LD_PRELOAD="$preload" ./c-demo 2>&1)
check "the demo prints the same with $preload preloaded" test "$got" = "$expected"
bindings=$(cd "$work" && LD_PRELOAD="$preload" LD_DEBUG=bindings LD_BIND_NOW=1 ./c-demo 2>&1 >/dev/null)
across=$(grep -F "binding file $lib " <<<"$bindings" | grep -F " to $toolchain")
into=$(grep -F " to $lib " <<<"$bindings" | grep -v "normal symbol \`rdx_")
check "no symbol of the installed library binds to the other runtime" test -z "$across"
[ -z "$across" ] || head -n 5 <<<"$across" >&2
check "only rdx_ functions bind into the installed library" test -z "$into"
[ -z "$into" ] || head -n 5 <<<"$into" >&2

# ---- 7. A moved prefix.
echo "== the prefix moved to $prefix.moved"
mv "$prefix" "$prefix.moved"
same_output "the demo built before runs from the moved prefix (LD_LIBRARY_PATH), toolchain hidden" \
    env LD_LIBRARY_PATH="$prefix.moved/lib" "$work/c-demo"
check "it loads the moved library (LD_DEBUG=libs)" \
    loader_record "$prefix.moved/lib" without_toolchain env LD_LIBRARY_PATH="$prefix.moved/lib" "$work/c-demo"
moved_flags=$(PKG_CONFIG_PATH="$prefix.moved/lib/pkgconfig" pkg-config --define-prefix --cflags --libs reduxstore)
check "pkg-config --define-prefix follows the moved prefix" \
    has_words "$moved_flags" "-I$prefix.moved/include" "-L$prefix.moved/lib"
check "the demo builds against the moved prefix" \
    cc -std=c99 -Wall -Wextra -Werror -pedantic Examples/CDemo/main.c $moved_flags -o "$work/c-demo-moved"
same_output "and runs without LD_LIBRARY_PATH, toolchain hidden" "$work/c-demo-moved"
mv "$prefix.moved" "$prefix"

# ---- 8. Installing again over an install.
started=$(date +%s)
if bash scripts/install --prefix "$prefix" >"$work/install2.log" 2>&1; then
    pass "a second install over the first ($(( $(date +%s) - started )) s)"
else
    tail -n 30 "$work/install2.log" >&2
    fail "a second install over the first"
fi
same_output "the demo runs with the library installed again" "$work/c-demo"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
