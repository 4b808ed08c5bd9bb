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
"""Reconcile at start: knobs found changed with no record are put back.

The journal is the agent's record of what it changed; a record can be
lost (a damaged line, a journal deleted or on a disk that failed, an
agent killed between a write and its marker). So at start, after the
journal's own restore, the agent does what koordlet does rather than
trust a log: for each running instance and each knob the knob set can
answer for (``KnobWriter.reconciled_kinds``), it compares the live value
with the *desired* one, what the instance's own definition and the host's
defaults say it is when no agent has changed it
(``KnobWriter.desired``), and writes the desired value back where they
differ, naming the knob, both values and why. A knob the journal still
holds (its restore failed) is left to the journal.

Only what no tenant or operator sets live is reconciled: a SCHED_DEADLINE
reservation or a custom EEVDF slice on a QEMU thread (Nova sets neither),
a vCPU cgroup's weight (libvirt leaves it at the cgroup default) and the
vCPU and emulator pins (against the domain's persistent definition,
which Nova writes and the agent never touches: it pins live only). Not
reconciled: a disk's iotune (a retype or extend re-tunes it live, so the
definition may be older: the held-knobs marker in the domain is its
second record), interface bandwidth, block-device knobs and VM-level
cgroup settings whose defaults libvirt derives (docs/reliability.md).
"""

from oslo_log import log as logging

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.drivers import base as driver_base

LOG = logging.getLogger(__name__)

_PER_VCPU = (knob_kinds.VCPU_SLICE, knob_kinds.VCPU_WEIGHT,
             knob_kinds.VCPU_PIN, knob_kinds.VCPU_CAP,
             knob_kinds.VCPU_DEADLINE)
_PER_DISK = (knob_kinds.DISK_IOTUNE,)


def targets(kind, instance):
    """The targets of ``kind`` on ``instance`` (a model.InstanceInfo)."""
    if kind in _PER_VCPU:
        return [str(i) for i in range(instance.vcpus)]
    if kind in _PER_DISK:
        return [d.target for d in instance.disks]
    if kind in (knob_kinds.IFACE_BANDWIDTH, knob_kinds.BLOCK_SCHEDULER,
                knob_kinds.BFQ_SLICE_IDLE):
        return []              # not instance-wide: not reconciled here
    return ['']


def same(kind, live, desired):
    """Whether two values of ``kind`` mean the same setting."""
    if kind in knob_kinds.PIN_KINDS:
        def norm(v):
            return tuple(v) if isinstance(v, (list, tuple)) else v
        return norm(live) == norm(desired)
    return live == desired


def reconcile(knobs, instances, held):
    """Put back every reconciled knob of ``instances`` whose live value
    is not its desired one, but those in ``held`` (keys the journal still
    holds). Returns the list of (key, live, desired) put back; what could
    not be read, judged or written is logged and skipped.
    """
    answers = getattr(knobs, 'reconciled_kinds', None)
    if answers is None:
        return []
    kinds = [k for k in answers() if k in set(knobs.knobs())]
    put_back = []
    for instance in instances:
        for kind in kinds:
            for target in targets(kind, instance):
                key = (kind, instance.uuid, target)
                if key in held:
                    continue
                try:
                    want = knobs.desired(kind, instance.uuid, target)
                    live = knobs.read_knob(kind, instance.uuid, target)
                except knob_set.NoDesired as e:
                    LOG.debug('not reconciled: %s', e)
                    continue
                except driver_base.DriverError as e:
                    LOG.warning('cannot reconcile %(k)s %(u)s/%(t)s: '
                                '%(err)s', {'k': kind, 'u': instance.uuid,
                                            't': target, 'err': e})
                    continue
                if same(kind, live, want):
                    continue
                try:
                    knobs.write_knob(kind, instance.uuid, target, want)
                except driver_base.DriverError as e:
                    LOG.error('%(k)s %(u)s/%(t)s is %(live)s where its '
                              'definition says %(want)s, and cannot be put '
                              'back: %(err)s', {
                                  'k': kind, 'u': instance.uuid,
                                  't': target, 'live': live, 'want': want,
                                  'err': e})
                    continue
                LOG.warning('put back %(k)s %(u)s/%(t)s = %(want)s (was '
                            '%(live)s): changed from what its definition '
                            'and the host\'s defaults say, and no journal '
                            'entry explains it (a lost or damaged journal '
                            'line?)', {'k': kind, 'u': instance.uuid,
                                       't': target, 'want': want,
                                       'live': live})
                put_back.append((key, live, want))
    return put_back
