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
"""The Placement resources a flavor asks for, derived from its iosched specs.

Description:
    iosched's I/O capacity is Placement inventory on a child resource
    provider ``<compute node name>:iosched`` of each compute node (the
    agent publishes it: ``iosched.host_agent.placement_inventory``), so Nova
    claims it atomically with the VM's VCPU and MEMORY_MB and two schedulers
    can no longer both fill the same host between two agent reports.
    ``resources_for()`` gives the ``resources:CUSTOM_IOSCHED_*`` extra
    specs a flavor must carry for that claim; ``check()`` lists what is
    missing or inconsistent in a flavor's extra specs. The ``iosched:*``
    specs are read as the scheduler and the agent read them
    (``iosched.contract.flavor.read``): a value the Nova API would refuse
    sizes as unset.

Requirements:
    None: no nova, no I/O, no clock. The resource classes and amounts are
    the contract with the agent's inventory (docs/nova.md):

    * ``CUSTOM_IOSCHED_IO_VCPU`` (slots): an ``iosched:io_profile`` of
      ``io`` or ``mixed`` asks one per vCPU (the vCPUs IoDensityFilter
      counts); the host has floor(pcpus * max_io_vcpus_per_pcpu).
    * ``CUSTOM_IOSCHED_LSVM_BW`` (milli-CPUs): ``iosched:latency_sensitive
      = true`` asks vcpus * round(1000 * lsvm_vcpu_share); the same share
      as the agent's ``[io_inventory] lsvm_vcpu_share``.
    * ``CUSTOM_IOSCHED_SLO_IOPS``: opt-in only (SLO floors come from Cinder
      volume types, not flavors); no iosched spec derives it, a flavor may
      carry it explicitly.

Limitations:
    Only the unnumbered request group (``resources:``) is derived: Placement
    takes its resources from any provider of the compute node's tree. A
    ``CUSTOM_IOSCHED_*`` amount in a numbered group (``resources1:``) is
    reported by ``check()``.

Spec URL:
    docs/nova.md, section "Placement inventory".
"""

import dataclasses
import re

from iosched.contract import flavor

IO_VCPU = 'CUSTOM_IOSCHED_IO_VCPU'
LSVM_BW = 'CUSTOM_IOSCHED_LSVM_BW'
SLO_IOPS = 'CUSTOM_IOSCHED_SLO_IOPS'
RESOURCE_CLASSES = (IO_VCPU, LSVM_BW, SLO_IOPS)

PREFIX = 'resources:'
DEFAULT_LSVM_VCPU_SHARE = 0.5

# resources<group>:<class>, as Nova reads a flavor's request groups
_RESOURCE_KEY = re.compile(r'resources([a-zA-Z0-9_-]{0,64}):(\S+)')
_DIGITS = re.compile(r'[0-9]+')


def key(resource_class):
    """The unnumbered-group extra spec key of ``resource_class``."""
    return PREFIX + resource_class


def _vcpus(vcpus):
    if isinstance(vcpus, bool) or not isinstance(vcpus, int) or vcpus < 1:
        raise ValueError('vcpus must be a positive integer (the flavor\'s '
                         'vCPUs), got %r' % (vcpus,))
    return vcpus


# milli(share) := round(1000 * share), 0 < share <= 1
def lsvm_milli_per_vcpu(lsvm_vcpu_share=DEFAULT_LSVM_VCPU_SHARE):
    """``CUSTOM_IOSCHED_LSVM_BW`` an LSVM asks per vCPU (milli-CPUs)."""
    share = lsvm_vcpu_share
    if (isinstance(share, bool) or not isinstance(share, (int, float))
            or not 0.0005 <= share <= 1):
        raise ValueError('lsvm_vcpu_share must be a number from 0.0005 to 1 '
                         "(the share of a pCPU an LSVM's vCPU reserves, as "
                         "the agent's [io_inventory] lsvm_vcpu_share; below "
                         '0.0005 it would ask 0 milli-CPUs), got %r'
                         % (lsvm_vcpu_share,))
    return int(round(1000 * share))


