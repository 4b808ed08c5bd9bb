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
"""What the I/O inventories of the host's child provider should be (pure).

The child resource provider (``placement_inventory``) holds inventories of
three custom resource classes derived from the agent's reports
(``wanted_inventories``):

* ``CUSTOM_IOSCHED_IO_VCPU``: I/O-intensive vCPU slots, total =
  floor(pcpus x max_io_vcpus_per_pcpu);
* ``CUSTOM_IOSCHED_LSVM_BW``: LSVM bandwidth in milli-CPUs; ``deadline``:
  total = floor(1000 x dl_bw_limit), reserved = ceil(1000 x dl_bw_foreign)
  + the configured reserve; ``weight``/``slice``: total = pcpus x
  max_per_pcpu x per_vcpu (per_vcpu = round(1000 x lsvm_vcpu_share));
  none while the host does not support LSVMs;
* ``CUSTOM_IOSCHED_SLO_IOPS``: total = floor(capacity_iops x
  slo_capacity_fraction); none while the capacity is unknown (0).

The IO_VCPU reserve also holds the I/O vCPUs that no allocation claims
(``[io_inventory] reserve_unclaimed_io_vcpus``, ``reserve_unclaimed``):
servers whose flavors carry no ``resources:CUSTOM_IOSCHED_IO_VCPU``, a
``cpu`` VM that turned out I/O-bound, a VM outside Nova. reserved =
reserved_io_vcpus + max(0, the report's measured I/O vCPUs - the child's
IO_VCPU usage), read at each sync; the wanted state (``Wanted``) keeps the
measurement, so a change of it syncs at once, and the same measurement and
usage write nothing.

``plan_inventories`` turns the wanted inventories and what Placement has
into what to write; ``describe_change`` says what changed. No I/O here:
``placement_inventory`` reads and writes Placement.
"""

import dataclasses
import math
import typing

IO_VCPU = 'CUSTOM_IOSCHED_IO_VCPU'
LSVM_BW = 'CUSTOM_IOSCHED_LSVM_BW'
SLO_IOPS = 'CUSTOM_IOSCHED_SLO_IOPS'
CLASSES = (IO_VCPU, LSVM_BW, SLO_IOPS)
FIELDS = ('total', 'reserved', 'min_unit', 'max_unit', 'step_size',
          'allocation_ratio')


@dataclasses.dataclass(frozen=True)
class Options:
    """The ``[io_inventory]`` sizing options (see iosched/host_agent/conf)."""

    max_io_vcpus_per_pcpu: float = 1.0
    lsvm_vcpu_share: float = 0.5
    slo_capacity_fraction: float = 1.0
    reserved_io_vcpus: int = 0
    reserved_lsvm_bw: int = 0
    reserved_slo_iops: int = 0
    reserve_unclaimed_io_vcpus: bool = True

    def __post_init__(self):
        if not isinstance(self.reserve_unclaimed_io_vcpus, bool):
            raise ValueError('[io_inventory] reserve_unclaimed_io_vcpus = '
                             '%r: accepted is true or false'
                             % (self.reserve_unclaimed_io_vcpus,))
        checks = (
            ('max_io_vcpus_per_pcpu', lambda v: v >= 0, 'a number >= 0'),
            ('lsvm_vcpu_share', lambda v: 0.001 <= v <= 1,
             'a fraction of a CPU from 0.001 to 1'),
            ('slo_capacity_fraction', lambda v: 0 <= v <= 1,
             'a fraction from 0 to 1'),
            ('reserved_io_vcpus', _count, 'an integer >= 0'),
            ('reserved_lsvm_bw', _count, 'an integer >= 0 (milli-CPUs)'),
            ('reserved_slo_iops', _count, 'an integer >= 0'),
        )
        for name, ok, accepted in checks:
            value = getattr(self, name)
            if (isinstance(value, bool) or
                    not isinstance(value, (int, float)) or
                    value != value or not ok(value)):
                raise ValueError('[io_inventory] %s = %r: accepted is %s'
                                 % (name, value, accepted))

    @classmethod
    def from_conf(cls, opts):
        return cls(**{f.name: getattr(opts, f.name)
                      for f in dataclasses.fields(cls)})


