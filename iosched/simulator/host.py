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
"""``SimHost``: a deterministic discrete-event model of one KVM host.

The public API the host agent's ``SimulatedDriver`` and the demo use:
add/remove VMs, advance simulated time (``run_until``), read counters a
real host exposes (schedstat-like vCPU times, wake-ups, tracepoint-like
I/O event timestamps, blockstats-like disk counters), set the knobs the
agent acts on (EEVDF slice, cgroup weight, affinity, iotune,
SCHED_DEADLINE, VM-level weight and CFS cap) and read
results (request and disk latencies, CPU time) over a time window.

Time is integer microseconds (``now_us``). All randomness comes from
``random.Random`` objects seeded from ``seed`` and a stream name (VM uuid
and vCPU index, or the disk device), so a run is a pure function of the
seed and the calls made, and adding a VM does not change the random
streams of the others.
"""

import array
import math
import random

from iosched.simulator import backend as backends
from iosched.simulator import checks
from iosched.simulator import cpu
from iosched.simulator import deadline
from iosched.simulator import disk as disks
from iosched.simulator import events
from iosched.simulator import host_results
from iosched.simulator import paper_workloads
from iosched.simulator import sched_base
from iosched.simulator import spec as specs
from iosched.simulator import throttle
from iosched.simulator import workloads


class _Vm:
    __slots__ = ('spec', 'uuid', 'ents', 'disks', 'lat_t', 'lat_v',
                 'weight', 'vcpu_weights')

    def __init__(self, vm_spec):
        self.spec = vm_spec
        self.uuid = vm_spec.uuid
        self.weight = checks.WEIGHT_DEFAULT     # VM-level cgroup weight
        self.vcpu_weights = []                  # per-vCPU cgroup weights
        self.ents = []
        self.disks = {}
        self.lat_t = array.array('q')   # request completion times
        self.lat_v = array.array('q')   # request latencies

    def record_latency(self, now, lat):
        self.lat_t.append(now)
        self.lat_v.append(lat)


def _build_scheduler(host_spec, loop):
    s = host_spec.scheduler
    if s is None:
        return cpu.Scheduler(loop, host_spec.pcpus, host_spec.switch_cost_us,
                             host_spec.balance_us, host_spec.default_slice_us,
                             host_spec.kernel)
    return s.build(loop, host_spec)


