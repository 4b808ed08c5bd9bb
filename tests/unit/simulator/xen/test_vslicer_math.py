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
"""vSlicer's Eqs. 2.1-2.12 and the derived waits, by hand (times in ms)."""

import pytest

from iosched.simulator.xen import vslicer_math as vm


# Figs. 2.6-2.7 worked examples and two more by hand.
#  m, n, T_m, T_n, T_S, T_P, r, worst, best
@pytest.mark.parametrize('m,n,t_m,t_n,t_s,t_p,r,worst,best', [
    (1, 3, 10, 10, 10, 120, 1, 30, 0),      # Fig. 2.6
    (2, 2, 5, 15, 30, 120, 3, 35, 5),       # Fig. 2.7
    (2, 1, 5, 30, 60, 90, 6, 35, 5),        # 30/1 = 2 x 3 x 5
    (3, 2, 5, 15, 45, 150, 3, 40, 10),      # 30 + 2 x 5
    (1, 4, 7.5, 7.5, 7.5, 150, 1, 30, 0),   # T_n = 7.5: only r = 1
])
def test_worked_examples(m, n, t_m, t_n, t_s, t_p, r, worst, best):
    assert vm.lsvm_time_per_micro_round(30, n) == t_n
    assert vm.micro_round(30, m, n) == t_s
    assert vm.period(30, m, n) == t_p
    assert vm.microslices_per_round(30, n, t_m) == r
    assert vm.worst_wait(30, m, t_m) == worst
    assert vm.best_wait(m, t_m) == best


@pytest.mark.parametrize('m,n', [(1, 3), (2, 2), (3, 2), (0, 4)])
def test_fairness_invariant(m, n):
    # Eq. 2.11: n T_S + n T_NLSVM = (m + n) T_NLSVM; each VM 1 / (m + n).
    t_s = vm.micro_round(30, m, n)
    assert n * t_s + n * 30 == pytest.approx(vm.period(30, m, n))
    assert vm.round_share(m, n) == pytest.approx(1 / (m + n))
    if m:
        # An LSVM gets n T_n = T_NLSVM per period (Eq. 2.6 = Eq. 2.1).
        assert n * vm.lsvm_time_per_micro_round(30, n) == 30


@pytest.mark.parametrize('n,t_m,ok', [
    (2, 5, True), (2, 15, True), (2, 4, False), (2, 7, False),
    (4, 5, False), (4, 7.5, True), (3, 2.5, True), (1, 30, True),
])
def test_microslice_must_divide_t_n(n, t_m, ok):
    assert vm.is_valid_microslice(30, n, t_m) is ok
    if not ok:
        with pytest.raises(ValueError, match='t_m: .* whole divisor'):
            vm.microslices_per_round(30, n, t_m)


@pytest.mark.parametrize('n,minimum,unit,expected', [
    (2, 5, 1, [15, 5]),                     # 15/1, 15/3 (7.5 not whole)
    (2, 5, 0.5, [15, 7.5, 5]),
    (4, 5, 1, []),                          # T_n = 7.5 ms: none >= 5 ms
    (4, 5, 0.5, [7.5]),
    (1, 10, 1, [30, 15, 10]),
])
def test_microslice_choices(n, minimum, unit, expected):
    assert vm.microslice_choices(30, n, unit=unit,
                                 minimum=minimum) == expected


@pytest.mark.parametrize('t_l,m,expected', [
    (10, 2, 10), (10, 3, 5), (11, 3, 5), (9, 4, 3), (50, 1, None)])
def test_max_microslice(t_l, m, expected):
    # (m - 1) T_m <= T_l  =>  T_m <= floor(T_l / (m - 1)).
    assert vm.max_microslice(t_l, m) == expected


@pytest.mark.parametrize('n_vms,worst,mean', [
    (2, 30, 7.5),                           # 1 x 30; 1 x 900 / 120
    (3, 60, 20), (4, 90, 33.75), (5, 120, 48)])
def test_credit_waits(n_vms, worst, mean):
    # C1 and C4's baseline: (N - 1) T and (N - 1)^2 T / (2 N).
    assert vm.credit_worst_wait(n_vms, 30) == worst
    assert vm.credit_mean_wait(n_vms, 30) == pytest.approx(mean)


@pytest.mark.parametrize('m,n,t_m,mean', [
    (1, 2, 15, 10), (1, 3, 10, 11.25), (1, 4, 7.5, 12),    # 15 n / (n + 1)
    (2, 1, 5, 7.5),                 # (5 x 25 + 35^2) / (2 x 90)
    (2, 2, 5, 10.625),              # 2 (2 x 25 + 35^2) / (2 x 120)
    (2, 3, 5, 12.5),                # 3 (25 + 35^2) / (2 x 150)
])
def test_vslicer_mean_wait_digest_c4(m, n, t_m, mean):
    assert vm.vslicer_mean_wait(30, m, n, t_m) == pytest.approx(mean)


@pytest.mark.parametrize('m,n,r,switches', [
    (2, 2, 3, 14),                  # [L1 L2]x3 N1 [L1 L2]x3 N2
    (1, 3, 1, 6),                   # L N1 L N2 L N3
    (1, 3, 2, 6),                   # a lone LSVM's microslices are one run
])
def test_switches_per_period(m, n, r, switches):
    # Fig. 2.7's 4 VMs: 14 per 120 ms vs credit's 4: 3.5x (paper: "3x").
    assert vm.switches_per_period(m, n, r) == switches


@pytest.mark.parametrize('call,field', [
    (lambda: vm.period(30, -1, 2), 'm'),
    (lambda: vm.period(30, 1, 0), 'n'),
    (lambda: vm.micro_round(0, 1, 1), 't_nlsvm'),
    (lambda: vm.worst_wait(30, 0, 5), 'm'),
    (lambda: vm.best_wait(2, -5), 't_m'),
    (lambda: vm.credit_mean_wait(0, 30), 'n_vms'),
    (lambda: vm.max_microslice(10, True), 'm'),
    (lambda: vm.switches_per_period(1, 1, 0), 'r'),
    (lambda: vm.vslicer_mean_wait(30, 0, 2, 5), 'm'),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(ValueError, match='^%s: ' % field):
        call()
