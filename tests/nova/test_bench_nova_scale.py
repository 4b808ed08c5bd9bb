# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""Smoke test of bench/nova_scale: the handler part at a tiny size.

Runs ``python -m bench.nova_scale --quick --no-rabbit`` in a subprocess
(it imports Nova and parses its configuration) and checks the JSON: every
host count has its Nova-default and with-iosched figures and their ratio,
the plugin's filters and weighers were picked up through their function
paths, iosched's filters never let more hosts through than Nova's alone,
and the memory figures are there. No timed assertion.
"""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_quick_handlers_run_writes_ratios(tmp_path):
    proc = subprocess.run(
        [sys.executable, '-m', 'bench.nova_scale', '--quick', '--no-rabbit',
         '-o', str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
        timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'Part 1: filter + weigher cost per request' in proc.stdout
    fig = json.loads((tmp_path / 'nova_scale.json').read_text())
    assert fig['pipeline'] is None
    handlers = fig['handlers']
    names = handlers['names']
    assert 'IoDensityFilter' in names['iosched_filters']
    assert 'IoStrengthWeigher' in names['iosched_weighers']
    assert 'RAMWeigher' in names['nova_weighers']
    assert [r['hosts'] for r in handlers['per_size']] == [20, 50]
    for row in handlers['per_size']:
        default = row['nova_default_us_per_request']
        with_iosched = row['with_iosched_us_per_request']
        assert default > 0 and with_iosched > 0
        assert abs(row['with_iosched_over_default'] -
                   with_iosched / default) < 0.01
        assert row['iosched_alone_us_per_request'] > 0
        passed = row['hosts_passed_per_request']
        # every host is up and fits Nova's filters; iosched only removes
        assert passed['default'] == row['hosts']
        assert 0 < passed['iosched'] <= passed['default']
    memory = handlers['memory']
    assert memory['hosts'] == 50
    assert memory['store_bytes_per_host'] > 1000
    assert memory['nova_host_state_bytes_per_host'] > 1000
    assert memory['store_over_host_state'] > 0
