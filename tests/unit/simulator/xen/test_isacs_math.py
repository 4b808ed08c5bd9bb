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
"""The Credit2 model's run-queue reallocation (Eqs. 2-4 applied in two
passes) and Algorithm 2's choices, hand-computed. The equations alone:
tests/unit/contract/test_isacs.py.
"""

import pytest

from iosched.simulator.xen import isacs_math as m


def test_reallocate_two_passes():
    # rows: (E_n, Ibar, consumed); mean consumed = 40000 / 4 = 10000
    rows = [(0, None, 12000), (0, None, 8000), (20, 300.0, 15000),
            (10, 200.0, 5000)]
    ivcs, members, cvcs, load = m.reallocate(rows, 10000)
    # 20*300*1.5 = 9000; 10*200*0.5 = 1000; mean positive 5000
    assert ivcs == pytest.approx([0, 0, 9000, 1000])
    assert members == [True, True, False, True]
    # j = 3 (final size); sum 10000 / 3 * consumed / 10 ms
    assert cvcs == pytest.approx([4000, 10000 / 3 * 0.8, 0, 10000 / 3 * 0.5])
    assert load == pytest.approx(10000)


def test_reallocate_caps_and_no_io():
    ivcs, members, cvcs, load = m.reallocate(
        [(100, 1000.0, 10000), (0, None, 10000)], 10000, cap=10000)
    assert ivcs == [10000, 0] and members == [False, True]
    assert cvcs == pytest.approx([0, 10000])
    ivcs, members, cvcs, load = m.reallocate(
        [(0, None, 10000), (0, None, 10000)], 10000)
    assert members == [False, False] and cvcs == [0, 0] and load == 0


@pytest.mark.parametrize('src,io_events,expected', [
    (1, [(0, 5), (1, 10), (2, 3), (3, 12)], 2),     # last qualifying
    (1, [(0, 5), (1, 10), (2, 3), (3, 8)], 3),
    (0, [(0, 5), (1, 10), (2, 5)], None),           # RunQ_d unset
    (0, [(0, 5)], None),
])
def test_alg2_destination(src, io_events, expected):
    assert m.pick_destination(src, io_events) == expected


@pytest.mark.parametrize('load_s,load_d,cands,expected', [
    # gap 8000: IVCredit < 4000 qualifies; the last one wins
    (10000, 2000, [('a', 1000), ('b', 3000), ('c', 5000)], 'b'),
    (10000, 2000, [('b', 3000), ('a', 1000), ('c', 5000)], 'a'),
    (10000, 2000, [('a', 0), ('b', 0)], None),      # CPU-bound: never
    (10000, 2000, [('a', 4000)], None),             # strict: equal loads
    (20000, 0, [('a', 10000), ('b', 10000)], None),
])
def test_alg2_migrant(load_s, load_d, cands, expected):
    assert m.pick_migrant(load_s, load_d, cands) == expected
