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
"""``SimulatedKnobs``: the knob set of a simulated host (the only writer).

Registered as ``simulated`` in ``iosched.host_agent.knobs``: the agent's
``DriverActuator`` writes a ``SimulatedDriver``'s host through it, as it
writes a real host through ``iosched.host_agent.actuators.host_knobs``. Kinds:
slice, weight, affinity, iotune, a vCPU's SCHED_DEADLINE reservation, the
VM-level weight and CFS cap, and the vaio policy's ``vm_io_weight``.

Not modelled, so not listed in ``knobs()``: ``io_thread_deadline`` and
``emulator_pin`` (the simulator has no QEMU I/O or emulator threads), and
on a host whose scheduler model is not Linux EEVDF
(``iosched.simulator.xen``) ``vcpu_deadline`` and ``vm_cap``.

``vm_io_weight`` holds each VM's weight (default 100) without changing
service: the model's FIFO device reads no weight, so the vaio policy sets
none there and notes why (seed 004's per-VM queue is modelled in
``iosched.simulator.vaio``, not here). The weights belong to the
simulated host, as a real host's cgroup files do: every knob set over the
same ``SimHost`` sees the same values.

Knobs that outlive the agent (``[host_agent] simulated_state_file``, the
daemon's fault tests): with a state file every write is also saved there
(``state_file``) and ``restore_state`` puts the saved values back on a
new process's simulated host.
"""

import weakref

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.drivers import base
from iosched.simdriver import state_file

DEFAULT_IO_WEIGHT = 100
# SimHost -> {uuid: vm_io_weight}: the simulator models no per-VM I/O
# weight, so the host's values are kept here, beside it.
_IO_WEIGHTS = weakref.WeakKeyDictionary()
# SimHost -> {(kind, uuid, target): value as the scenario defines it}, for
# the reconciliation at start (``SimulatedKnobs.desired``).
_DEFINED = weakref.WeakKeyDictionary()


