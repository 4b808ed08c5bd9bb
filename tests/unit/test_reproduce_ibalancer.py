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
"""bench/reproduce/ibalancer: every quick experiment gives well-formed rows,
and the exact rows (Eq. 5's worked example, Eq. 3's periods) match.
"""

import pytest

from bench.reproduce import harness
from bench.reproduce import ibalancer
from tests.unit import reproduce_quick


@pytest.mark.parametrize('name,fn', ibalancer.EXPERIMENTS,
                         ids=[n for n, _ in ibalancer.EXPERIMENTS])
def test_quick_experiment_rows(name, fn):
    rows = reproduce_quick.rows('ibalancer', name)
    assert rows
    for r in rows:
        assert isinstance(r, harness.Row) and r.paper_id == 'ibalancer'
        assert r.claim and r.setting and r.metric
        assert r.ours is not None, (r.setting, r.metric)
        if r.kind != 'info' and r.paper != 0:
            assert r.ratio is not None
        r.as_dict()


def test_equation_rows_are_identities_that_hold_exactly():
    rows = reproduce_quick.rows('ibalancer', 'equations')
    exact = [r for r in rows if r.kind != 'info']
    assert len(exact) == 7
    assert all(r.verdict == 'identity' for r in exact)
    assert all(r.ours == pytest.approx(r.paper, rel=1e-3) for r in exact)
    assert {r.paper for r in exact} >= {280.0, 120.0, 200.0, 0.96, 0.32}


def test_headline_rows_carry_the_papers_table_figures():
    # Table 6's (e) row, not the prose's -70.7 / -71.7 % (shown beside)
    rows = {(r.setting, r.metric): r
            for r in reproduce_quick.rows('ibalancer', 'network_union')}
    mad = rows[('union (e) 10 VMs, Credit1', 'MAD change (%)')]
    sd = rows[('union (e) 10 VMs, Credit1', 'SD change (%)')]
    assert (sd.paper, mad.paper) == (-53.8, -42.9)
    assert (sd.paper_other, mad.paper_other) == ('prose -70.7',
                                                  'prose -71.7')
    assert sd.paper_text() == '-53.8 (prose -70.7)'
    ratio = rows[('union, Credit1, stock', 'per-VM mean ratio')]
    assert ratio.paper == 0.914 and ratio.kind == 'value'
    mixed = {(r.setting, r.metric): r
             for r in reproduce_quick.rows('ibalancer', 'network_mixed')}
    sd = mixed[('mixed (j) 8 VMs, Credit1', 'SD change (%)')]
    assert sd.paper == -28.9 and sd.paper_other == 'prose -40.0'
    disk = {(r.setting, r.metric): r
            for r in reproduce_quick.rows('ibalancer', 'disk')}
    assert disk[('(b) 8 KB, Credit1', 'MAD change (%)')].paper == -61.0


def test_registered_in_the_runner():
    from bench.reproduce import __main__ as runner
    assert 'ibalancer' in runner.MODULES


def test_union_arithmetic_rows_count_the_papers_breaks():
    rows = {(r.setting, r.metric): r for r in ibalancer.union_arithmetic(True)}
    assert all(r.kind == 'info' for r in rows.values())
    assert rows[('Table 7 (Credit2), 8 union rows',
                 'rows breaking |mean - median| <= SD')].ours == 8
    assert rows[('prose of 10(e), 2 union rows',
                 'rows breaking MAD <= SD')].ours == 2
    assert rows[('union (e), stock: Table 6 vs Table 7',
                 'equal cells of 4 (mean, SD, MAD, median)')].ours == 4


@pytest.mark.parametrize('mb_s', [100.0, 168.9, 300.0])
def test_wire_for_rate_inverts_the_window_law(mb_s):
    """One uncontended window-limited sender gets mb_s with that wire."""
    from bench.reproduce import independent_math as im
    from iosched.simulator.ibalancer import model
    s = model.Scenario()
    wire = ibalancer.wire_for_rate(mb_s, s)
    rtt = s.net_service_us + wire + s.irq_us
    got = im.ibalancer_window_mb_s(0, s.window, s.io_chunk_us, rtt,
                                   s.net_kb)
    assert got == pytest.approx(mb_s, rel=0.002)
