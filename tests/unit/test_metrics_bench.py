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
"""bench/metrics_overhead.py runs (a tiny host, a few ticks): it keeps
working as the agent changes. No timing is asserted.
"""

from bench import metrics_overhead


def test_bench_measures_both_modes(tmp_path, capsys):
    (row,) = metrics_overhead.main(['--vcpus', '8', '--ticks', '6',
                                    '--scrapes', '2'])
    assert row['vcpus'] == 8 and row['knobs'] > 0
    assert row['tick_off_ms'] > 0 and row['tick_on_ms'] > 0
    assert row['render_ms'] > 0 and row['http_ms'] > 0
    assert row['bytes'] > 1000
    assert 'on/off' in capsys.readouterr().out
