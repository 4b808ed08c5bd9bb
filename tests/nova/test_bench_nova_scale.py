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
"""Smoke test of bench/nova_scale: both parts at a tiny size.

Part 1: runs ``python -m bench.nova_scale --quick --no-rabbit`` in a
subprocess (it imports Nova and parses its configuration) and checks the
JSON: every host count has its Nova-default and with-iosched figures and
their ratio, the plugin's filters and weighers were picked up through their
function paths, iosched's filters never let more hosts through than Nova's
alone, and the memory figures are there.

Part 2: ``--quick --no-handlers`` against the real RabbitMQ (skipped
locally without a broker, a failure under CI=true), unsigned through the
command line and signed (RPC 1.2, ``report_auth = hmac``) through
``pipeline.run``: every iosched worker took every report the publishers
sent (none lost after the drain, none dropped), as did the bare servers,
and the CPU figures and ratios are there. No timed assertion.
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


# pipeline.run with --sign (the agents' signing client, hmac workers)
_SIGNED = (
    'import json, sys\n'
    'from bench.nova_scale import __main__ as m, pipeline\n'
    'if __name__ == "__main__":\n'
    '    args = m.parse_args(sys.argv[2:])\n'
    '    args.sign = True\n'
    '    fig = pipeline.run(args, log=m._log)\n'
    '    pipeline.print_table(fig)\n'
    '    with open(sys.argv[1], "w") as fh:\n'
    '        json.dump({"pipeline": fig}, fh, default=str)\n')


@pytest.mark.parametrize('signed', [False, True])
def test_quick_pipeline_run_through_rabbitmq(tmp_path, signed):
    url = fixtures.rabbit_url()
    out = tmp_path / 'nova_scale.json'
    argv = ['--quick', '--no-handlers', '--url', url]
    cmd = ([sys.executable, '-c', _SIGNED, str(out)] + argv if signed else
           [sys.executable, '-m', 'bench.nova_scale', '-o', str(tmp_path)]
           + argv)
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
