#!/bin/bash
# shellcheck shell=bash
#
# with_devstack.sh PHASE... - by hand: the plugin's phases against
# DevStack's own functions-common, inc/ini-config and lib/rpc_backend
# (HARNESS_DEVSTACK_DIR, a DevStack checkout; never committed here).
#
# Stood in: only what needs a DevStack host. sudo (runs the command),
# setup_develop, install_package and systemctl (recorded in HARNESS_CALLS; DevStack's
# run_process still writes its unit file into SYSTEMD_DIR),
# get_python_exec_prefix (HARNESS_BIN_DIR), echo_summary, time_start/stop.

set -o errexit -o pipefail

# read by functions-common
# shellcheck disable=SC2034
TOP_DIR=$HARNESS_DEVSTACK_DIR
# shellcheck source=/dev/null
source "$HARNESS_DEVSTACK_DIR/functions-common"
# shellcheck source=/dev/null
source "$HARNESS_DEVSTACK_DIR/inc/ini-config"
# shellcheck source=/dev/null
source "$HARNESS_DEVSTACK_DIR/lib/rpc_backend"

function _harness_record {
    local IFS=$'\t'
    echo "$*" >> "$HARNESS_CALLS"
}

function sudo {
    "$@"
}

function setup_develop {
    _harness_record setup_develop "$@"
}

function install_package {
    _harness_record install_package "$@"
}

function _harness_systemctl {
    _harness_record systemctl "$@"
}

function get_python_exec_prefix {
    echo "$HARNESS_BIN_DIR"
}

function echo_summary {
    echo "summary: $*"
}

function time_start {
    :
}

function time_stop {
    :
}

# read by DevStack's run_process and stop_process
# shellcheck disable=SC2034
SYSTEMCTL=_harness_systemctl

# settings is checked on its own
# shellcheck source=/dev/null
source "$DEST/iosched/devstack/settings"

for phase in "$@"; do
    # word-splitting intended: "stack install" is two arguments (SC2086);
    # plugin.sh is checked on its own, not followed from here (SC1091)
    # shellcheck disable=SC2086,SC1091
    source "$DEST/iosched/devstack/plugin.sh" $phase
done
