#!/usr/bin/env bash
# Run one benchmark under bench/ with what it needs: Debian packages, the
# venv, libvirtd and tracefs (started only if absent, stopped afterwards).
#   tools/run-bench.sh testbed_lsvm [--seconds 30]
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
name=${1:?usage: tools/run-bench.sh NAME [args]}; shift
# shellcheck source=tools/services.sh
. tools/services.sh
trap stop_started EXIT
ensure_test_packages || echo "warning: could not install packages" >&2
tools/bootstrap.sh || exit 1
case "$name" in
testbed_*|agent_load_libvirt) ensure_libvirtd || exit 1; ensure_tracefs || true ;;
esac
"$VENV/bin/python" "bench/$name.py" "$@"
