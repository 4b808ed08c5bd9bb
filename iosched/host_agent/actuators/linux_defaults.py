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
"""What the Linux knobs of a VM are when no agent changed them: the
desired state ``LinuxKnobs.desired`` answers with at start
(``iosched.host_agent.actuators.reconcile``).

* ``vcpu_deadline``, ``io_thread_deadline``: None (SCHED_OTHER): Nova sets
  no SCHED_DEADLINE;
* ``vcpu_slice``, ``emulator_slice``: the kernel's default EEVDF slice, read
  from this agent's own main thread, whose slice it never changes;
* ``vcpu_weight``: the cgroup default weight (libvirt sets none on vCPU
  groups).

Deadlines come first in ``kinds``: a deadline thread has no fair slice to
read until its reservation is put back.
"""

import os

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import knob_set
from iosched.host_agent import linux
from iosched.host_agent.linux import cgroups
from iosched.host_agent.linux import sched

_SLICES = (knob_kinds.VCPU_SLICE, knob_kinds.EMULATOR_SLICE)
_DEADLINES = (knob_kinds.VCPU_DEADLINE, knob_kinds.IO_DEADLINE)


def kinds(with_cgroups):
    """The Linux kinds reconciled, in the order they are put back."""
    out = _DEADLINES + _SLICES
    return out + (knob_kinds.VCPU_WEIGHT,) if with_cgroups else out


def desired(kind, proc_root='/proc'):
    """The value of ``kind`` no agent has changed; ``NoDesired`` else."""
    if kind in _DEADLINES:
        return None
    if kind in _SLICES:
        try:
            return sched.get_slice_us(os.getpid(), proc_root)
        except linux.LinuxKnobError as e:
            raise knob_set.NoDesired('the host\'s default slice is '
                                     'unknown: %s' % e)
    if kind == knob_kinds.VCPU_WEIGHT:
        return cgroups.WEIGHT_DFL
    raise knob_set.NoDesired('%s is not reconciled' % kind)
