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
"""``LibvirtDriver``: inventory and counters of real guests (read only).

Per tick: the active domains (``listAllDomains``), their XML (cached per
domain id: Nova metadata, extra specs, disks with their ``<serial>`` and
the ``<iotune>`` Nova wrote at attach, NICs), ``getAllDomainStats``
(vCPU time/wait/delay, block and net counters), the vCPU and I/O-path
threads from procfs, per vCPU thread its counters (schedstat run/wait,
voluntary context switches, last CPU) and, with tracefs, exact wake-ups;
per domain its completed I/O requests (block and net stats, and opt-in
the other virtio devices' virtqueues: ``virtio_queues``).

Writes do not happen here: ``iosched.host_agent.actuators.host_knobs`` (the
knob set registered for ``libvirt`` in ``iosched.host_agent.knobs``) applies
knobs (sched_setattr and cgroups through privsep, libvirt for pinning,
iotune, interface bandwidth and schedinfo). This driver also resolves
instance/vCPU to thread ids, cgroups and domains for them. The LSVM
mechanisms' probes (deadline admission, wake-up self-test) are in
``lsvm_probes``.

Configuration::

    [host_agent]
    driver = libvirt
    [libvirt]
    uri = qemu:///system
    [host_paths]
    proc_root = /proc
"""

import socket
import time

from oslo_log import log as logging

from iosched.host_agent.drivers import base
from iosched.host_agent.drivers.libvirt import block_devices
from iosched.host_agent.drivers.libvirt import connection
from iosched.host_agent.drivers.libvirt import domain_xml
from iosched.host_agent.drivers.libvirt import lsvm_probes
from iosched.host_agent.drivers.libvirt import monitor_reads
from iosched.host_agent.drivers.libvirt import qemu_histograms
from iosched.host_agent.drivers.libvirt import resolve
from iosched.host_agent.drivers.libvirt import threads
from iosched.host_agent.drivers.libvirt import tracing
from iosched.host_agent.drivers.libvirt import virtio_queues
from iosched.host_agent import model
from iosched.host_agent import paths

try:
    import libvirt
except ImportError:   # the agent still imports; from_conf says why not
    libvirt = None

LOG = logging.getLogger(__name__)


def parse_cpu_list(text):
    """'0-3,6' (sysfs cpu lists) -> (0, 1, 2, 3, 6)."""
    return domain_xml.parse_cpuset(text.strip())


def _ignore_libvirt_error(ctx, err):
    """libvirt's default handler prints every error on stderr (``libvirt:
    XML-RPC error : ...``); each one reaches the agent as a libvirtError,
    which says it in the log, once.
    """


def quiet_libvirt():
    """No raw libvirt error text on stderr (Nova's Host does the same)."""
    libvirt.registerErrorHandler(_ignore_libvirt_error, None)


