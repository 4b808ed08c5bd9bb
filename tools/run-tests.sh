#!/usr/bin/env bash
# The whole test suite: bootstrap the venv, start the services the tests
# need (and stop them afterwards if we started them), then run the suites
# in separate processes (Nova and Cinder both register global options and
# cannot share an interpreter) and print one combined summary line.
set -uo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
# shellcheck source=tools/services.sh
. tools/services.sh
trap stop_started EXIT
# Debian packages first: libvirt-python builds against libvirt-dev.
ensure_test_packages || echo "warning: could not install test packages" >&2
tools/bootstrap.sh || exit 1
ensure_rabbitmq || echo "warning: RabbitMQ unavailable" >&2
ensure_libvirtd || echo "warning: libvirtd unavailable" >&2
ensure_tracefs || echo "warning: tracefs unavailable" >&2
export IOSCHED_RABBIT_URL=${IOSCHED_RABBIT_URL:-rabbit://guest:guest@127.0.0.1:5672/}

results=$(mktemp -d /tmp/iosched-tests.XXXXXX)
status=0
run_suite() {  # name, pytest args...
    local name=$1; shift
    echo "==> tests: $name"
    "$VENV/bin/python" -m pytest -p no:cacheprovider -q \
        --junitxml="$results/$name.xml" "$@"
    local rc=$?
    # 5 = no tests collected in this suite: not a failure by itself.
    if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then status=1; fi
}
if [ $# -gt 0 ]; then
    run_suite selected "$@"          # e.g. tools/run-tests.sh tests/unit -k x
else
    run_suite main tests/unit tests/functional tests/e2e tests/testbed
    run_suite nova tests/nova
    run_suite cinder tests/cinder    # Cinder's own API in-process
    # The one-machine cloud (issue 26): Ceph, the guest image over Nova's
    # serial port, then iosched-cloud up/down with an LSVM, an SLO volume
    # and Placement claims end to end. Needs MariaDB and the Ceph packages.
    ensure_mariadb || echo "warning: MariaDB unavailable" >&2
    "$VENV/bin/python" -m iosched.cloud.ceph install >/dev/null ||
        echo "warning: could not install the Ceph packages" >&2
    run_suite cloud tests/cloud
fi

"$VENV/bin/python" - "$results" <<'PY'
import glob, sys, xml.etree.ElementTree as ET
t = {'tests': 0, 'failures': 0, 'errors': 0, 'skipped': 0}
for path in glob.glob(sys.argv[1] + '/*.xml'):
    root = ET.parse(path).getroot()
    for suite in ([root] if root.tag == 'testsuite' else root.iter('testsuite')):
        for k in t:
            t[k] += int(suite.get(k, 0))
passed = t['tests'] - t['failures'] - t['errors'] - t['skipped']
print('iosched: %d passed, %d failed, %d skipped'
      % (passed, t['failures'] + t['errors'], t['skipped']))
PY
exit $status