class SimHost(host_results.HostResults):
    def __init__(self, host_spec, seed=0):
        if not isinstance(host_spec, specs.HostSpec):
            raise ValueError('host_spec: %r is invalid; accepted: a '
                             'spec.HostSpec' % (host_spec,))
        self.spec = host_spec
        self.seed = seed
        self.loop = events.EventLoop()
        self.sched = _build_scheduler(host_spec, self.loop)
        self.device = disks.DiskDevice(self.loop, host_spec.disk,
                                       self._rng('disk'))
        self.backend = backends.Backend(self.loop, host_spec.backend,
                                        self._rng('backend'))
        self._vms = {}
        self._next_eid = 0

    def _rng(self, stream):
        return random.Random('%s/%s' % (self.seed, stream))

    # -- time -----------------------------------------------------------------
    @property
    def now_us(self):
        return self.loop.now

    @property
    def events_processed(self):
        """Events the loop has run so far (for performance checks)."""
        return self.loop.processed

    def run_until(self, t_us):
        """Advance simulated time to ``t_us`` (microseconds, >= now_us)."""
        if (isinstance(t_us, bool) or not isinstance(t_us, (int, float))
                or not math.isfinite(t_us) or t_us < self.loop.now):
            raise ValueError('t_us: %r is invalid; accepted: a time in us '
                             '>= now_us (%d)' % (t_us, self.loop.now))
        self.loop.run_until(int(t_us))

    # -- VMs ------------------------------------------------------------------
    def add_vm(self, vm_spec):
        if not isinstance(vm_spec, specs.VmSpec):
            raise ValueError('vm_spec: %r is invalid; accepted: a '
                             'spec.VmSpec' % (vm_spec,))
        if vm_spec.uuid in self._vms:
            raise ValueError('uuid: %r is already on host %s; accepted: a '
                             'new uuid' % (vm_spec.uuid, self.spec.name))
        vm = _Vm(vm_spec)
        now = self.loop.now
        for name in vm_spec.disks:
            vm.disks[name] = disks.GuestDisk(name, self.loop, self.device)
        for i, wl_spec in enumerate(vm_spec.vcpus):
            ent = self.sched.new_entity(self._next_eid, vm, i,
                                        checks.WEIGHT_DEFAULT)
            self._next_eid += 1
            vm.vcpu_weights.append(checks.WEIGHT_DEFAULT)
            rng = self._rng('%s/vcpu%d' % (vm_spec.uuid, i))
            if isinstance(wl_spec, specs.PAPER_WORKLOADS):
                ent.wl = paper_workloads.build(
                    wl_spec, ent, self.sched, self.loop, vm, rng, vm.disks,
                    self.backend)
            else:
                ent.wl = workloads.build(wl_spec, ent, self.sched, self.loop,
                                         vm, rng, vm.disks)
            vm.ents.append(ent)
        self._vms[vm.uuid] = vm
        for ent in vm.ents:
            ent.wl.start(now)

    def remove_vm(self, uuid):
        vm = self._vm(uuid)
        now = self.loop.now
        for ent in vm.ents:
            self.sched.remove(ent, now)
        for gdisk in vm.disks.values():
            gdisk.remove()
        del self._vms[uuid]

    def vm_uuids(self):
        """uuids of the VMs on the host, in the order they were added."""
        return list(self._vms)

    def vcpu_count(self, uuid):
        return len(self._vm(uuid).ents)

    def _vm(self, uuid):
        vm = self._vms.get(uuid)
        if vm is None:
            raise ValueError('uuid: unknown instance %r on host %s; '
                             'accepted: one of %s'
                             % (uuid, self.spec.name, list(self._vms)))
        return vm

    def _ent(self, uuid, vcpu):
        vm = self._vm(uuid)
        n = len(vm.ents)
        if isinstance(vcpu, bool) or not isinstance(vcpu, int) or not (
                0 <= vcpu < n):
            raise ValueError('vcpu: %r out of range for instance %s; '
                             'accepted: 0..%d' % (vcpu, uuid, n - 1))
        return vm.ents[vcpu]

    def _disk(self, uuid, disk):
        vm = self._vm(uuid)
        gdisk = vm.disks.get(disk)
        if gdisk is None:
            raise ValueError('disk: unknown disk %r of instance %s; '
                             'accepted: one of %s'
                             % (disk, uuid, list(vm.disks)))
        return gdisk

    # -- knobs ----------------------------------------------------------------
    def set_vcpu_slice(self, uuid, vcpu, slice_us):
        """EEVDF custom slice (sched_setattr sched_runtime), in us."""
        ent = self._ent(uuid, vcpu)
        self.sched.set_slice(ent, checks.slice_us(slice_us), self.loop.now)

    def get_vcpu_slice(self, uuid, vcpu):
        return self.sched.get_slice(self._ent(uuid, vcpu))

    # The model has one entity per vCPU, not libvirt's group entities
    # (machine/<vm>/vcpuN): the weight an entity competes with is
    #   effective := clamp(vcpu_weight * vm_weight / 100, 1, 10000)
    # i.e. the VM-level weight applied in full to each of its vCPUs. On
    # Linux the VM's group entity on a pCPU gets vm_weight x (its load
    # there / its total load), so this is exact for a VM with one runnable
    # vCPU (an LSVM) and gives a VM with k vCPUs busy on k pCPUs up to k
    # times its kernel weight; a vCPU weight only orders a VM's own vCPUs
    # on Linux, here it competes with other VMs (as before).
    def _apply_weight(self, vm, vcpu):
        eff = vm.vcpu_weights[vcpu] * vm.weight // checks.WEIGHT_DEFAULT
        eff = min(checks.WEIGHT_MAX, max(checks.WEIGHT_MIN, eff))
        self.sched.set_weight(vm.ents[vcpu], eff, self.loop.now)

    def set_vcpu_weight(self, uuid, vcpu, weight):
        """cgroup v2 cpu.weight of the vCPU thread (1..10000)."""
        self._ent(uuid, vcpu)
        vm = self._vm(uuid)
        vm.vcpu_weights[vcpu] = checks.weight(weight)
        self._apply_weight(vm, vcpu)

    def get_vcpu_weight(self, uuid, vcpu):
        self._ent(uuid, vcpu)
        return self._vm(uuid).vcpu_weights[vcpu]

    def set_vm_weight(self, uuid, weight):
        """cgroup v2 cpu.weight of the VM's group (1..10000), applied to
        each vCPU (see ``_apply_weight``).
        """
        vm = self._vm(uuid)
        vm.weight = checks.weight(weight, 'vm_weight')
        for i in range(len(vm.ents)):
            self._apply_weight(vm, i)

    def get_vm_weight(self, uuid):
        return self._vm(uuid).weight

    def set_vm_cap(self, uuid, cap):
        """CFS bandwidth cap of the VM's group in CPUs (quota / period,
        e.g. 0.25), or None = unlimited (``iosched.simulator.cpu_bandwidth``).
        """
        vm = self._vm(uuid)
        if cap is not None:
            cap = checks.number_range('vm_cap', cap, 0, self.spec.pcpus,
                                      lo_open=True)
        self.sched.set_cap(vm.ents, cap, self.loop.now)

    def get_vm_cap(self, uuid):
        vm = self._vm(uuid)
        return self.sched.get_cap(vm.ents[0])

    def set_vcpu_deadline(self, uuid, vcpu, params):
        """SCHED_DEADLINE for the vCPU thread: a dict {runtime_us,
        deadline_us, period_us}, or None = back to SCHED_OTHER
        (``iosched.simulator.cpu_deadline``: refused unless the vCPU may run on
        every pCPU, and beyond the host's admission limit).
        """
        ent = self._ent(uuid, vcpu)
        self.sched.set_deadline(ent, deadline.validate(params),
                                self.loop.now)

    def get_vcpu_deadline(self, uuid, vcpu):
        params = self.sched.get_deadline(self._ent(uuid, vcpu))
        return None if params is None else deadline.as_dict(params)

    def deadline_state(self):
        """SCHED_DEADLINE admission: {'cpus': pCPU ids of the one root
        domain, 'limit': CPUs the kernel admits there, 'reserved': CPUs the
        VMs' reservations hold} (the simulator has no other threads).
        """
        n = self.spec.pcpus
        return {'cpus': tuple(range(n)),
                'limit': self.spec.kernel.dl_bw_limit * n,
                'reserved': self.sched.deadline_bw()}

    def set_vcpu_affinity(self, uuid, vcpu, pcpus):
        """None = all pCPUs, else a tuple of pCPU ids (pinning)."""
        ent = self._ent(uuid, vcpu)
        allowed = checks.affinity(pcpus, self.spec.pcpus)
        self.sched.check_affinity(ent, allowed)
        self.sched.set_affinity(ent, allowed, self.loop.now)

    def get_vcpu_affinity(self, uuid, vcpu):
        return self._ent(uuid, vcpu).allowed

    def set_disk_iotune(self, uuid, disk, iotune):
        """Replace the disk's whole iotune configuration ({} = none)."""
        gdisk = self._disk(uuid, disk)
        gdisk.set_iotune(throttle.validate(iotune))

    def get_disk_iotune(self, uuid, disk):
        return dict(self._disk(uuid, disk).iotune)

    def set_disk_latency_histogram(self, uuid, disk, bounds_us):
        """Count the disk's latencies into buckets with these upper bounds
        (QEMU's block-latency-histogram-set); counting starts now.
        """
        self._disk(uuid, disk).set_histogram(bounds_us)

    # -- counters -------------------------------------------------------------
    def vcpu_counters(self, uuid, vcpu):
        return self._counters(self._ent(uuid, vcpu))

    def _counters(self, ent):
        run, wait = self.sched.counters(ent, self.loop.now)
        return specs.VcpuCounters(run_us=run, wait_us=wait,
                                  wakeups=ent.wakeups,
                                  switches=ent.switches, pcpu=ent.last_cpu)

    def drain_vcpu_readings(self, uuid):
        """``vcpu_counters`` and ``drain_io_deliveries`` of every vCPU of
        the instance, in vCPU order, in one call (the agent's driver reads
        them all each tick): a list of (counters, times, distinct).
        """
        return [(self._counters(ent),) + self._drain(ent)
                for ent in self._vm(uuid).ents]

    def drain_io_events(self, uuid, vcpu):
        """Timestamps (us) of I/O response events since the last drain."""
        return list(self.drain_io_deliveries(uuid, vcpu)[0])

    def drain_io_deliveries(self, uuid, vcpu):
        """(timestamps (us, an ``array('q')``), how many differ from the one
        before them) of the I/O response events since the last drain.
        """
        return self._drain(self._ent(uuid, vcpu))

    @staticmethod
    def _drain(ent):
        out = ent.io_events, ent.io_distinct
        ent.io_events = sched_base.io_event_buffer()
        ent.io_distinct = 0
        return out

    def io_events_dropped(self, uuid, vcpu):
        """Events lost because more than IO_EVENTS_CAP were not drained."""
        return self._ent(uuid, vcpu).io_dropped

    def disk_counters(self, uuid, disk):
        g = self._disk(uuid, disk)
        return specs.DiskCounters(rd_reqs=g.rd_reqs, wr_reqs=g.wr_reqs,
                                  rd_bytes=g.rd_bytes, wr_bytes=g.wr_bytes,
                                  total_time_us=g.total_time_us,
                                  latency_hist=g.histogram())
