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
"""Table tests of bench/nova_scale/race.py's settings and summary (the
bursts themselves run in tests/nova/test_placement_race.py).
"""

import argparse

import pytest

from bench.nova_scale import race


def _args(argv):
    return race.parse_args(argv)


# (command line, workers, hosts, boots, room, repeats, gates)
SETTINGS = [
    ([], 3, 3, 9, 6, 3, [True, False]),
    (['--quick'], 2, 2, 6, 4, 1, [True, False]),
    (['--workers', '1', '--hosts', '6'], 1, 6, 18, 12, 3, [True, False]),
    (['--race-workers', '4', '--boots', '7', '--gated-only'],
     4, 3, 7, 6, 3, [True]),
    (['--hosts', '1', '--repeats', '5'], 3, 1, 3, 2, 5, [True, False]),
]


@pytest.mark.parametrize('argv,workers,hosts,boots,room,repeats,gates',
                         SETTINGS)
def test_settings(argv, workers, hosts, boots, room, repeats, gates):
    assert race._settings(_args(argv)) == {
        'workers': workers, 'hosts': hosts, 'boots': boots, 'room': room,
        'repeats': repeats, 'gates': gates}


def test_settings_of_a_bare_namespace():
    """bench.nova_scale may call run() with its own args only."""
    assert race._settings(argparse.Namespace(quick=False))['workers'] == 3


@pytest.mark.parametrize('argv,fragment', [
    (['--workers', '0'], '--race-workers must be >= 1, got 0'),
    (['--repeats', '-1'], '--race-repeats must be >= 1, got -1'),
    (['--hosts', '0', '--boots', '3'], '--race-hosts must be >= 1'),
])
def test_bad_settings(argv, fragment):
    with pytest.raises(ValueError) as err:
        race._settings(_args(argv))
    assert fragment in str(err.value)


def _run(gate, claims, over, active, nvh, failed=False):
    if failed:
        return {'gate': gate, 'claims': claims, 'failed': True}
    return {'gate': gate, 'claims': claims, 'over_committed_hosts': over,
            'excess_io_vcpus': 2 * over, 'active': active,
            'no_valid_host': nvh, 'claims_refused': nvh * 2,
            'seconds': 10.0}


def test_summary_totals_per_configuration():
    settings = {'gates': [True], 'repeats': 2}
    runs = [_run(True, False, 1, 9, 0), _run(True, False, 0, 9, 0),
            _run(True, True, 0, 6, 3), _run(True, True, 0, 0, 0, True)]
    base, fixed = race.summarise(settings, runs)
    assert (base['claims'], base['bursts'], base['over_committed_hosts'],
            base['bursts_with_over_commit'], base['active'],
            base['failed_bursts']) == (False, 2, 1, 1, 18, 0)
    assert (fixed['claims'], fixed['bursts'], fixed['over_committed_hosts'],
            fixed['no_valid_host'], fixed['failed_bursts'],
            fixed['seconds_per_burst']) == (True, 2, 0, 3, 1, 10.0)