# IO_VCPU  := vcpus                 if io_profile in {io, mixed}
#                                   (FlavorSpecs.has_io_vcpus)
# LSVM_BW  := vcpus * milli(share)  if latency_sensitive
# SLO_IOPS := never derived (opt-in)
def resources_for(vcpus, specs, lsvm_vcpu_share=DEFAULT_LSVM_VCPU_SHARE):
    """The ``resources:CUSTOM_IOSCHED_*`` extra specs a flavor should carry.

    ``specs`` is the flavor's extra specs (strings, as Nova stores them),
    read by ``flavor.read``: a value the Nova API would refuse is unset, as
    for the scheduler and the agent (``flavor.check_specs`` first to refuse
    it). Empty for a flavor that needs no I/O capacity.
    """
    vcpus = _vcpus(vcpus)
    milli = lsvm_milli_per_vcpu(lsvm_vcpu_share)
    reading = flavor.read(specs)
    wanted = {}
    if reading.has_io_vcpus:
        wanted[key(IO_VCPU)] = str(vcpus)
    if reading.latency_sensitive:
        wanted[key(LSVM_BW)] = str(vcpus * milli)
    return wanted


# The keys resources_for() reads: a value of one of them (or of the same key
# in another case) that every reader ignores changes the amounts silently.
SIZED_BY = (flavor.IO_PROFILE, flavor.LATENCY_SENSITIVE)


def check_sizing(specs):
    """Raise the ``flavor.InvalidExtraSpec`` of the first ignored value of a
    ``SIZED_BY`` key (other keys are Nova's validators' to refuse).
    """
    for item in flavor.read(specs).ignored:
        if str(item.key).strip().lower() in SIZED_BY:
            raise item.error


def with_resources(vcpus, specs, lsvm_vcpu_share=DEFAULT_LSVM_VCPU_SHARE):
    """``specs`` with the derived keys set (a new dict).

    Derived keys replace what ``specs`` says; an ``IO_VCPU`` / ``LSVM_BW``
    amount the iosched specs do not call for is dropped (it would claim
    capacity the filters never counted); ``SLO_IOPS`` is kept as given.
    """
    derived = resources_for(vcpus, specs, lsvm_vcpu_share)
    kept = {k: v for k, v in (specs or {}).items()
            if k not in (key(IO_VCPU), key(LSVM_BW))}
    kept.update(derived)
    return kept


@dataclasses.dataclass(frozen=True)
class Problem:
    """One thing wrong with a flavor's ``CUSTOM_IOSCHED_*`` resources."""

    key: str
    kind: str            # missing | wrong | unexpected | invalid | group
    have: object         # the flavor's value, or None
    want: object         # the derived value, or None

    def __str__(self):
        return {
            'missing': '%(key)s is missing: the iosched specs ask %(want)s',
            'wrong': '%(key)s is %(have)r: the iosched specs ask %(want)s',
            'unexpected': '%(key)s is %(have)r but the iosched specs ask '
                          'none (claims capacity the filters never count)',
            'invalid': '%(key)s is %(have)r: accepted: a non-negative '
                       'integer',
            'group': '%(key)s is in a numbered request group: iosched '
                     'resources belong in the unnumbered group '
                     '(resources:)',
        }[self.kind] % {'key': self.key, 'have': self.have,
                        'want': self.want}


# For each class C with derived d (absent = 0) and the flavor's value f:
#   f in a numbered group               -> group
#   f not digits                        -> invalid
#   d > 0 and f absent                  -> missing
#   d > 0 and int(f) != d               -> wrong
#   d = 0 and int(f) > 0, C != SLO_IOPS -> unexpected
def check(vcpus, specs, lsvm_vcpu_share=DEFAULT_LSVM_VCPU_SHARE):
    """Problems of a flavor's iosched resources, sorted by key; [] if none.

    A value every reader ignores raises its ``flavor.InvalidExtraSpec``
    (``flavor.check_specs``): fix it before the resources.
    """
    specs = specs or {}
    flavor.check_specs(specs)
    derived = resources_for(vcpus, specs, lsvm_vcpu_share)
    problems = []
    for spec_key, value in specs.items():
        match = _RESOURCE_KEY.fullmatch(str(spec_key))
        if not match or match.group(2) not in RESOURCE_CLASSES:
            continue
        if match.group(1):
            problems.append(Problem(spec_key, 'group', value, None))
            continue
        want = derived.get(spec_key)
        text = str(value).strip()
        if not _DIGITS.fullmatch(text):
            problems.append(Problem(spec_key, 'invalid', value, want))
        elif want is not None and int(text) != int(want):
            problems.append(Problem(spec_key, 'wrong', value, want))
        elif (want is None and int(text) > 0
              and match.group(2) != SLO_IOPS):
            problems.append(Problem(spec_key, 'unexpected', value, None))
    for spec_key, want in derived.items():
        if spec_key not in specs:
            problems.append(Problem(spec_key, 'missing', None, want))
    return sorted(problems, key=lambda p: (p.key, p.kind))
