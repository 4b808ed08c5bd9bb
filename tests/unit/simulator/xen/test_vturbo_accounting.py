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
"""vTurbo's two-pool accounting against Table 3.1 (values in % of a core)."""

import pytest

from iosched.simulator.xen import vturbo_accounting as va

W = {'vm1': 1, 'vm2': 1}

# Table 3.1: demand (reg, turbo), measured (rd, td), allocated (FS^R,
# FS^T as printed), consumed (reg, turbo); VM1 then VM2.
TABLE_3_1 = [
    ('1', ((100, 0), (100, 0)), ((50, 0), (50, 0)), ((50, 0), (50, 0)),
     ((50, 0), (50, 0))),
    ('2', ((100, 0), (100, 100)), ((50, 0), (50, 100)), ((100, 0), (0, 100)),
     ((100, 0), (0, 100))),
    ('3', ((100, 100), (100, 100)), ((50, 50), (50, 50)), ((50, 50), (50, 50)),
     ((50, 50), (50, 50))),
    ('4', ((100, 15), (100, 55)), ((50, 15), (50, 55)), ((70, 35), (30, 35)),
     ((70, 15), (30, 55))),
]


def _two(pair):
    return {'vm1': pair[0], 'vm2': pair[1]}


@pytest.mark.parametrize('name,demand,measured,allocated,consumed',
                         TABLE_3_1)
def test_table_3_1_regular_allocation(name, demand, measured, allocated,
                                      consumed):
    alloc = va.allocate(_two(measured), W)
    for vm, (fs_r, _fs_t) in _two(allocated).items():
        assert alloc[vm].fs_r == fs_r
        # Algorithm 3: tcredits = the turbo usage of the last period.
        assert alloc[vm].tcredits == _two(measured)[vm][1]
        # Fairness: FS^R + actual turbo = FS_i, the same for both VMs.
        assert alloc[vm].fs_r + alloc[vm].tcredits == alloc[vm].fs


@pytest.mark.parametrize('name,fs,fs_t', [
    ('1', 50, 0), ('2', 100, 50), ('3', 100, 50), ('4', 85, 35)])
def test_fair_shares_by_formula(name, fs, fs_t):
    row = next(r for r in TABLE_3_1 if r[0] == name)
    alloc = va.allocate(_two(row[2]), W)
    for vm in W:
        assert alloc[vm].fs == fs
        assert alloc[vm].fs_t == fs_t


def test_scenario_2_prints_measured_turbo_not_the_formula():
    # The table's FS^T for scenario 2 (0/100) is td; the formula: 50/50.
    alloc = va.allocate({'vm1': (50, 0), 'vm2': (50, 100)}, W)
    assert (alloc['vm1'].fs_t, alloc['vm2'].fs_t) == (50, 50)
    assert (alloc['vm1'].tcredits, alloc['vm2'].tcredits) == (0, 100)
    # No floor: the turbo-heavy VM gets 0 % of the regular pool.
    assert alloc['vm2'].fs_r == 0


def test_regular_share_can_be_negative_without_floor():
    # 3 VMs; vm3 used the whole turbo core: FS = 200/3 < 100.
    alloc = va.allocate({'a': (50, 0), 'b': (50, 0), 'c': (0, 100)},
                        {'a': 1, 'b': 1, 'c': 1})
    assert alloc['c'].fs_r == pytest.approx(200 / 3 - 100)


@pytest.mark.parametrize('name,demand,measured,allocated,consumed',
                         TABLE_3_1)
def test_fluid_model_reproduces_consumed_columns(name, demand, measured,
                                                 allocated, consumed):
    runs = va.fluid_run(_two(demand), W, _two(measured), 100, 100,
                        periods=3)
    for _alloc, used in runs:       # one period later, and stable
        for vm, pair in _two(consumed).items():
            assert used[vm] == pytest.approx(pair)


def test_weights_scale_the_fair_share():
    # Intro example with weights 2:1: C_tot = 150; FS = 100 and 50.
    alloc = va.allocate({'a': (100, 0), 'b': (50, 0)}, {'a': 2, 'b': 1})
    assert (alloc['a'].fs, alloc['b'].fs) == (100, 50)


def test_turbo_credit_per_quantum():
    alloc = va.allocate({'a': (0, 30000)}, {'a': 1}, ratio=300)
    assert alloc['a'].turbo_per_quantum == 100


@pytest.mark.parametrize('capacity,demand,shares,expected', [
    (100, {'a': 100, 'b': 100}, {'a': 70, 'b': 30}, {'a': 70, 'b': 30}),
    (100, {'a': 40, 'b': 100}, {'a': 100, 'b': 0}, {'a': 40, 'b': 60}),
    (100, {'a': 15, 'b': 55}, {'a': 35, 'b': 35}, {'a': 15, 'b': 55}),
    (100, {'a': 100, 'b': 100}, {'a': 0, 'b': -5}, {'a': 50, 'b': 50}),
    (100, {'a': 0, 'b': 0}, {'a': 50, 'b': 50}, {'a': 0, 'b': 0}),
])
def test_share_pool_is_work_conserving(capacity, demand, shares, expected):
    got = va.share_pool(capacity, demand, shares)
    assert got == pytest.approx(expected)


@pytest.mark.parametrize('usage,weights,ratio,field', [
    ({'a': (1, -1)}, {'a': 1}, 300, r"usage\['a'\]"),
    ({'a': [1, 1]}, {'a': 1}, 300, r"usage\['a'\]"),
    ({'a': (1, 1)}, {'a': 0}, 300, r"weights\['a'\]"),
    ({'a': (1, 1)}, {}, 300, r"weights\['a'\]"),
    ({'a': (1, 1)}, {'a': 1}, 0, 'ratio'),
])
def test_bad_input_names_the_field(usage, weights, ratio, field):
    with pytest.raises(ValueError, match='^' + field):
        va.allocate(usage, weights, ratio)
