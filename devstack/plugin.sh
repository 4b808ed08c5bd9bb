#!/bin/bash
# shellcheck shell=bash
#
# plugin.sh - DevStack plugin of iosched
#
# Enable it in local.conf:
#
#     [[local|localrc]]
#     enable_plugin iosched https://opendev.example/iosched
#
# On n-sch nodes it appends iosched's filters and weigher to nova.conf and
# sets its [iosched] options; on n-cpu nodes it writes
# /etc/iosched/host-agent.conf and runs io-host-agent as the DevStack
# service iosched-agent. See devstack/README.md.

# Save trace setting
_XTRACE_IOSCHED_PLUGIN=$(set +o | grep xtrace)
set -o xtrace

# IOSCHED_DIR comes from settings, sourced by DevStack before this file.
# shellcheck source=SCRIPTDIR/lib/iosched
source "$IOSCHED_DIR/devstack/lib/iosched"

if [[ "$1" == "stack" ]]; then
    case "$2" in
        pre-install)
            # Nothing before the other projects install; install_iosched
            # installs libvirt-python's build packages itself.
            :
            ;;
        install)
            echo_summary "Installing iosched"
            install_iosched
            ;;
        post-config)
            echo_summary "Configuring iosched"
            configure_iosched
            ;;
        extra)
            echo_summary "Starting iosched"
            start_iosched
            if [[ "$IOSCHED_CREATE_EXAMPLES" == "True" ]]; then
                echo_summary "Creating iosched example flavors and SLO types"
                create_iosched_examples
            fi
            ;;
        test-config)
            # No tempest plugin yet.
            :
            ;;
    esac
elif [[ "$1" == "unstack" ]]; then
    stop_iosched
elif [[ "$1" == "clean" ]]; then
    cleanup_iosched
fi

# Restore xtrace
$_XTRACE_IOSCHED_PLUGIN
