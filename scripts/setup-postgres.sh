#!/usr/bin/env bash
# Installs Debian's PostgreSQL for the store handler's tests (tests/server, started by
# tests/support/postgres.mjs as a throwaway cluster), idempotently; needs root. The package's
# own cluster is not used: the tests run initdb as the `postgres` user the package creates.
set -euo pipefail

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "installing postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi
ls /usr/lib/postgresql/*/bin/initdb