def _count(value):
    return isinstance(value, int) and value >= 0


# 1000 x 0.95 is 949.999... in binary floating point: round to a millionth
# before flooring or ceiling, so decimal figures convert as written.
def _floor(x):
    return int(math.floor(round(x, 6)))


def _ceil(x):
    return int(math.ceil(round(x, 6)))


def per_lsvm_vcpu(share):
    """Milli-CPUs of ``CUSTOM_IOSCHED_LSVM_BW`` one LSVM vCPU asks."""
    return int(round(1000 * share))


def inventory(total, reserved=0):
    return {'total': total, 'reserved': reserved, 'min_unit': 1,
            'max_unit': total, 'step_size': 1, 'allocation_ratio': 1.0}


# The wanted inventories of the child, from one report:
#   IO_VCPU  total = floor(pcpus * max_io_vcpus_per_pcpu)
#   LSVM_BW  only if lsvm.supported;
#            deadline: total = floor(1000 * dl_bw_limit),
#                      reserved = ceil(1000 * dl_bw_foreign) + reserve
#            weight, slice: total = pcpus * max_per_pcpu * per_vcpu
#   SLO_IOPS only if capacity_iops > 0;
#            total = floor(capacity_iops * slo_capacity_fraction)
#   reserved = the configured reserve (plus dl_bw_foreign for deadline;
#              IO_VCPU: plus the unclaimed I/O vCPUs, added at each sync
#              by reserve_unclaimed, which needs Placement's usage).
# Placement refuses total < 1 (the class is left out) and reserved > total
# (reserved is cut to total: nothing fits); each is named in a warning.
# max_unit = total, min_unit = step_size = 1, allocation_ratio = 1.
def wanted_inventories(report, options):
    """({resource class: inventory}, (warning, ...)) for ``report``.

    Raises ValueError for an LSVM mechanism it does not know.
    """
    sizes = {}      # class -> (total, reserved, what the total is)
    pcpus = int(report.pcpus)
    sizes[IO_VCPU] = (
        _floor(pcpus * options.max_io_vcpus_per_pcpu),
        options.reserved_io_vcpus,
        '%d pCPUs x max_io_vcpus_per_pcpu %g'
        % (pcpus, options.max_io_vcpus_per_pcpu))
    lsvm = report.lsvm
    if lsvm.supported:
        if lsvm.mechanism == 'deadline':
            sizes[LSVM_BW] = (
                _floor(1000 * lsvm.dl_bw_limit),
                _ceil(1000 * lsvm.dl_bw_foreign) + options.reserved_lsvm_bw,
                'SCHED_DEADLINE bandwidth dl_bw_limit %g CPUs'
                % lsvm.dl_bw_limit)
        elif lsvm.mechanism in ('weight', 'slice'):
            sizes[LSVM_BW] = (
                pcpus * int(lsvm.max_per_pcpu) *
                per_lsvm_vcpu(options.lsvm_vcpu_share),
                options.reserved_lsvm_bw,
                '%d pCPUs x max_per_pcpu %d x lsvm_vcpu_share %g'
                % (pcpus, lsvm.max_per_pcpu, options.lsvm_vcpu_share))
        else:
            raise ValueError('report lsvm.mechanism %r: accepted are '
                             'deadline, weight, slice' % (lsvm.mechanism,))
    capacity = float(report.disk.capacity_iops)
    if capacity > 0:
        sizes[SLO_IOPS] = (
            _floor(capacity * options.slo_capacity_fraction),
            options.reserved_slo_iops,
            'capacity_iops %g x slo_capacity_fraction %g'
            % (capacity, options.slo_capacity_fraction))
    wanted, warnings = {}, []
    for rc, (total, reserved, what) in sizes.items():
        if total < 1:
            warnings.append('%s left out: total %d (%s) is below 1, which '
                            'Placement refuses' % (rc, total, what))
            continue
        if reserved > total:
            warnings.append('%s reserved %d cut to the total %d (%s): '
                            'nothing of it is left to allocate'
                            % (rc, reserved, total, what))
            reserved = total
        wanted[rc] = inventory(total, reserved)
    return wanted, tuple(warnings)