class LibvirtDriver(connection.Connection, resolve.Resolution,
                    monitor_reads.MonitorReads, base.Driver):
    name = 'libvirt'
    reads_iotune = True

    def __init__(self, conf, conn):
        self.conf = conf
        self.conn = conn      # None between a lost and a reopened connection
        self._lost_at = None  # monotonic time the connection was lost
        p = conf.host_paths
        self.proc_root = p.proc_root
        self.run_dir = p.libvirt_run_dir
        self._xml = {}        # domain id -> (uuid, Domain)
        self._blocks = {}     # domain id -> block device names last tick
        self._partial = {}    # domain id -> ticks seen without all vCPUs
        self._info = {}       # uuid -> (Domain, pid, {vcpu: tid})
        self._stats = {}      # uuid -> getAllDomainStats dict
        self._events = {}     # tid -> [wake-up ts_ns]
        self._runs = {}       # tid -> [switch-in ts_ns]
        self._hierarchy = None   # the cpu cgroup hierarchy (resolve)
        self._dl_warned = set()
        self._hists = {}      # uuid -> {target: cumulative bins}
        self.histograms = (qemu_histograms.Histograms()
                           if conf.libvirt.latency_histograms else None)
        self._requests = {}   # uuid -> cumulative completed I/O requests
        self._io_tids = {}    # uuid -> (pid, [emulator and I/O tids])
        self.virtio = (virtio_queues.VirtioQueues()
                       if conf.libvirt.virtio_request_counts else None)
        self.tracer = None
        if conf.libvirt.trace_wakeups and tracing.WakeupTracer.available(
                p.tracefs_root):
            try:
                self.tracer = tracing.WakeupTracer(p.tracefs_root)
                self.tracer.open()
            except OSError as e:
                LOG.warning('tracefs at %s unusable (%s): I/O events are '
                            'estimated from wake-up counters', p.tracefs_root,
                            e)
                self.tracer = None
        elif conf.libvirt.trace_wakeups:
            LOG.warning('no tracefs with sched_wakeup at %s: I/O events are '
                        'estimated from wake-up counters', p.tracefs_root)

    @classmethod
    def from_conf(cls, conf):
        if libvirt is None:
            raise base.DriverError('libvirt-python is not installed '
                                   '(pip install libvirt-python)')
        quiet_libvirt()
        try:
            conn = libvirt.open(conf.libvirt.uri)
        except libvirt.libvirtError as e:
            raise base.DriverUnavailable('cannot connect to %s: %s'
                                         % (conf.libvirt.uri, e))
        return cls(conf, conn)

    # -- inventory -------------------------------------------------------
    def host_name(self):
        return self.conf.host_agent.host or socket.gethostname()

    def pcpus(self):
        configured = self.conf.libvirt.guest_pcpus
        if configured:
            return parse_cpu_list(configured)
        path = paths.safe_join(self.conf.host_paths.sys_root, 'devices',
                               'system', 'cpu', 'online')
        with open(path) as fh:
            return parse_cpu_list(fh.read())

    # Seconds since the epoch (the HostReport contract's ``ts``), advancing
    # with the monotonic clock: sample windows never jump with a clock step.
    # Found on the one-machine cloud: the bare monotonic clock put the
    # host's boot time in every report (iosched-status printed an age of
    # decades; reports after a reboot looked older than the last one).
    _EPOCH_OF_MONOTONIC_ZERO = time.time() - time.monotonic()

    def now(self):
        return self._EPOCH_OF_MONOTONIC_ZERO + time.monotonic()

    # -- inventory, continued --------------------------------------------
    def list_instances(self):
        doms = self._domains()
        seen_ids, infos, n_io, io_tids = set(), {}, {}, {}
        for dom in doms:
            dom_id = dom.ID()
            seen_ids.add(dom_id)
            try:
                cached = self._xml.get(dom_id)
                if cached is None or cached[0] != dom.UUIDString():
                    parsed = domain_xml.parse(dom.XMLDesc(0))
                    self._xml[dom_id] = cached = (parsed.uuid, parsed, dom)
                uuid, parsed, _ = cached
                pid = threads.qemu_pid(self.run_dir, parsed.name)
                found = threads.qemu_threads(self.proc_root, pid)
            except (domain_xml.DomainXMLError, threads.ThreadError,
                    paths.UnsafePath, libvirt.libvirtError) as e:
                if isinstance(e, libvirt.libvirtError):
                    self._raise_if_lost(e)
                LOG.warning('skipping domain %s: %s', dom.name(), e)
                continue
            if not self._all_vcpus_run(dom_id, parsed, found):
                continue
            infos[uuid] = (parsed, pid, found.vcpus, dom, dom_id)
            io_tids[uuid] = (pid, sorted({pid} | set(found.io.values())))
            n_io[uuid] = threads.io_path_threads(found)
        for gone in set(self._xml) - seen_ids:
            del self._xml[gone]
        for gone in set(self._partial) - seen_ids:
            del self._partial[gone]
        if self.histograms is not None:
            self.histograms.forget(set(self._info) - set(infos))
        if self.virtio is not None:
            self.virtio.forget(set(self._info) - set(infos))
        self._info = infos
        self._io_tids = io_tids
        self._refresh_stats()
        self._drop_xml_of_changed_disks()
        self._refresh_histograms()
        self._refresh_requests()
        insts = [model.InstanceInfo(
            uuid=uuid, name=d.name, flavor=d.flavor, vcpus=d.vcpus,
            extra_specs=dict(d.extra_specs),
            disks=tuple(model.DiskInfo(target=k.target, serial=k.serial,
                                       iotune=dict(k.iotune))
                        for k in d.disks),
            generation=dom_id, io_threads=n_io[uuid])
            for uuid, (d, _, _, _, dom_id) in sorted(infos.items())]
        self._refresh_events(insts)
        return insts

    # Ticks a domain may lack some of its vCPU threads before it is said
    # at WARNING (about 10 s at the default 1 s tick).
    PARTIAL_WARN_TICKS = 10

    def _all_vcpus_run(self, dom_id, parsed, found):
        """Whether every vCPU of the domain has its thread. A domain
        that QEMU is still starting (its vCPU threads not yet named) or
        already tearing down (its vCPU threads gone before the process) is
        left out of this tick: the agent would plan knobs it cannot write.
        Found on the one-machine cloud: a second LSVM's first tick logged
        ``cannot set vcpu_slice ... no thread for vCPU 0``. Said at DEBUG
        while it is short, at WARNING once if it lasts.
        """
        missing = [v for v in range(parsed.vcpus) if v not in found.vcpus]
        if not missing:
            self._partial.pop(dom_id, None)
            return True
        ticks = self._partial[dom_id] = self._partial.get(dom_id, 0) + 1
        log = LOG.warning if ticks == self.PARTIAL_WARN_TICKS else LOG.debug
        log('skipping domain %(name)s for now: no thread for vCPU %(miss)s '
            'of %(n)d (%(ticks)d ticks; QEMU starting or stopping it)',
            {'name': parsed.name, 'miss': ', '.join(map(str, missing)),
             'n': parsed.vcpus, 'ticks': ticks})
        return False

    def _refresh_stats(self):
        doms = [v[3] for v in self._info.values()]
        self._stats = {}
        if not doms:
            return
        flags = (libvirt.VIR_DOMAIN_STATS_VCPU |
                 libvirt.VIR_DOMAIN_STATS_BLOCK |
                 libvirt.VIR_DOMAIN_STATS_INTERFACE)
        try:
            for dom, stats in self.conn.domainListGetStats(doms, flags):
                self._stats[dom.UUIDString()] = stats
        except libvirt.libvirtError as e:
            self._raise_if_lost(e)
            LOG.warning('getAllDomainStats failed: %s', e)

    def _drop_xml_of_changed_disks(self):
        """Forget the cached XML of a domain whose block devices changed
        (a volume attached or detached live: Nova's attach writes the new
        disk, its ``<serial>`` and ``<iotune>`` into the live XML), so the
        next tick reads it again. Found on the one-machine cloud: cached per
        domain id for the domain's life, a hot-attached SLO volume stayed
        invisible until the agent restarted.
        """
        blocks = {}
        for uuid, (_, _, _, _, dom_id) in self._info.items():
            stats = self._stats.get(uuid)
            if stats is None:
                continue
            names = frozenset(stats.get('block.%d.name' % i)
                              for i in range(stats.get('block.count', 0)))
            known = self._blocks.get(dom_id)
            if known is not None and known != names:
                self._xml.pop(dom_id, None)
            blocks[dom_id] = names
        self._blocks = blocks

    def _refresh_events(self, insts):
        """Drain the trace: wake-ups of every vCPU thread, switch-ins of
        the LSVMs' only (their wake-to-run delays are vSlicer's W; a
        CPU-bound vCPU's ~300 preemptions a second would cost parsing).
        """
        if self.tracer is None:
            return
        lsvms = {i.uuid for i in insts if i.latency_sensitive}
        self.tracer.watch((t for v in self._info.values()
                           for t in v[2].values()),
                          [t for u, v in self._info.items() if u in lsvms
                           for t in v[2].values()])
        self._events, self._runs = self.tracer.drain()

    # -- counters --------------------------------------------------------
    def vcpu_samples(self, instance):
        parsed, pid, tids = self._info[instance.uuid][:3]
        ts = self.now()
        out = []
        for vcpu in range(parsed.vcpus):
            tid = tids.get(vcpu)
            if tid is None:
                raise base.DriverError('no thread for vCPU %d of %s'
                                       % (vcpu, parsed.name))
            try:
                run, wait, wakeups, cpu = threads.thread_counters(
                    self.proc_root, pid, tid)
            except threads.ThreadError as e:
                raise base.DriverError(str(e))
            events = delays = None
            if self.tracer is not None:
                events = self._events.get(tid, ())     # ns, not copied
                if self.tracer.switches:
                    delays = tracing.run_delays(events,
                                                self._runs.get(tid, ()))
            out.append(model.VcpuSample(
                instance_uuid=instance.uuid, vcpu=vcpu, ts=ts, pcpu=cpu,
                run_ns=run, wait_ns=wait, wakeups=wakeups,
                io_events=events, run_delays_ns=delays,
                io_requests=self._requests.get(instance.uuid)))
        return out

    def io_thread_samples(self, instance):
        """The summed run time of the VM's emulator and I/O threads
        (schedstat), for vTurbo's turbo-pool accounting.
        """
        pid, tids = self._io_tids[instance.uuid]
        ts = self.now()
        run = 0
        for tid in tids:
            try:
                run += threads.thread_counters(self.proc_root, pid, tid)[0]
            except threads.ThreadError:
                continue       # an I/O thread that exited: not counted
        return [model.IoThreadSample(instance_uuid=instance.uuid, ts=ts,
                                     run_ns=run)]

    def disk_samples(self, instance):
        stats = self._stats.get(instance.uuid, {})
        ts = self.now()
        out = []
        for i in range(int(stats.get('block.count', 0))):
            name = stats.get('block.%d.name' % i)
            if not name:
                continue
            g = lambda k: int(stats.get('block.%d.%s' % (i, k), 0))  # noqa
            out.append(model.DiskSample(
                instance_uuid=instance.uuid, target=name, ts=ts,
                rd_reqs=g('rd.reqs'), wr_reqs=g('wr.reqs'),
                rd_bytes=g('rd.bytes'), wr_bytes=g('wr.bytes'),
                total_time_ns=g('rd.times') + g('wr.times'),
                latency_hist=self._hists.get(instance.uuid, {}).get(name)))
        return out

    def block_devices(self):
        """``model.BlockDevice`` per host device under the disks of the
        last ``list_instances`` (the vaio policy's input).
        """
        return block_devices.resolve(
            [(uuid, d.target, d.source)
             for uuid, (parsed, _, _, _, _) in sorted(self._info.items())
             for d in parsed.disks], self.conf.host_paths.sys_root)

    def domain_stats(self, uuid):
        """The raw getAllDomainStats of the last tick (vcpu.N.delay...)."""
        return dict(self._stats.get(uuid, {}))

    # -- the LSVM mechanisms' probes (lsvm_probes) -------------------------
    def deadline_state(self):
        """``model.DeadlineState`` of this host (``lsvm_probes``), over the
        QEMU processes of the running domains (read now: the agent asks
        before its first tick too).
        """
        pids = self._qemu_pids()       # reconnects when libvirtd restarted
        try:
            host_cpus = self.conn.getCPUMap(0)[0]
        except libvirt.libvirtError:
            host_cpus = None
        return lsvm_probes.deadline_state(self.conf, pids, host_cpus,
                                          self._dl_warned)

    def _qemu_pids(self):
        pids = set()
        for dom in self._domains():
            try:
                pids.add(threads.qemu_pid(self.run_dir, dom.name()))
            except threads.ThreadError as e:
                LOG.debug('deadline admission: %s', e)
        return sorted(pids)

    def wakeup_probe(self, cases, wakes=300, hogs_per_cpu=2,
                     lsvm_weight=10000, repeats=1, share_ms=0,
                     weight_group=''):
        """The wake-up self-test over ``pcpus()`` (``lsvm_probes``)."""
        return lsvm_probes.wakeup_probe(self.conf, self.pcpus, cases,
                                        wakes=wakes,
                                        hogs_per_cpu=hogs_per_cpu,
                                        lsvm_weight=lsvm_weight,
                                        repeats=repeats, share_ms=share_ms,
                                        weight_group=weight_group)

    def close(self):
        if self.tracer is not None:
            self.tracer.close()
            self.tracer = None
        try:
            if self.conn is not None:
                self.conn.close()
        except Exception:
            pass
