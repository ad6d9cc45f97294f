#!/usr/bin/env bash
# Opens the live inspector's page in headless Chromium, as a person would, and checks what it
# shows (check_page.py, Selenium): a program applies 1,000 actions with its inspector on
# (Examples/InspectorDemo in Swift, Examples/CInspectorDemo in C, built with cc against
# libreduxstore.so and libreduxstore-inspector.so); the page must show the newest version, every
# action in its log, a chosen action's patch with the changed node highlighted in the state tree,
# a filter that narrows the log, no restore when the program does not allow it, and a restore
# after confirmation when it does. Then the C program's journal, opened offline with
# `reduxstore-inspect serve`, must show the same log, patches and tree. Installs Debian's chromium
# and chromium-driver and PyPI's selenium when missing (install.sh).
#
#   bash Tests/InspectorBrowser/run.sh [SCRATCH_PATH]   (SwiftPM's build folder, default .build)
set -euo pipefail
cd "$(dirname "$0")/../.."
scratch=${1:-.build}
here=Tests/InspectorBrowser

bash "$here/install.sh"

for product in reduxstore-inspector-demo reduxstore reduxstore-inspector reduxstore-inspect; do
    swift build --scratch-path "$scratch" --product "$product" >/dev/null
done
bin="$(swift build --scratch-path "$scratch" --show-bin-path)"
demo="$bin/reduxstore-inspector-demo"
work=$(mktemp -d)
# The C program, as a C user builds it: the headers, the two libraries, json-c.
cc -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude $(pkg-config --cflags json-c) \
    Examples/CInspectorDemo/main.c -o "$work/c-inspector-demo" \
    -L"$bin" -lreduxstore-inspector -lreduxstore -Wl,-rpath,"$bin" $(pkg-config --libs json-c)
pids=()
writers=()
cleanup() {
    # Each demo serves until its standard input ends: closing it stops the demo.
    for writer in "${writers[@]}"; do eval "exec $writer>&-"; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill "$pid" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# Starts the program `$@` as NAME; sets `url` to the page's address once it prints it.
start_program() {
    local name=$1; shift
    mkfifo "$work/$name.in"
    "$@" <"$work/$name.in" >"$work/$name.out" 2>"$work/$name.err" &
    pids+=($!)
    local writer
    exec {writer}>"$work/$name.in"
    writers+=("$writer")
    for _ in $(seq 1 600); do
        if [ -s "$work/$name.out" ]; then break; fi
        sleep 0.1
    done
    url=$(grep -o 'http://[^ ]*' "$work/$name.out" | head -1)
    if [ -z "$url" ]; then
        cat "$work/$name.err" >&2
        echo "run.sh: the demo printed no address" >&2
        exit 1
    fi
}

# 1,000 actions: version V applied action V-1; every third (V-1 = 2 mod 3) toggled a todo: 333.
status=0
echo "== the page of a program that does not allow restore"
start_program plain "$demo" --actions 1000
python3 "$here/check_page.py" "$url" 1000 --rows 1000 --select 998 --filter toggle --filtered-rows 333 \
    --restore-forbidden --screenshot "$work/page.png" || status=1

echo "== the page of a program that allows restore"
start_program restoring "$demo" --actions 1000 --allow-restore
python3 "$here/check_page.py" "$url" 1000 --rows 1000 --select 998 --filter todo.add --filtered-rows 667 \
    --restore-allowed || status=1

echo "== the page of a C program that does not allow restore (it records a journal too)"
start_program c-plain "$work/c-inspector-demo" --actions 1000 --journal "$work/c.journal"
python3 "$here/check_page.py" "$url" 1000 --rows 1000 --select 998 --filter toggle --filtered-rows 333 \
    --restore-forbidden || status=1

echo "== the page of a C program that allows restore"
start_program c-restoring "$work/c-inspector-demo" --actions 1000 --allow-restore
python3 "$here/check_page.py" "$url" 1000 --rows 1000 --select 998 --filter todo.add --filtered-rows 667 \
    --restore-allowed || status=1

echo "== the C program's journal, offline: reduxstore-inspect serve JOURNAL --state BASE"
printf '{"todos":[]}' >"$work/base.json"
start_program serve "$bin/reduxstore-inspect" serve "$work/c.journal" --state "$work/base.json"
python3 "$here/check_page.py" "$url" 1000 --rows 1000 --select 998 --filter toggle --filtered-rows 333 \
    --restore-forbidden || status=1

if [ -n "${INSPECTOR_SCREENSHOT:-}" ]; then cp "$work/page.png" "$INSPECTOR_SCREENSHOT"; fi
exit $status
