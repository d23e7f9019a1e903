#!/usr/bin/env bash
# Installs Debian's PostgreSQL for the store handler's tests (tests/server, started by
# tests/support/postgres.mjs as a throwaway cluster), idempotently; needs root. The package's
# own cluster is not used: the tests run initdb as the `postgres` user the package creates.
# Also pg_auto_failover (its Postgres extension and pg_autoctl), for the failover test
# (tests/failover, started by tests/support/failover.mjs).
set -euo pipefail

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "installing postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi
major=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! command -v pg_autoctl >/dev/null || [ ! -f "/usr/share/postgresql/$major/extension/pgautofailover.control" ]; then
  echo "installing pg_auto_failover for PostgreSQL $major"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "postgresql-$major-auto-failover" pg-auto-failover-cli >/dev/null
fi
ls /usr/lib/postgresql/*/bin/initdb
pg_autoctl --version | head -1
