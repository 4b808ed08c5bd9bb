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
"""A volume's static limits, re-applied when they change while attached.

Nova writes a volume's front-end QoS into the domain's ``<iotune>`` only
at attach. ``Retuner.retune`` notices when a disk's QoS spec, type or size
changed since (an online extend with per-GB keys, an edited QoS spec; a
retype while the agent was not running) and makes the new limits the
disk's original value through the actuator's ``rebase`` (rule
``slo.retune``): written at once unless a policy holds the knob, and
restored on stop.
"""

from oslo_log import log as logging

from iosched.contract import knob_kinds
from iosched.contract import qos_attach
from iosched.host_agent import model

LOG = logging.getLogger(__name__)
RULE_RETUNE = 'slo.retune'


class Retuner(object):
    """The static limits last seen per disk: (uuid, target) -> iotune."""

    def __init__(self):
        self._static = {}

    def forget(self, uuids):
        """Instances gone, or running in a new process."""
        self._static = {k: v for k, v in self._static.items()
                        if k[0] not in uuids}

    def retune(self, instances, actuator, now):
        """Re-apply a volume's static limits when its QoS spec, type or
        size changed while attached (an online extend with per-GB keys, an
        edited QoS spec; Cinder refuses an in-use retype that changes
        front-end QoS): Nova applies QoS only at attach. The new limits
        become the disk's original value (restored on stop).

        At first sight of a disk (agent start, new attach) the disk's live
        limits are compared with its volume's: a retype while the agent
        was not running left Nova's attach-time limits in place.
        """
        rebase = getattr(actuator, 'rebase', None)
        for inst in instances:
            for disk in inst.disks:
                if not disk.serial or not disk.qos:
                    continue
                key = (inst.uuid, disk.target)
                want = qos_attach.iotune(disk.qos)
                prev = self._static.get(key)
                self._static[key] = want
                if prev == want or rebase is None:
                    continue
                if prev is None:
                    prev = _live_static(actuator, inst.uuid, disk.target)
                    if prev is None or prev == want:
                        continue
                    why = ('at first sight its live limits differ: the '
                           'type, QoS spec or size changed while the agent '
                           'was not watching')
                else:
                    why = ('its type, QoS spec or size changed while '
                           'attached')
                rebase(model.Action(
                    kind=knob_kinds.DISK_IOTUNE, instance_uuid=inst.uuid,
                    target=disk.target, value=want, rule=RULE_RETUNE,
                    reason='volume %s: QoS limits now %s (were %s): %s' % (
                        disk.serial, want, prev, why)), 'slo',
                    now())


def _live_static(actuator, uuid, target):
    """The disk's live front-end limits (the keys Nova sets), or None
    when they cannot be read or a policy of ours holds the knob.
    """
    held = getattr(getattr(actuator, 'journal', None), 'pending',
                   None)
    if held is not None and (knob_kinds.DISK_IOTUNE, uuid,
                             target) in held():
        return None
    # Read through the actuator's knob set: drivers read no knobs.
    try:
        live = actuator.read_knob(knob_kinds.DISK_IOTUNE, uuid,
                                       target)
    except Exception as e:  # a disk we cannot read is left alone
        LOG.debug('cannot read the limits of %s/%s: %s', uuid, target, e)
        return None
    return qos_attach.iotune(live or {})