class SimulatedKnobs(knob_set.KnobSet):
    """read/write of the simulated host ``driver.sim``."""

    KINDS = (knob_kinds.VCPU_SLICE, knob_kinds.VCPU_WEIGHT,
             knob_kinds.VCPU_PIN, knob_kinds.DISK_IOTUNE,
             knob_kinds.VCPU_DEADLINE, knob_kinds.VM_WEIGHT,
             knob_kinds.VM_CAP, knob_kinds.VM_IO_WEIGHT)
    # kinds only some scheduler models have -> their name in sched.knobs
    _NEEDS = {knob_kinds.VCPU_DEADLINE: 'deadline',
              knob_kinds.VM_CAP: 'cap'}

    def __init__(self, driver, state_path=None):
        super().__init__(driver)
        self.sim = driver.sim
        self.state_path = state_path or None
        self._state = {}       # (kind, uuid, target) -> value saved
        self._note_defined()

    @classmethod
    def for_driver(cls, conf, driver):
        """The knob set of ``driver``'s simulated host; with
        ``[host_agent] simulated_state_file``, the saved values are put
        back first.
        """
        knobs = cls(driver, state_path=conf.host_agent.simulated_state_file)
        knobs.restore_state()
        return knobs

    # The kinds reconciled at start (iosched.host_agent.actuators.
    # reconcile): what a fresh simulated host has is the VM's definition.
    RECONCILED = (knob_kinds.VCPU_DEADLINE, knob_kinds.VCPU_SLICE,
                  knob_kinds.VCPU_WEIGHT, knob_kinds.VCPU_PIN,
                  knob_kinds.VM_WEIGHT, knob_kinds.VM_CAP)

    def _note_defined(self):
        """Keep every reconciled knob's value as the scenario defines it,
        once per simulated host, when a knob set first sees it (before any
        saved value is put back, before any write): ``desired`` answers
        with it.
        """
        if self.sim in _DEFINED:
            return
        try:
            instances = self.driver.list_instances()
        except Exception:       # a driver that cannot list: nothing known
            return
        defined = _DEFINED[self.sim] = {}
        kinds = [k for k in self.RECONCILED if k in self.knobs()]
        for instance in instances:
            for kind in kinds:
                targets = ([''] if kind in (knob_kinds.VM_WEIGHT,
                                            knob_kinds.VM_CAP)
                           else [str(i) for i in range(instance.vcpus)])
                for target in targets:
                    key = (kind, instance.uuid, target)
                    try:
                        defined[key] = self.read_knob(*key)
                    except base.DriverError:
                        pass

    def reconciled_kinds(self):
        return tuple(k for k in self.RECONCILED if k in self.knobs())

    def desired(self, kind, instance_uuid, target):
        try:
            return _DEFINED[self.sim][(kind, instance_uuid, target)]
        except KeyError:
            raise knob_set.NoDesired('no defined %s for %s/%s on this '
                                     'simulated host' % (kind, instance_uuid,
                                                         target))

    def knobs(self):
        have = self.sim.sched.knobs
        return tuple(k for k in self.KINDS
                     if k not in self._NEEDS or self._NEEDS[k] in have)

    def read_knob(self, kind, instance_uuid, target):
        sim = self.sim
        try:
            if kind == knob_kinds.VCPU_SLICE:
                return sim.get_vcpu_slice(instance_uuid, int(target))
            if kind == knob_kinds.VCPU_WEIGHT:
                return sim.get_vcpu_weight(instance_uuid, int(target))
            if kind == knob_kinds.VCPU_PIN:
                pcpus = sim.get_vcpu_affinity(instance_uuid, int(target))
                return None if pcpus is None else tuple(pcpus)
            if kind == knob_kinds.DISK_IOTUNE:
                return dict(sim.get_disk_iotune(instance_uuid, target))
            if kind == knob_kinds.VCPU_DEADLINE:
                return sim.get_vcpu_deadline(instance_uuid, int(target))
            if kind == knob_kinds.VM_WEIGHT:
                return sim.get_vm_weight(instance_uuid)
            if kind == knob_kinds.VM_CAP:
                return sim.get_vm_cap(instance_uuid)
            if kind == knob_kinds.VM_IO_WEIGHT:
                self._vm(instance_uuid)
                return self._io_weights().get(instance_uuid,
                                              DEFAULT_IO_WEIGHT)
        except ValueError as e:
            raise base.DriverError(str(e))
        raise base.DriverError('unknown knob %r; accepted: %s'
                               % (kind, ', '.join(self.KINDS)))

    def write_knob(self, kind, instance_uuid, target, value):
        self._write(kind, instance_uuid, target, value)
        if self.state_path is not None:
            self._state[(kind, instance_uuid, target)] = value
            state_file.save(self.state_path, self._state)

    def _write(self, kind, instance_uuid, target, value):
        sim = self.sim
        try:
            if kind == knob_kinds.VCPU_SLICE:
                return sim.set_vcpu_slice(instance_uuid, int(target),
                                          int(value))
            if kind == knob_kinds.VCPU_WEIGHT:
                return sim.set_vcpu_weight(instance_uuid, int(target),
                                           int(value))
            if kind == knob_kinds.VCPU_PIN:
                return sim.set_vcpu_affinity(
                    instance_uuid, int(target),
                    None if value is None else tuple(value))
            if kind == knob_kinds.DISK_IOTUNE:
                return sim.set_disk_iotune(instance_uuid, target,
                                           dict(value))
            if kind == knob_kinds.VCPU_DEADLINE:
                return sim.set_vcpu_deadline(instance_uuid, int(target),
                                             value)
            if kind == knob_kinds.VM_WEIGHT:
                return sim.set_vm_weight(instance_uuid, int(value))
            if kind == knob_kinds.VM_CAP:
                return sim.set_vm_cap(instance_uuid, value)
            if kind == knob_kinds.VM_IO_WEIGHT:
                return self._set_io_weight(instance_uuid, value)
        except (ValueError, TypeError) as e:
            raise base.DriverError(str(e))
        raise base.DriverError('unknown knob %r; accepted: %s'
                               % (kind, ', '.join(self.KINDS)))

    def _set_io_weight(self, uuid, value):
        self._vm(uuid)
        if (isinstance(value, bool) or not isinstance(value, int)
                or not 1 <= value <= 1000):
            raise ValueError('vm_io_weight %r: want an int 1..1000'
                             % (value,))
        self._io_weights()[uuid] = value

    def _io_weights(self):
        return _IO_WEIGHTS.setdefault(self.sim, {})

    def _vm(self, uuid):
        if uuid not in set(self.sim.vm_uuids()):
            raise ValueError('no instance %s on this simulated host' % uuid)

    def restore_state(self):
        """Apply the saved knob values (a new process on the same host);
        returns how many. Nothing without a state file.
        """
        if self.state_path is None:
            return 0
        self._state = state_file.load(self.state_path)
        for (kind, uuid, target), value in self._state.items():
            self._write(kind, uuid, target, value)
        return len(self._state)
