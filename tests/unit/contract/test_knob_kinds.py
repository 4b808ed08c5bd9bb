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
"""iosched.contract.knob_kinds: every writer serves contract kinds, and
every kind a policy can plan has a writer on a real host and on the
simulator.
"""

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import blkio_knobs
from iosched.host_agent.actuators import libvirt_knobs
from iosched.host_agent.actuators import linux_knobs
from iosched.host_agent.actuators import lsvm_group_knobs
from iosched.simdriver import knobs as sim_knobs


def _real_host_kinds():
    return (set(libvirt_knobs.KINDS) | set(blkio_knobs.KINDS)
            | set(linux_knobs._THREAD_KINDS) | set(linux_knobs._CGROUP_KINDS)
            | {lsvm_group_knobs.KIND})


def test_kinds_are_unique():
    assert len(set(knob_kinds.KINDS)) == len(knob_kinds.KINDS)


def test_every_writer_kind_is_a_contract_kind():
    served = _real_host_kinds() | set(sim_knobs.SimulatedKnobs.KINDS)
    assert served <= set(knob_kinds.KINDS), served - set(knob_kinds.KINDS)


def test_every_contract_kind_has_a_real_host_writer():
    assert set(knob_kinds.KINDS) == _real_host_kinds()


def test_pin_kinds_are_kinds():
    assert set(knob_kinds.PIN_KINDS) <= set(knob_kinds.KINDS)
