#!/bin/bash
# shellcheck shell=bash
#
# run.sh PHASE... - run the iosched plugin's phases against stubs.sh
#
# Each PHASE is one word list as stack.sh, unstack.sh and clean.sh pass
# them to plugin.sh: "stack install", "stack post-config", "unstack", ...
# Like those scripts, one process: settings first, then plugin.sh sourced
# once per phase. DEST must hold the plugin as $DEST/iosched (enable_plugin
# clones it there). errexit and nounset are on: stack.sh runs with errexit,
# and NOUNSET=1 stack.sh with nounset.

set -o errexit -o pipefail
# nounset too, except with DevStack's own ini functions (HARNESS_DEVSTACK_DIR):
# its iniset_multiline reads an unset variable.
if [[ -z "${HARNESS_DEVSTACK_DIR:-}" ]]; then
    set -o nounset
fi

HARNESS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export HARNESS_DIR

# shellcheck source=SCRIPTDIR/stubs.sh
source "$HARNESS_DIR/stubs.sh"
# settings is checked on its own
# shellcheck source=/dev/null
source "$DEST/iosched/devstack/settings"

for phase in "$@"; do
    # word-splitting intended: "stack install" is two arguments (SC2086);
    # plugin.sh is checked on its own, not followed from here (SC1091)
    # shellcheck disable=SC2086,SC1091
    source "$DEST/iosched/devstack/plugin.sh" $phase
done
