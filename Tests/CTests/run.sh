#!/usr/bin/env bash
# Runs the C tests of ReduxStore against include/reduxstore.h and libreduxstore.so.
#
#   bash Tests/CTests/run.sh [SCRATCH_PATH]     (SCRATCH_PATH: SwiftPM's build folder, default .build)
#
# 1. installs what is missing (json-c and pkg-config through scripts/bootstrap; valgrind, g++ and
#    nm through apt-get), and builds the `reduxstore` product; with the inspector in the package
#    (REDUXSTORE_CORE_ONLY unset) also `reduxstore-inspector`, for the test_inspector*.c tests,
#    and `reduxstore-postgres` with the Swift `reduxstore-replica-check`, for test_postgres.c (which
#    needs the server REDUXSTORE_TEST_POSTGRES names: scripts/postgres starts one; without it the
#    test fails);
# 2. checks the headers compile alone as C99 and as C++11, warnings as errors;
# 3. checks every rdx_ function each header declares is exported by its library, and that
#    libreduxstore.so neither needs nor carries SwiftNIO or Hummingbird;
# 4. compiles the README's C example (the first ```c block of README.md), runs it and compares its
#    output, and runs it under valgrind;
# 5. compiles each Tests/CTests/test_*.c, runs it, then runs it again under valgrind (definite
#    leaks and invalid reads/writes fail; the Swift runtime's possibly-lost and still-reachable
#    blocks do not; valgrind-swift.supp names what is suppressed in third-party code).
#    RDX_CTEST_SMALL=1 shrinks the thread tests under valgrind;
# 6. compiles each again with AddressSanitizer (LeakSanitizer on) and runs it.
#
# The plain runs of step 5 go CTESTS_JOBS at once (default: one per processor), their results
# printed in order when the last ends; the runs under valgrind and AddressSanitizer go one at a
# time: there the thread tests run tens of times slower, and two at once on a loaded machine
# reached the per-test watchdog (90 s, check.h).
#
# CTESTS_PLAIN=1 leaves out valgrind and AddressSanitizer (steps 4 and 5 run each program once,
# step 6 is skipped): the quick run of `bash scripts/test`; `bash scripts/test --all` runs them.
#
# The last line sums every CHECK of every run (normal and valgrind) as "N passed, N failed"; a
# step that is not a CHECK (a header or export check, a compile, a crash, valgrind errors) counts
# as one more pass or failure. The exit status is non-zero when anything failed.
set -uo pipefail

cd "$(dirname "$0")/../.."
root=$(pwd)
scratch=${1:-.build}
here="$root/Tests/CTests"

passed=0
failed=0
failures=()

pass() { passed=$((passed + 1)); echo "PASS  $1"; }
fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAIL  $1" >&2; }
die() { echo "run.sh: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

# ---- What the tests need.
apt_install() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "== installing $*"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq || return 1
    $sudo apt-get install -y -qq "$@" >/dev/null
}

