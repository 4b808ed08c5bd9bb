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
"""Specs that select the Credit, vSlicer and vTurbo scheduler models.

Each is a frozen dataclass validated in ``__post_init__`` (a bad field
raises ``ValueError`` naming the field, the value and what is accepted)
with ``build(loop, host_spec)`` returning the scheduler; pass one as
``HostSpec(scheduler=...)``. Times are integer microseconds; the defaults
are Xen 4.1's (30 ms slice, 10 ms tick, 30 ms accounting, no rate limit,
BOOST on).
"""

import dataclasses

from iosched.simulator import checks
from iosched.simulator.xen import credit
from iosched.simulator.xen import vslicer
from iosched.simulator.xen import vturbo


def _credit_fields(spec, cls):
    checks.int_range(cls + '.tslice_us', spec.tslice_us, 100, 1000000)
    checks.int_range(cls + '.tick_us', spec.tick_us, 100, 1000000)
    checks.int_range(cls + '.acct_us', spec.acct_us, 100, 1000000)
    checks.int_range(cls + '.ratelimit_us', spec.ratelimit_us, 0,
                     spec.tslice_us)
    if not isinstance(spec.boost, bool):
        raise ValueError('%s.boost: %r is invalid; accepted: True or False'
                         % (cls, spec.boost))


@dataclasses.dataclass(frozen=True)
class CreditSpec:
    """Xen Credit (Credit1): ``iosched.simulator.xen.credit``."""
    tslice_us: int = 30000
    tick_us: int = 10000
    acct_us: int = 30000
    ratelimit_us: int = 0
    boost: bool = True

    def __post_init__(self):
        _credit_fields(self, 'CreditSpec')

    def build(self, loop, host_spec):
        return credit.CreditScheduler(loop, host_spec.pcpus,
                                      host_spec.switch_cost_us, self)


@dataclasses.dataclass(frozen=True)
class VSlicerSpec:
    """vSlicer on Credit: ``iosched.simulator.xen.vslicer``.

    ``microslices``: ((vm uuid, T_m in us), ...) marks those VMs LSVMs
    from the start (all their vCPUs); every other VM is an NLSVM until
    ``SimHost.set_vcpu_slice`` gives a vCPU a microslice. T_NLSVM is
    ``tslice_us``.
    """
    tslice_us: int = 30000
    tick_us: int = 10000
    acct_us: int = 30000
    ratelimit_us: int = 0
    boost: bool = True
    microslices: tuple = ()

    def __post_init__(self):
        _credit_fields(self, 'VSlicerSpec')
        accepted = ('a tuple of (vm uuid, microslice in us) pairs with a '
                    'microslice in 100..%d' % (self.tslice_us - 1))
        ms = self.microslices
        if isinstance(ms, (str, bytes, dict)) or not hasattr(ms, '__iter__'):
            raise ValueError('VSlicerSpec.microslices: %r is invalid; '
                             'accepted: %s' % (ms, accepted))
        pairs = tuple(tuple(x) if isinstance(x, (tuple, list)) else x
                      for x in ms)
        seen = set()
        for i, pair in enumerate(pairs):
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise ValueError('VSlicerSpec.microslices[%d]: %r is '
                                 'invalid; accepted: %s' % (i, pair, accepted))
            checks.name('VSlicerSpec.microslices[%d][0]' % i, pair[0])
            checks.int_range('VSlicerSpec.microslices[%d][1]' % i, pair[1],
                             100, self.tslice_us - 1)
            if pair[0] in seen:
                raise ValueError('VSlicerSpec.microslices: uuid %r appears '
                                 'twice; accepted: %s' % (pair[0], accepted))
            seen.add(pair[0])
        object.__setattr__(self, 'microslices', pairs)

    def build(self, loop, host_spec):
        return vslicer.VSlicerScheduler(loop, host_spec.pcpus,
                                        host_spec.switch_cost_us, self)


@dataclasses.dataclass(frozen=True)
class VTurboSpec:
    """vTurbo on Credit: ``iosched.simulator.xen.vturbo``.

    ``turbo_pcpus``: ids of the turbo cores (quantum ``turbo_quantum_us``,
    0.1 ms); every other pCPU is a regular core (``tslice_us``, 30 ms);
    at least one of each. vCPU 0 of every VM with two or more vCPUs is its
    turbo vCPU (pinned to the turbo cores), the others are regular vCPUs
    (pinned to the regular cores).
    """
    turbo_pcpus: tuple = (0,)
    turbo_quantum_us: int = 100
    tslice_us: int = 30000
    tick_us: int = 10000
    acct_us: int = 30000
    ratelimit_us: int = 0
    boost: bool = True

    def __post_init__(self):
        _credit_fields(self, 'VTurboSpec')
        checks.int_range('VTurboSpec.turbo_quantum_us',
                         self.turbo_quantum_us, 10, self.tslice_us)
        if self.acct_us % self.turbo_quantum_us:
            raise ValueError('VTurboSpec.turbo_quantum_us: %r is invalid; '
                             'accepted: a divisor of acct_us (%d)'
                             % (self.turbo_quantum_us, self.acct_us))
        tp = self.turbo_pcpus
        accepted = 'a non-empty tuple of distinct pCPU ids'
        if isinstance(tp, (str, bytes)) or not hasattr(tp, '__iter__'):
            raise ValueError('VTurboSpec.turbo_pcpus: %r is invalid; '
                             'accepted: %s' % (tp, accepted))
        tp = tuple(tp)
        if not tp or len(set(tp)) != len(tp):
            raise ValueError('VTurboSpec.turbo_pcpus: %r is invalid; '
                             'accepted: %s' % (tp, accepted))
        for i in tp:
            checks.int_range('VTurboSpec.turbo_pcpus[]', i, 0)
        object.__setattr__(self, 'turbo_pcpus', tuple(sorted(tp)))

    def build(self, loop, host_spec):
        if max(self.turbo_pcpus) >= host_spec.pcpus or len(
                self.turbo_pcpus) >= host_spec.pcpus:
            raise ValueError(
                'VTurboSpec.turbo_pcpus: %r is invalid for host %s with %d '
                'pCPUs; accepted: ids in 0..%d leaving at least one regular '
                'pCPU' % (self.turbo_pcpus, host_spec.name, host_spec.pcpus,
                          host_spec.pcpus - 1))
        return vturbo.VTurboScheduler(loop, host_spec.pcpus,
                                      host_spec.switch_cost_us, self)
