#!/bin/bash
# shellcheck shell=bash
#
# devstack_functions.sh - the DevStack functions the iosched plugin calls
# (devstack/lib/iosched's "Dependencies"), implemented for iosched-cloud,
# the one-machine cloud without DevStack: real installs, real processes,
# real ini edits. The plugin's test harness (tests/functional/
# devstack_harness/stubs.sh) sources this file too and replaces the
# install and process functions with recording ones.
#
# Set by the caller (iosched/cloud/devstack.py): IOSCHED_CLOUD_PY (a Python
# with iosched importable), IOSCHED_CLOUD_STATE (the cloud's state dir),
# IOSCHED_CLOUD_BIN (the cloud venv's bin), IOSCHED_CLOUD_RABBIT (the
# broker's URL without vhost) and DevStack's own globals.

# Globals set by the caller's environment, not here.
# shellcheck disable=SC2154

# --- ini files (DevStack's inc/ini-config semantics) ----------------------
function _iosched_cloud_ini {
    if [[ "$2" == "-sudo" ]]; then
        set -- "$1" "${@:3}"
    fi
    "$IOSCHED_CLOUD_PY" -m iosched.cloud.devstack_ini "$@"
}
function iniset {
    _iosched_cloud_ini iniset "$@"
}
function iniget {
    _iosched_cloud_ini iniget "$@"
}
function iniget_multiline {
    _iosched_cloud_ini iniget_multiline "$@"
}
function iniset_multiline {
    _iosched_cloud_ini iniset_multiline "$@"
}
function iniadd {
    _iosched_cloud_ini iniadd "$@"
}
function inidelete {
    _iosched_cloud_ini inidelete "$@"
}

# --- services --------------------------------------------------------------
# DevStack's service list: any of the named services is enabled
function is_service_enabled {
    local service
    for service in "$@"; do
        if [[ ,${ENABLED_SERVICES}, == *,${service},* ]]; then
            return 0
        fi
    done
    return 1
}

function enable_service {
    local service
    for service in "$@"; do
        if [[ ,${DISABLED_SERVICES:-}, == *,${service},* ]]; then
            continue
        fi
        if ! is_service_enabled "$service"; then
            ENABLED_SERVICES+=",$service"
        fi
    done
}

function disable_service {
    local service
    for service in "$@"; do
        DISABLED_SERVICES+=",$service"
        ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," | \
            sed -e "s/,$service,/,/g" -e 's/^,//' -e 's/,$//')
    done
}

# trueorfalse DEFAULT VARNAME: True or False from the variable's value
function trueorfalse {
    local default=$1
    local value=${!2:-$default}
    case "${value,,}" in
        1|yes|true|on) echo True ;;
        0|no|false|off) echo False ;;
        *) echo "$default" ;;
    esac
}

function echo_summary {
    echo "==> $*"
}

function die {
    shift
    echo "ERROR: $*" >&2
    exit 1
}

# Debian counts as Ubuntu for DevStack's package names.
function is_ubuntu {
    [[ -r /etc/debian_version ]]
}

function get_python_exec_prefix {
    echo "$IOSCHED_CLOUD_BIN"
}

function get_transport_url {
    echo "${IOSCHED_CLOUD_RABBIT}/$1"
}

# --- installs --------------------------------------------------------------
function install_package {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if (( ${#missing[@]} )); then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
            --no-install-recommends "${missing[@]}"
    fi
}

function pip_install {
    "$IOSCHED_CLOUD_BIN/python" -m pip install -q "$@"
}

# setup_develop DIR - the project in DIR, installed into the cloud's venv as
# a package: an sdist built from DIR (pbr), then pip install of that sdist,
# so the cloud runs what an operator's package install gives, not the tree.
function setup_develop {
    "$IOSCHED_CLOUD_PY" -m iosched.cloud.package "$IOSCHED_CLOUD_STATE" "$1"
}

# --- processes (no systemd: pidfiles and logs under the state dir) ---------
function run_process {
    if [[ "$2" != /* ]]; then
        echo "run_process: $2 is not an absolute path" >&2
        return 1
    fi
    if ! is_service_enabled "$1"; then
        return 0
    fi
    "$IOSCHED_CLOUD_PY" -m iosched.cloud.procs "$IOSCHED_CLOUD_STATE" \
        start "$1" "$2"
}

function stop_process {
    if ! is_service_enabled "$1"; then
        return 0
    fi
    "$IOSCHED_CLOUD_PY" -m iosched.cloud.procs "$IOSCHED_CLOUD_STATE" \
        stop "$1"
}

# $SYSTEMCTL restart devstack@<service>.service
function _iosched_cloud_systemctl {
    local action=$1 unit=${2#devstack@}
    "$IOSCHED_CLOUD_PY" -m iosched.cloud.procs "$IOSCHED_CLOUD_STATE" \
        "$action" "${unit%.service}"
}
# read by lib/iosched ($SYSTEMCTL restart ...)
# shellcheck disable=SC2034
SYSTEMCTL=_iosched_cloud_systemctl
