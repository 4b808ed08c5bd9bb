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
"""Smoke test of bench/nova_scale: its three parts at a tiny size.

Part 1: runs ``python -m bench.nova_scale --quick --no-rabbit --no-race``
in a subprocess (it imports Nova and parses its configuration) and checks
the JSON: every host count has its Nova-default and with-iosched figures
and their ratio, the plugin's filters and weighers were picked up through
their function paths, iosched's filters never let more hosts through than
Nova's alone, and the memory figures are there.

Part 2: ``--quick --no-handlers --no-race`` against the real RabbitMQ
(skipped locally without a broker, a failure under CI=true), unsigned and
``--sign`` (RPC 1.2, ``report_auth = hmac``): every iosched worker took
every report the publishers sent (none lost after the drain, none
dropped), as did the bare servers, and the CPU figures and ratios are
there.

Part 3: ``--quick --no-rabbit --no-handlers``: the Placement-claims race
in Nova's functional harness through the bench's command line; with
claims no host is over-committed, without them (gated) one is.

No timed assertion.
"""

import json
import os
import subprocess
import sys

import pytest

from tests import fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_quick_handlers_run_writes_ratios(tmp_path):
    proc = subprocess.run(
        [sys.executable, '-m', 'bench.nova_scale', '--quick', '--no-rabbit',
         '--no-race', '-o', str(tmp_path)], cwd=ROOT, capture_output=True,
        text=True,
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


@pytest.mark.parametrize('signed', [False, True])
def test_quick_pipeline_run_through_rabbitmq(tmp_path, signed):
    url = fixtures.rabbit_url()
    out = tmp_path / 'nova_scale.json'
    cmd = [sys.executable, '-m', 'bench.nova_scale', '-o', str(tmp_path),
           '--quick', '--no-handlers', '--no-race', '--url', url]
    if signed:
        cmd.append('--sign')
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=dict(os.environ, PYTHONPATH=ROOT))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'Part 2: report pipeline through RabbitMQ' in proc.stdout
    fig = json.loads(out.read_text())['pipeline']
    assert fig['signed'] is signed
    for kind in ('iosched', 'baseline'):
        agg = fig[kind]
        sent = agg['sent']
        assert sent > 0
        # every worker took every report cast in its phase: none lost
        assert agg['received_per_worker'] == [sent] * agg['workers'], kind
        assert agg['unreceived_fraction'] == 0
        assert agg['cpu_s_per_1000_reports'] > 0
    for worker in fig['iosched']['per_worker']:
        counts = worker['counts']
        # taken by the store (signature and head checked), not dropped
        assert counts['dropped'] == 0
        assert counts['stored'] + counts['ignored'] == worker['received']
        assert counts['hosts'] == fig['hosts']
    # the endpoint's own share (signature check, parse, store) is measured
    assert 0 < fig['iosched']['endpoint_cpu_s_per_1000_reports'] < \
        fig['iosched']['cpu_s_per_1000_reports']
    ratios = fig['iosched_over_baseline']
    assert ratios['cpu_s_per_1000_reports'] > 0
    assert ratios['received_per_s'] == 1.0


def test_quick_race_counts_over_commit_without_claims_only(tmp_path):
    """Part 3 quick: the race's bursts in Nova's harness through the
    bench's own command line (child process, summary, JSON).
    """
    proc = subprocess.run(
        [sys.executable, '-m', 'bench.nova_scale', '--quick', '--no-rabbit',
         '--no-handlers', '-o', str(tmp_path)], cwd=ROOT,
        capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert 'over-committed hosts: without claims' in proc.stdout
    fig = json.loads((tmp_path / 'nova_scale.json').read_text())
    assert fig['handlers'] is None and fig['pipeline'] is None
    summary = {(row['gate'], row['claims']): row
               for row in fig['race']['summary']}
    assert summary[(True, True)]['failed_bursts'] == 0
    for (gate, claims), row in summary.items():
        if claims:
            assert row['over_committed_hosts'] == 0, row
    # gated, the burst exceeds the room: without claims a host must be
    # over-committed (pigeonhole), which is the race the claims fix
    assert summary[(True, False)]['over_committed_hosts'] >= 1
