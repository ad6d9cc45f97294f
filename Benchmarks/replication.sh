#!/usr/bin/env bash
# Replication on PostgreSQL against PostgreSQL's own insert rate: builds ReplicationBench in
# release, runs every figure on a throwaway cluster (scripts/postgres), then the followers on a hot
# standby on a throwaway pair (start-pair); both stopped at the end
# (Tools/ReplicationBench/main.swift says what each figure is).
#
#   bash Benchmarks/replication.sh [seconds]      # 5 seconds a figure by default
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-5}
swift build -c release --product ReplicationBench >/dev/null
bin="$(swift build -c release --show-bin-path)"
folder=$(mktemp -d)
pair=$(mktemp -d)
stop() {
    bash ../scripts/postgres stop "$folder" >/dev/null 2>&1 || true
    bash ../scripts/postgres stop "$pair" >/dev/null 2>&1 || true
    rm -rf "$folder" "$pair"
}
trap stop EXIT
# Every figure but the standby's on a server without a standby (a standby's WAL sender works at
# every commit, on the same 2 cores), then the standby's on a pair.
eval "$(bash ../scripts/postgres start "$folder")"
echo "server: PostgreSQL $(psql -X -A -t -c 'SHOW server_version' "$REDUXSTORE_TEST_POSTGRES"), a throwaway cluster in $folder"
"$bin/ReplicationBench" all "$REDUXSTORE_TEST_POSTGRES" "$seconds"
bash ../scripts/postgres stop "$folder" >/dev/null
eval "$(bash ../scripts/postgres start-pair "$pair")"
echo
echo "a throwaway primary and its streaming hot standby in $pair"
"$bin/ReplicationBench" standby "$REDUXSTORE_TEST_POSTGRES" "$seconds" "$REDUXSTORE_TEST_POSTGRES_STANDBY"