@dataclasses.dataclass(frozen=True)
class Wanted:
    """The publisher's wanted state: the inventories one report calls for
    (IO_VCPU reserved = the configured reserve) and the report's measured
    I/O vCPUs (None: ``reserve_unclaimed_io_vcpus`` off).
    """

    inventories: dict
    io_vcpus: typing.Optional[int] = None


# The IO_VCPU reserve for I/O vCPUs that hold no slot: servers whose
# flavors carry no resources:CUSTOM_IOSCHED_IO_VCPU (booted before the keys
# were set), a `cpu` VM that turned out I/O-bound, a VM outside Nova. The
# report measures the host's I/O-intensive vCPUs (io_vcpus); the child's
# IO_VCPU usage is what allocations claim. The measured vCPUs beyond the
# claims are unclaimed and reserved on top of the configured reserve:
#   reserved = reserved_io_vcpus + max(0, io_vcpus - usage)
# Claimed servers that are idle (usage > io_vcpus) count 0, never less.
# Above the total it is cut to the total (nothing left to allocate) with a
# warning, unless the configured reserve alone already filled it (warned
# when the report came). io_vcpus None (the option off) or no IO_VCPU
# class: unchanged. Same io_vcpus and usage -> same inventories.
def reserve_unclaimed(inventories, io_vcpus, usage):
    """(inventories with the IO_VCPU reserve, (warning, ...))."""
    if io_vcpus is None or IO_VCPU not in inventories:
        return inventories, ()
    unclaimed = max(0, io_vcpus - usage)
    if unclaimed == 0:
        return inventories, ()
    inv = dict(inventories[IO_VCPU])
    configured, total = inv['reserved'], inv['total']
    reserved, warnings = configured + unclaimed, ()
    if reserved > total:
        if configured < total:
            warnings = ('%s reserved %d cut to the total %d (reserved '
                        '%d + %d unclaimed: %d measured I/O vCPUs - %d '
                        'allocated): nothing of it is left to allocate'
                        % (IO_VCPU, reserved, total, configured, unclaimed,
                           io_vcpus, usage),)
        reserved = total
    inv['reserved'] = reserved
    return dict(inventories, **{IO_VCPU: inv}), warnings


def _same(a, b):
    return ({rc: tuple(inv.get(f) for f in FIELDS) for rc, inv in a.items()}
            == {rc: tuple(inv.get(f) for f in FIELDS)
                for rc, inv in b.items()})


# The child's new inventories, or None when Placement already has them:
# every wanted class as wanted; a class Placement has but is no longer
# wanted is deleted, unless allocations use it (Placement refuses: 409
# inventory in use): then it stays with reserved = total, so nothing new
# fits, until they are gone ("held").
def plan_inventories(current, usages, wanted):
    """(new inventories or None, [held class, ...])."""
    new = {rc: dict(inv) for rc, inv in wanted.items()}
    held = []
    for rc in sorted(set(current) - set(wanted)):
        if usages.get(rc, 0) > 0:
            inv = {f: current[rc].get(f) for f in FIELDS}
            inv['reserved'] = inv['total']
            new[rc] = inv
            held.append(rc)
    return (None if _same(current, new) else new), held


def describe_change(before, after):
    """Short phrases naming what changed, one per class, sorted."""
    out = []
    for rc in sorted(set(before) | set(after)):
        if rc not in after:
            out.append('%s removed' % rc)
        elif rc not in before:
            out.append('%s total %s reserved %s (new)'
                       % (rc, after[rc]['total'], after[rc]['reserved']))
        elif not _same({rc: before[rc]}, {rc: after[rc]}):
            out.append('%s total %s->%s reserved %s->%s'
                       % (rc, before[rc]['total'], after[rc]['total'],
                          before[rc]['reserved'], after[rc]['reserved']))
    return out
