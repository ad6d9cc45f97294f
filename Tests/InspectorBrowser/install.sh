#!/usr/bin/env bash
# Installs what run.sh needs and a fresh Debian machine lacks: Debian's chromium and
# chromium-driver, PyPI's selenium. Does nothing when they are there.
set -euo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "== installing chromium and chromium-driver"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq chromium chromium-driver >/dev/null </dev/null
fi
if ! python3 -c "import selenium" >/dev/null 2>&1; then
    echo "== installing selenium"
    python3 -m pip install --quiet selenium
fi
