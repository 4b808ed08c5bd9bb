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
"""``SimulatedDriver``: how the agent reads a simulated host.

The host is an ``iosched.simulator.host.SimHost``.

Used by the embedded default (``iosched-demo``), the reproductions and the
tests; the daemon's wall-clock variant is ``iosched.simdriver.daemon``.
The simulator exposes what a real host does (schedstat-like run and wait
times, wake-ups, per-disk counters, tracepoint-like I/O event timestamps),
plus the wake-up self-test (``wakeup_probe``, run in a fresh simulated
host with this host's kernel model) and the deadline admission figures
(``deadline_state``). Like every driver it only reads: the knobs (slice,
weight, affinity, iotune, a vCPU's SCHED_DEADLINE reservation, the
VM-level weight and CFS cap, a VM's I/O weight) are written by
``iosched.simdriver.knobs.SimulatedKnobs``.

Block I/O (the vaio policy): ``block_devices()`` names the model's one
shared device, ``sim-disk``, with scheduler ``fifo``
(``iosched.simulator.disk`` serves requests first come, first served,
whatever their VM).
"""

from iosched.contract import lsvm as lsvm_bound
from iosched.contract import slo
from iosched.host_agent.drivers import base
from iosched.host_agent import model
from iosched.simulator import probe as sim_probe

# The model device's name and scheduler.
SIM_DEVICE = 'sim-disk'
SIM_SCHEDULER = 'fifo'


class SimulatedDriver(base.Driver):
    name = 'simulated'

    def __init__(self, sim_host, instances=None):
        """``instances``: uuid -> model.InstanceInfo (Nova's metadata)."""
        self.sim = sim_host
        self._instances = dict(instances or {})
        self._hist = set()      # (uuid, target) with a histogram set

    # -- inventory -------------------------------------------------------
    def host_name(self):
        return self.sim.spec.name

    def pcpus(self):
        return tuple(range(self.sim.spec.pcpus))

    def now(self):
        return self.sim.now_us / 1e6

    def add_instance(self, info):
        """Record Nova's metadata for a VM already added to the simulator."""
        self._instances[info.uuid] = info

    def remove_instance(self, uuid):
        self._instances.pop(uuid, None)
        self._hist = {k for k in self._hist if k[0] != uuid}

    @classmethod
    def from_conf(cls, conf):
        """The daemon's simulated host, on the wall clock
        (``iosched.simdriver.daemon``).
        """
        from iosched.simdriver import daemon
        return daemon.build(conf)

    def list_instances(self):
        present = set(self.sim.vm_uuids())
        return [i for u, i in self._instances.items() if u in present]

    # -- counters --------------------------------------------------------
    def vcpu_samples(self, instance):
        ts = self.now()
        readings = self.sim.drain_vcpu_readings(instance.uuid)
        if instance.vcpus > len(readings):
            raise ValueError('vcpu: %d out of range for instance %s; '
                             'accepted: 0..%d' % (len(readings),
                                                  instance.uuid,
                                                  len(readings) - 1))
        samples = []
        # the simulator's drained arrays as they are (us): no conversion
        # per event (iosched.contract.isacs.ema_gap scales the gaps),
        # with E_n as the simulator counted it (no pass over them)
        for vcpu, (c, events, distinct) in enumerate(
                readings[:instance.vcpus]):
            samples.append(model.VcpuSample(
                instance_uuid=instance.uuid, vcpu=vcpu, ts=ts, pcpu=c.pcpu,
                run_ns=c.run_us * 1000, wait_ns=c.wait_us * 1000,
                wakeups=c.wakeups, io_events=events, io_events_unit_ns=1000,
                io_event_count=distinct))
        return samples

    def disk_samples(self, instance):
        ts = self.now()
        samples = []
        for disk in instance.disks:
            key = (instance.uuid, disk.target)
            if key not in self._hist:
                # As the libvirt driver asks QEMU for one (same buckets).
                self.sim.set_disk_latency_histogram(
                    instance.uuid, disk.target,
                    tuple(b / 1000.0 for b in slo.LATENCY_HIST_BOUNDS_NS))
                self._hist.add(key)
            c = self.sim.disk_counters(instance.uuid, disk.target)
            samples.append(model.DiskSample(
                instance_uuid=instance.uuid, target=disk.target, ts=ts,
                rd_reqs=c.rd_reqs, wr_reqs=c.wr_reqs, rd_bytes=c.rd_bytes,
                wr_bytes=c.wr_bytes, total_time_ns=c.total_time_us * 1000,
                latency_hist=c.latency_hist))
        return samples

    # -- capacity --------------------------------------------------------
    # capacity := parallelism * 1e6 / (service_us + S * per_byte_ns / 1000)
    # i.e. S-byte requests per second with every device slot busy; S is the
    # SLOs' default reference size (cinder_qos default_ref_io_bytes).
    def disk_capacity_iops(self, ref_io_bytes=slo.DEFAULT_REF_IO_BYTES):
        """The model's device capacity in IOPS of ``ref_io_bytes``."""
        disk = self.sim.spec.disk
        mean_us = disk.service_us + ref_io_bytes * disk.per_byte_ns / 1000.0
        return disk.parallelism * 1e6 / mean_us

    def block_devices(self):
        """The model's one device under every disk (``model.BlockDevice``,
        scheduler ``fifo``).
        """
        disks = tuple(sorted((i.uuid, d.target)
                             for i in self.list_instances()
                             for d in i.disks))
        if not disks:
            return ()
        return (model.BlockDevice(name=SIM_DEVICE, scheduler=SIM_SCHEDULER,
                                  schedulers=(SIM_SCHEDULER,), disks=disks),)

    # -- LSVM mechanisms ---------------------------------------------------
    def wakeup_probe(self, cases, wakes=300, hogs_per_cpu=2,
                     lsvm_weight=10000, repeats=1, share_ms=0):
        """The wake-up self-test (``iosched.simulator.probe``) in a fresh
        simulated host with this host's pCPUs, slices and kernel model: a
        tuple of ``model.WakeupProbe``, one per case in order
        (``contract.lsvm.PROBE_CASES``; the deadline
        case's period is the self-test's 2 ms). Deterministic; it does not
        touch this host's VMs or clock. Cost: about 3 ms of CPU per case on
        a 2-pCPU host at the defaults (simulating 0.6 s each). Deterministic,
        so one run stands for ``repeats``; ``share_ms``: the share is not
        simulated (0: not measured).
        """
        bad = [c for c in cases if c not in lsvm_bound.PROBE_CASES]
        if bad:
            raise base.DriverError(
                'wakeup_probe: unknown case(s) %s; accepted: %s'
                % (', '.join(map(repr, bad)),
                   ', '.join(lsvm_bound.PROBE_CASES)))
        try:
            rows = sim_probe.wakeup_probe(
                self.sim.spec, tuple(cases), wakes=int(wakes),
                hogs_per_cpu=int(hogs_per_cpu), lsvm_weight=int(lsvm_weight))
        except ValueError as e:
            raise base.DriverError('wakeup_probe: %s' % e)
        return tuple(model.WakeupProbe(**r) for r in rows)

    def deadline_state(self):
        """``model.DeadlineState``: all pCPUs are one root domain
        (``all_cpus``); the simulator has no threads but the VMs'
        (``foreign`` 0).
        """
        st = self.sim.deadline_state()
        return model.DeadlineState(cpus=st['cpus'], limit=st['limit'],
                                   foreign=0.0, reserved=st['reserved'],
                                   all_cpus=True)
