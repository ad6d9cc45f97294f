#!/usr/bin/env bash
# Replication on PostgreSQL against PostgreSQL's own insert rate: starts a throwaway cluster
# and its streaming hot standby (scripts/postgres start-pair, stopped at the end), builds ReplicationBench in release and runs every figure
# (Tools/ReplicationBench/main.swift says what each is).
#
#   bash Benchmarks/replication.sh [seconds]      # 5 seconds a figure by default
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-5}
swift build -c release --product ReplicationBench >/dev/null
bin="$(swift build -c release --show-bin-path)"
folder=$(mktemp -d)
stop() { bash ../scripts/postgres stop "$folder" >/dev/null 2>&1 || true; rm -rf "$folder"; }
trap stop EXIT
eval "$(bash ../scripts/postgres start-pair "$folder")"
echo "server: PostgreSQL $(psql -X -A -t -c 'SHOW server_version' "$REDUXSTORE_TEST_POSTGRES"), a throwaway cluster in $folder"
"$bin/ReplicationBench" all "$REDUXSTORE_TEST_POSTGRES" "$seconds" "$REDUXSTORE_TEST_POSTGRES_STANDBY"
