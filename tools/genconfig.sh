#!/usr/bin/env bash
# Regenerate the sample configuration files under etc/iosched/ and the
# option references under docs/config/ from the options the code registers
# (oslo-config-generator). Run after changing an option;
# tests/unit/test_sample_config.py fails while either is stale.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
tmp=$(mktemp -d /tmp/iosched-genconfig.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for conf in etc/oslo-config-generator/*.conf; do
    "$VENV/bin/oslo-config-generator" --config-file "$conf"
    sample=$(sed -n 's/^output_file = //p' "$conf")
    echo "generated $sample"
    name=$(basename "$conf" .conf)
    "$VENV/bin/oslo-config-generator" --config-file "$conf" --format json \
        --output-file "$tmp/$name.json"
    "$VENV/bin/python" tools/config_reference.py "$tmp/$name.json" \
        "$name options" "$sample" > "docs/config/$name.md"
    echo "generated docs/config/$name.md"
done