bash scripts/bootstrap || die "could not install json-c (scripts/bootstrap failed)"
missing=()
plain=${CTESTS_PLAIN:-}
[ -n "$plain" ] || command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v nm >/dev/null 2>&1 || missing+=(binutils)
command -v cc >/dev/null 2>&1 || missing+=(gcc)
if [ ${#missing[@]} -gt 0 ]; then
    apt_install "${missing[@]}" || die "could not install ${missing[*]}"
fi
CC=${CC:-cc}
CXX=${CXX:-g++}

# ---- The library.
echo "== building libreduxstore.so (scratch path $scratch)"
swift build --scratch-path "$scratch" --product reduxstore || die "swift build failed"
bin=$(swift build --scratch-path "$scratch" --show-bin-path) || die "no bin path"
lib="$bin/libreduxstore.so"
[ -f "$lib" ] || die "$lib was not built"
# The live inspector's library (SwiftNIO), unless the package is built without it
# (REDUXSTORE_CORE_ONLY=1): then its tests (test_inspector*.c) are not run, and say so.
inspector_lib=""
postgres_lib=""
if [ -z "${REDUXSTORE_CORE_ONLY:-}" ]; then
    echo "== building libreduxstore-inspector.so"
    swift build --scratch-path "$scratch" --product reduxstore-inspector || die "swift build of reduxstore-inspector failed"
    inspector_lib="$bin/libreduxstore-inspector.so"
    [ -f "$inspector_lib" ] || die "$inspector_lib was not built"
    echo "== building libreduxstore-postgres.so and reduxstore-replica-check"
    swift build --scratch-path "$scratch" --product reduxstore-postgres || die "swift build of reduxstore-postgres failed"
    swift build --scratch-path "$scratch" --product reduxstore-replica-check || die "swift build of reduxstore-replica-check failed"
    postgres_lib="$bin/libreduxstore-postgres.so"
    [ -f "$postgres_lib" ] || die "$postgres_lib was not built"
    export RDX_REPLICA_CHECK="$bin/reduxstore-replica-check"
fi
out="$bin/ctests"
mkdir -p "$out"

jsonc_cflags=$(pkg-config --cflags json-c)
jsonc_libs=$(pkg-config --libs json-c)
cflags=(-std=c99 -Wall -Wextra -Werror -pedantic -I"$root/include" $jsonc_cflags)

# ---- The header alone, as C99 and as C++11 (included twice: the guard works).
echo "== header checks"
printf '#include "reduxstore.h"\n#include "reduxstore.h"\n#include "reduxstore_inspector.h"\n#include "reduxstore_inspector.h"\n#include "reduxstore_postgres.h"\n#include "reduxstore_postgres.h"\nint header_only_unit;\n' >"$out/header_only.c"
if "$CC" "${cflags[@]}" -c "$out/header_only.c" -o "$out/header_only_c.o" 2>"$out/header_c.log"; then
    pass "header compiles alone as C99 (-std=c99 -Wall -Wextra -Werror -pedantic)"
else
    cat "$out/header_c.log" >&2
    fail "header compiles alone as C99"
fi
if "$CXX" -x c++ -std=c++11 -Wall -Wextra -Werror -pedantic -I"$root/include" $jsonc_cflags \
    -c "$out/header_only.c" -o "$out/header_only_cxx.o" 2>"$out/header_cxx.log"; then
    pass "header compiles alone as C++11 (-std=c++11 -Wall -Wextra -Werror -pedantic)"
else
    cat "$out/header_cxx.log" >&2
    fail "header compiles alone as C++11"
fi

# ---- Every rdx_ function of each header is exported by its library.
echo "== exported symbols"
# The header without its comments; a name followed by "(" is a function declaration (function
# pointer typedefs read "(*rdx_name)(" and do not match).
check_exports() {
    local header=$1 library=$2 declared exported count absent name
    declared=$("$CC" -fpreprocessed -dD -E -P "$root/include/$header" 2>/dev/null |
        grep -oE '\brdx_[a-z0-9_]+[[:space:]]*\(' | sed 's/[[:space:]]*($//' | sort -u)
    exported=$(nm -D --defined-only "$library" | awk '$2 ~ /^[TW]$/ { print $3 }' | sort -u)
    count=$(printf '%s\n' "$declared" | grep -c . || true)
    if [ "$count" -eq 0 ]; then
        fail "found no rdx_ function in include/$header"
        return
    fi
    absent=()
    for name in $declared; do
        # A here-string, not a pipe: with pipefail, grep -q closing the pipe early would fail it.
        grep -qx "$name" <<<"$exported" || absent+=("$name")
    done
    if [ ${#absent[@]} -eq 0 ]; then
        pass "all $count rdx_ functions of include/$header are exported by $(basename "$library")"
    else
        fail "not exported by $(basename "$library"): ${absent[*]}"
    fi
}
check_exports reduxstore.h "$lib"
if [ -n "$inspector_lib" ]; then
    check_exports reduxstore_inspector.h "$inspector_lib"
    check_exports reduxstore_postgres.h "$postgres_lib"
    # Replication (postgres-nio) stays in its own library too.
    if [ "$(nm "$lib" 2>/dev/null | grep -cE 'PostgresNIO' || true)" -eq 0 ]; then
        pass "libreduxstore.so has no symbol of postgres-nio"
    else
        fail "libreduxstore.so carries postgres-nio"
    fi
    # The inspector's web server stays in its own library: libreduxstore.so neither loads nor
    # carries SwiftNIO or Hummingbird (their module names appear in every one of their symbols).
    nio_needed=$(readelf -d "$lib" | grep NEEDED | grep -ciE 'nio|hummingbird' || true)
    nio_symbols=$(nm "$lib" 2>/dev/null | grep -cE 'NIO|Hummingbird' || true)
    if [ "$nio_needed" -eq 0 ] && [ "$nio_symbols" -eq 0 ]; then
        pass "libreduxstore.so needs no SwiftNIO or Hummingbird library and has none of their symbols"
    else
        fail "libreduxstore.so links SwiftNIO or Hummingbird ($nio_needed libraries, $nio_symbols symbols)"
    fi
    # ...and the inspector's library does have them (so the check above can fail).
    if [ "$(nm "$inspector_lib" 2>/dev/null | grep -cE 'NIO' || true)" -gt 0 ]; then
        pass "libreduxstore-inspector.so carries SwiftNIO"
    else
        fail "libreduxstore-inspector.so has no SwiftNIO symbol: the check of libreduxstore.so proves nothing"
    fi
fi

# --fair-sched: valgrind runs one thread at a time, and an unfair lock can starve a writer for
# minutes behind a spinning reader; fair scheduling keeps the thread tests quick.
valgrind_flags=(--suppressions="$here/valgrind-swift.supp" --fair-sched=yes --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite
    --error-exitcode=99 --num-callers=40)

# ---- The README's C example, taken from the README as written there: compiled as the tests are,
# run normally and under valgrind, its output compared with what its comments say.
echo "== the README's C example"
awk '/^```c$/ { inside = 1; blocks++; next } /^```/ { inside = 0 } inside && blocks == 1' \
    "$root/README.md" >"$out/readme_example.c"
expected=$'RDXStateDidChangeNotification -> version 1\nRDXStateDidChangeNotification -> version 2\n{ "count": 7 }'
if ! grep -q 'int main(void)' "$out/readme_example.c"; then
    fail "README.md has no C example (a \`\`\`c block with a main function)"
elif "$CC" "${cflags[@]}" "$out/readme_example.c" -o "$out/readme_example" \
    -L"$bin" -lreduxstore -Wl,-rpath,"$bin" $jsonc_libs 2>"$out/readme_example.compile.log"; then
    pass "compile the README's C example"
    actual=$("$out/readme_example" 2>&1)
    if [ "$actual" = "$expected" ]; then
        pass "the README's C example prints what its comments say"
    else
        printf 'expected:\n%s\nprinted:\n%s\n' "$expected" "$actual" >&2
        fail "the README's C example printed something else"
    fi
    if [ -n "$plain" ]; then
        :
    elif valgrind "${valgrind_flags[@]}" "$out/readme_example" >"$out/readme_example.valgrind.log" 2>&1; then
        pass "the README's C example under valgrind (no definite leak, no invalid access)"
    else
        grep -E '^==[0-9]+== ' "$out/readme_example.valgrind.log" | grep -vE 'possibly lost|still reachable' | head -n 40 >&2
        fail "the README's C example under valgrind (see $out/readme_example.valgrind.log)"
    fi
else
    cat "$out/readme_example.compile.log" >&2
    fail "compile the README's C example"
fi

# ---- The test programs.
# Runs one program (normally or under valgrind) under a watchdog: its output goes to LOG, its exit
# status to LOG.status.
run_logged() {
    local log=$1
    shift
    timeout 600 "$@" >"$log" 2>&1
    echo $? >"$log.status"
}

# Adds the counts of a run that run_logged recorded in LOG and checks its exit status.
account() {
    local label=$1 log=$2
    local status line p f
    status=$(cat "$log.status" 2>/dev/null || echo 125)
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -n "$line" ]; then
        p=${line%% passed*}
        f=${line#*passed, }
        f=${f%% failed}
        passed=$((passed + p))
        failed=$((failed + f))
    fi
    if [ -z "$line" ]; then
        grep -v '^==[0-9]*==' "$log" | tail -n 40 >&2
        fail "$label: crashed or hung (exit status $status, no summary line)"
    elif [ "$status" -eq 99 ]; then
        grep -E '^==[0-9]+== ' "$log" | grep -vE 'possibly lost|still reachable' | head -n 80 >&2
        fail "$label: valgrind found errors (see $log)"
    elif [ "$status" -ne 0 ] || [ "$f" -ne 0 ]; then
        grep -v '^==[0-9]*==' "$log" | grep -v '^[0-9]* passed' >&2
        failures+=("$label: $line")
        echo "FAIL  $label: $line" >&2
        [ "$f" -eq 0 ] && { failed=$((failed + 1)); echo "      (exit status $status)" >&2; }
    else
        echo "PASS  $label: $line"
    fi
}

# Runs one program (run_logged) and accounts for it at once: LABEL LOG COMMAND...
run_program() {
    local label=$1 log=$2
    shift 2
    run_logged "$log" "$@"
    account "$label" "$log"
}

# Runs FUNCTION NAME for each NAME given, CTESTS_JOBS of them at once (default: one per
# processor): each program is a process of its own with its own files. What each run says is
# read afterwards, in order, by account.
jobs=${CTESTS_JOBS:-$(nproc)}
in_parallel() {
    local function=$1 name running=0
    shift
    for name in "$@"; do
        if [ "$running" -ge "$jobs" ]; then
            wait -n
            running=$((running - 1))
        fi
        "$function" "$name" &
        running=$((running + 1))
    done
    wait
}

programs=()
for source in "$here"/test_*.c; do
    name=$(basename "$source" .c)
    if [[ "$name" == test_inspector* || "$name" == test_postgres* ]] && [ -z "$inspector_lib" ]; then
        echo "NOT RUN  $name: the package was built without the inspector (REDUXSTORE_CORE_ONLY)"
        continue
    fi
    programs+=("$name")
done
# The libraries a test links: the inspector's tests also libreduxstore-inspector.
libraries_of() {
    case "$1" in
        test_inspector*) echo "-lreduxstore-inspector -lreduxstore" ;;
        test_postgres*) echo "-lreduxstore-postgres -lreduxstore" ;;
        *) echo "-lreduxstore" ;;
    esac
}

echo "== compiling ${#programs[@]} test programs"
built=()
for name in "${programs[@]}"; do
    if "$CC" "${cflags[@]}" "$here/$name.c" -o "$out/$name" \
        -L"$bin" $(libraries_of "$name") -Wl,-rpath,"$bin" $jsonc_libs -lpthread 2>"$out/$name.compile.log"; then
        pass "compile $name"
        built+=("$name")
    else
        cat "$out/$name.compile.log" >&2
        fail "compile $name"
    fi
done

rm -f "$out"/*.status
echo "== running, $jobs at once"
plain_run() { run_logged "$out/$1.log" "$out/$1"; }
in_parallel plain_run "${built[@]}"
for name in "${built[@]}"; do
    account "$name" "$out/$name.log"
done

if [ -n "$plain" ]; then
    echo "== valgrind and AddressSanitizer left out (CTESTS_PLAIN)"
else
    echo "== running under valgrind"
    # valgrind gives up on the debug information of the inspector's debug library (70 MB, "possibly
    # corrupted debuginfo"): its tests load a copy without it, found first through LD_LIBRARY_PATH.
    valgrind_libs="$out/valgrind-libs"
    if [ -n "$inspector_lib" ]; then
        mkdir -p "$valgrind_libs"
        strip --strip-debug -o "$valgrind_libs/libreduxstore-inspector.so" "$inspector_lib" ||
            fail "strip a copy of libreduxstore-inspector.so for valgrind"
        strip --strip-debug -o "$valgrind_libs/libreduxstore-postgres.so" "$postgres_lib" ||
            fail "strip a copy of libreduxstore-postgres.so for valgrind"
    fi
    for name in "${built[@]}"; do
        LD_LIBRARY_PATH="$valgrind_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" RDX_CTEST_SMALL=1 \
            run_program "$name (valgrind)" "$out/$name.valgrind.log" \
            valgrind "${valgrind_flags[@]}" "$out/$name"
        summary=$(grep -E 'ERROR SUMMARY|definitely lost' "$out/$name.valgrind.log" | sed 's/^==[0-9]*== *//' | tr '\n' ' ')
        echo "      valgrind: $summary"
    done

    echo "== running under AddressSanitizer (LeakSanitizer on)"
    for name in "${built[@]}"; do
        if "$CC" "${cflags[@]}" -fsanitize=address -fno-omit-frame-pointer -g "$here/$name.c" \
            -o "$out/$name.asan" -L"$bin" $(libraries_of "$name") -Wl,-rpath,"$bin" $jsonc_libs -lpthread \
            2>"$out/$name.asan.compile.log"; then
            ASAN_OPTIONS=detect_leaks=1:exitcode=98 RDX_CTEST_SMALL=1 \
                run_program "$name (AddressSanitizer)" "$out/$name.asan.log" "$out/$name.asan"
        else
            cat "$out/$name.asan.compile.log" >&2
            fail "compile $name with AddressSanitizer"
        fi
    done
fi

# ---- The README's replication example (the ```c block that opens a stream), as written there:
# two copies at once against the test server; the last to finish prints 2000 more than the
# stream held.
if [ -n "$postgres_lib" ]; then
    echo "== the README's C replication example, two copies at once"
    awk '/^```c$/ { inside = 1; text = ""; next }
         /^```/ { if (inside && text ~ /rdx_store_open_stream/) printf "%s", text; inside = 0; next }
         inside { text = text $0 "\n" }' "$root/README.md" >"$out/readme_stream.c"
    url=${REDUXSTORE_TEST_POSTGRES:-}
    if [[ ! "$url" =~ ^postgres(ql)?://([^:@/]+)(:([^@/]*))?@([^:/]+):([0-9]+)/(.+)$ ]]; then
        fail "the README's C replication example: REDUXSTORE_TEST_POSTGRES is not a server's URL (scripts/postgres starts one)"
    elif ! grep -q 'rdx_store_open_stream' "$out/readme_stream.c"; then
        fail "README.md has no C replication example (a \`\`\`c block calling rdx_store_open_stream)"
    elif ! "$CC" "${cflags[@]}" "$out/readme_stream.c" -o "$out/readme_stream" -L"$bin" -lreduxstore-postgres -lreduxstore \
        -Wl,-rpath,"$bin" $jsonc_libs 2>"$out/readme_stream.compile.log"; then
        cat "$out/readme_stream.compile.log" >&2
        fail "compile the README's C replication example"
    else
        pass "compile the README's C replication example"
        # The stream "tally" may hold actions already (the Swift example's test uses it too):
        # the last copy to finish prints its version before plus 2000.
        before=$(psql "$url" -XAtqc "SELECT coalesce((SELECT version FROM reduxstore.streams WHERE name = 'tally'), 0)" 2>/dev/null || echo 0)
        export PGUSER="${BASH_REMATCH[2]}" PGPASSWORD="${BASH_REMATCH[4]}" PGHOST="${BASH_REMATCH[5]}" \
            PGPORT="${BASH_REMATCH[6]}" PGDATABASE="${BASH_REMATCH[7]}"
        timeout 300 "$out/readme_stream" >"$out/readme_stream.1.log" 2>&1 &
        first=$!
        timeout 300 "$out/readme_stream" >"$out/readme_stream.2.log" 2>&1
        second_status=$?
        wait "$first"
        first_status=$?
        unset PGUSER PGPASSWORD PGHOST PGPORT PGDATABASE
        counts=$(cat "$out/readme_stream.1.log" "$out/readme_stream.2.log" | sed -n 's/^tally: //p' | sort -n | tr '\n' ' ')
        last=$(tr ' ' '\n' <<<"$counts" | grep . | tail -n 1)
        if [ "$first_status" -eq 0 ] && [ "$second_status" -eq 0 ] && [ "$(wc -w <<<"$counts")" -eq 2 ] \
            && [ "$last" = "$((before + 2000))" ]; then
            pass "two copies of the README's C replication example add to one tally (from $before, printed: $counts)"
        else
            cat "$out/readme_stream.1.log" "$out/readme_stream.2.log" >&2
            fail "two copies of the README's C replication example (exit $first_status and $second_status, from $before, printed: $counts)"
        fi
    fi
fi

echo
if [ ${#failures[@]} -gt 0 ]; then
    echo "Failed:"
    printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
