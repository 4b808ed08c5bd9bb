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
"""Table tests of iosched.nova_plugin.inflight (no Nova: duck-typed host
states).
"""

import types

import pytest

from iosched.nova_plugin import inflight
from iosched.nova_plugin import scoring
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports

D = inflight.Delta
P = scoring.Pending


# looks: (report key, num_instances, vcpus_used) -> want delta, in order
TRACKER_CASES = [
    ('first look takes the baseline',
     [('r1', 5, 10, D())]),
    ('growth since the baseline is the delta',
     [('r1', 5, 10, D()), ('r1', 6, 12, D(1, 2)), ('r1', 8, 18, D(3, 8))]),
    ('a newer report resets the baseline',
     [('r1', 5, 10, D()), ('r1', 6, 12, D(1, 2)), ('r2', 6, 12, D()),
      ('r2', 7, 16, D(1, 4))]),
    ('a compute node refresh below the baseline counts as 0',
     [('r1', 5, 10, D()), ('r1', 4, 8, D(0, 0)), ('r1', 6, 11, D(1, 1))]),
    ('None and floats from a HostState are read as numbers',
     [('r1', None, None, D()), ('r1', 1, 2.0, D(1, 2))]),
]


@pytest.mark.parametrize('name,looks', TRACKER_CASES,
                         ids=[c[0] for c in TRACKER_CASES])
def test_tracker(name, looks):
    t = inflight.Tracker()
    for key, n, v, want in looks:
        assert t.observe('h', key, n, v) == want


def test_tracker_memory_is_bounded_least_recent_first():
    t = inflight.Tracker(max_hosts=2)
    t.observe('a', 'r', 0, 0)
    t.observe('b', 'r', 0, 0)
    t.observe('a', 'r', 1, 1)          # 'a' is now the most recent
    t.observe('c', 'r', 0, 0)          # evicts 'b'
    assert len(t) == 2
    assert t.observe('a', 'r', 2, 2) == D(2, 2)
    assert t.observe('b', 'r', 9, 9) == D()      # baseline taken again


def test_tracker_refuses_a_bad_bound():
    with pytest.raises(ValueError, match='max_hosts must be >= 1'):
        inflight.Tracker(max_hosts=0).observe('a', 'r', 0, 0)


# exact (note_placement), Nova's delta, profile -> want Pending
COMBINE_CASES = [
    ('nothing pending', None, D(), 'mixed', P()),
    ('mixed: 2 unknown vCPUs are I/O vCPUs at 0.5 each',
     None, D(1, 2), 'mixed',
     P(1, 2, 0, 1.0, 2, 1, 2, 'mixed')),
    ('io: worst case, 1.0 each',
     None, D(1, 2), 'io', P(1, 2, 0, 2.0, 2, 1, 2, 'io')),
    ('cpu: counted as placements and vCPUs, not as I/O',
     None, D(2, 6), 'cpu', P(2, 0, 0, 0.0, 6, 2, 6, 'cpu')),
    ('a noted placement is not counted twice',
     P(1, 2, 0, 2.0), D(1, 2), 'io', P(1, 2, 0, 2.0, 2)),
    ('noted LSVM + one unknown: 4 - 1 known vCPUs estimated',
     P(1, 0, 1, 0.0), D(2, 4), 'mixed',
     P(2, 3, 1, 1.5, 4, 1, 3, 'mixed')),
    ('noted but not (yet) in HostState: the notes stay',
     P(2, 4, 0, 4.0), D(), 'mixed', P(2, 4, 0, 4.0, 4)),
    ('more vCPUs than the notes know but no unknown placement: only vcpus',
     P(1, 0, 0, 0.0), D(1, 4), 'io', P(1, 0, 0, 0.0, 4)),
]


@pytest.mark.parametrize('name,exact,delta,profile,want', COMBINE_CASES,
                         ids=[c[0] for c in COMBINE_CASES])
def test_combine(name, exact, delta, profile, want):
    assert inflight.combine(exact, delta, profile) == want


def test_combine_refuses_an_unknown_profile():
    with pytest.raises(ValueError, match='one of mixed, cpu, io'):
        inflight.combine(None, D(1, 1), 'disk')


def test_pending_for_reads_the_host_state_and_the_store():
    clock = reports.FakeClock(1000.0)
    reports_ = store.ReportStore(clock=clock)
    r1 = reports.report(host='h', ts=1000.0, seq=1)
    reports_.update(r1)
    tracker = inflight.Tracker()
    hs = types.SimpleNamespace(host='h', nodename='n', num_instances=3,
                               vcpus_used=6)

    def pending(report):
        return inflight.pending_for(reports_, hs, report, 'mixed', tracker)
    assert pending(r1) == P()
    hs.num_instances, hs.vcpus_used = 4, 8          # Nova placed 2 vCPUs
    reports_.note_placement('h', 0, lsvm_vcpus=0)   # and a noted one
    got = pending(r1)
    assert (got.placements, got.vcpus, got.estimated_placements) == (1, 2, 0)
    hs.num_instances, hs.vcpus_used = 5, 12         # one more, unknown
    got = pending(r1)
    # The note of the first placement (neither I/O nor LSVM) does not say
    # its vCPUs, so all 6 count as unknown: an upper bound.
    assert (got.placements, got.io_vcpus, got.estimated_vcpus) == (2, 6, 6)
    assert 'inflight_vcpu_profile=mixed' in scoring.pending_note(got)
    r2 = reports.report(host='h', ts=1001.0, seq=2)
    reports_.update(r2)                             # clears both parts
    assert pending(r2) == P()


def test_conf_option_default_and_choices():
    from oslo_config import cfg

    from iosched.nova_plugin import conf as iosched_conf
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    conf([], default_config_files=[])
    assert conf.iosched.inflight_vcpu_profile == 'mixed'
    assert set(inflight.PROFILES) == {'mixed', 'cpu', 'io'}
    with pytest.raises(ValueError):
        conf.set_override('inflight_vcpu_profile', 'disk', group='iosched')
