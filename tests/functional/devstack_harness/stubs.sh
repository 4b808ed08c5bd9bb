#!/bin/bash
# shellcheck shell=bash
#
# Stand-ins for the DevStack functions the iosched plugin calls.
#
# The ini and service-list functions are iosched-cloud's real ones
# (iosched/cloud/devstack_functions.sh); the install and process functions
# record their arguments, one call per line,
# tab-separated, in $HARNESS_CALLS. Set by the test (run.sh's caller):
# HARNESS_DIR, HARNESS_CALLS, HARNESS_PYTHON, HARNESS_BIN_DIR,
# HARNESS_RABBIT_URL and DevStack's own globals (ENABLED_SERVICES, ...).

# Globals set by the test's environment, not here.
# shellcheck disable=SC2154

function _harness_record {
    local IFS=$'\t'
    echo "$*" >> "$HARNESS_CALLS"
}

# The functions that are the same for a cloud without DevStack (ini files,
# the service list, trueorfalse): iosched-cloud's, with this Python.
IOSCHED_CLOUD_PY=$HARNESS_PYTHON
# shellcheck source=SCRIPTDIR/../../../iosched/cloud/devstack_functions.sh
source "$HARNESS_DIR/../../../iosched/cloud/devstack_functions.sh"

# By hand, with a checkout of DevStack at hand: its own ini functions
# instead (HARNESS_DEVSTACK_DIR=/path/to/devstack; never committed here).
if [[ -n "${HARNESS_DEVSTACK_DIR:-}" ]]; then
    # shellcheck source=/dev/null
    source "$HARNESS_DEVSTACK_DIR/inc/ini-config"
fi

function echo_summary {
    echo "summary: $*"
}
function get_python_exec_prefix {
    echo "$HARNESS_BIN_DIR"
}

function get_transport_url {
    echo "${HARNESS_RABBIT_URL}$1"
}

function setup_develop {
    _harness_record setup_develop "$@"
}
function install_package {
    _harness_record install_package "$@"
}
function is_ubuntu {
    return 0
}
function pip_install {
    _harness_record pip_install "$@"
}

# run_process / stop_process record; with HARNESS_PROCESS_DIR set they
# also start the command for real (HARNESS_PROCESS_ARGS appended, output
# in <dir>/<service>.log) and stop it with SIGTERM, as systemd does.
function run_process {
    # DevStack refuses a command that is not an absolute path
    if [[ "$2" != /* ]]; then
        echo "run_process: $2 is not an absolute path" >&2
        return 1
    fi
    if ! is_service_enabled "$1"; then
        return 0
    fi
    _harness_record run_process "$@"
    if [[ -n "${HARNESS_PROCESS_DIR:-}" ]]; then
        local dir=$HARNESS_PROCESS_DIR
        # one command string, split into words as systemd's ExecStart does
        # shellcheck disable=SC2086
        $2 ${HARNESS_PROCESS_ARGS:-} >> "$dir/$1.log" 2>&1 < /dev/null &
        echo $! > "$dir/$1.pid"
    fi
}

function stop_process {
    if ! is_service_enabled "$1"; then
        return 0
    fi
    _harness_record stop_process "$@"
    local pidfile=${HARNESS_PROCESS_DIR:-/nonexistent}/$1.pid
    if [[ -f "$pidfile" ]]; then
        local pid
        pid=$(cat "$pidfile")
        rm -f "$pidfile"
        kill -TERM "$pid" 2>/dev/null || return 0
        # TimeoutStopSec of DevStack's units: 300 s
        local i
        for i in $(seq 1 300); do
            kill -0 "$pid" 2>/dev/null || return 0
            sleep 1
        done
        echo "stop_process: $1 ($pid) still running after $i s" >&2
        return 1
    fi
}

function die {
    shift
    echo "die: $*" >&2
    exit 1
}

function _harness_systemctl {
    _harness_record systemctl "$@"
}
# read by lib/iosched ($SYSTEMCTL restart ...)
# shellcheck disable=SC2034
SYSTEMCTL=_harness_systemctl

# The test runs as whoever it is; nothing here needs another user.
function sudo {
    "$@"
}

# openstack CLI: records; "flavor show" finds the flavors created before
function openstack {
    _harness_record openstack "$@"
    local flavors=$HARNESS_CALLS.flavors
    if [[ "$3 $4" == "flavor show" ]]; then
        grep -qxF -- "$5" "$flavors" 2>/dev/null
        return
    fi
    if [[ "$3 $4" == "flavor create" ]]; then
        echo "${*: -1}" >> "$flavors"
    fi
}
