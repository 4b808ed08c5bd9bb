#!/usr/bin/env bash
# Regenerate the sample configuration files under etc/iosched/ from the
# options the code registers (oslo-config-generator). Run after changing an
# option; tests/unit/test_sample_config.py fails while a sample is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
for conf in etc/oslo-config-generator/*.conf; do
    "$VENV/bin/oslo-config-generator" --config-file "$conf"
    echo "generated $(sed -n 's/^output_file = //p' "$conf")"
done
