#!/usr/bin/env bash
# Create or refresh the project's virtualenv (.venv) with everything the
# demo and the tests need. Idempotent: does nothing when the requirement
# files did not change since the last successful run.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
stamp="$VENV/.iosched-bootstrap"
want=$(cat setup.py setup.cfg pyproject.toml requirements.txt \
        test-requirements.txt | sha256sum | cut -c1-16)

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
    exit 0
fi
log=$(mktemp /tmp/iosched-bootstrap.XXXXXX.log)
echo "==> bootstrap: Python venv in $VENV (log: $log)"
"$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), sys.version' || {
    echo "iosched needs Python >= 3.11; found $("$PYTHON" --version 2>&1)" >&2; exit 1; }
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# libvirt-python (a runtime requirement: the agent's libvirt driver) has
# no wheel: pip builds it against libvirt's headers. Installs the Debian
# packages when they are missing (root), else says which ones.
if ! "$VENV/bin/python" -c 'import libvirt' 2>/dev/null &&
   ! { pkg-config --exists libvirt 2>/dev/null &&
       [ -f "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ] &&
       command -v cc >/dev/null 2>&1; }; then
    # shellcheck source=tools/services.sh
    . tools/services.sh
    ensure_build_packages || {
        echo "bootstrap: pip cannot build libvirt-python without libvirt's headers," \
             "pkg-config, Python's headers and a C compiler;" \
             "on Debian/Ubuntu: apt-get install $BUILD_PACKAGES" >&2
        exit 1; }
fi
# The extras: demo (make demo), testbed, iotrace; Nova and Cinder for the
# plugin tests (setup.cfg [extras]).
echo "==> bootstrap: installing iosched, Nova, Cinder and test requirements and compiling the simulator's core (3-4 min on a fresh machine)"
if ! { "$VENV/bin/pip" install -q -U pip &&
       "$VENV/bin/pip" install -q -e '.[nova,cinder,demo,testbed,iotrace,cloud]' \
           -r test-requirements.txt; } >"$log" 2>&1; then
    grep -v "is ignored: it is neither" "$log" | tail -30 >&2
    echo "bootstrap failed; full log: $log" >&2
    exit 1
fi
# The openstack.cloud Ansible collection (the rollout's flavor tasks): no
# Galaxy access from CI machines, so take it from the ansible wheel on
# PyPI, which bundles it (only that collection is unpacked, into
# $VENV/share/ansible_collections).
echo "==> bootstrap: openstack.cloud collection (from the ansible wheel)"
coll=$(mktemp -d /tmp/iosched-ansible.XXXXXX)
if "$VENV/bin/pip" download -q --no-deps -d "$coll" 'ansible==12.3.0' >>"$log" 2>&1 &&
   "$VENV/bin/python" - "$coll" "$VENV/share" >>"$log" 2>&1 <<'PY'
import glob, sys, zipfile
with zipfile.ZipFile(glob.glob(sys.argv[1] + '/ansible-*.whl')[0]) as z:
    z.extractall(sys.argv[2], [n for n in z.namelist() if n.startswith(
        'ansible_collections/openstack/cloud/')])
PY
then :; else echo "warning: openstack.cloud collection not installed; log: $log" >&2; fi
rm -rf "$coll"
echo "$want" > "$stamp"
echo "==> bootstrap: done"
