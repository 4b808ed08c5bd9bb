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
"""One run of a scenario on a simulated cloud, stock or with iosched.

Each compute host is a ``iosched.simulator.host.SimHost``. With iosched,
each host runs the real agent (collectors, the scenario's policies:
vSlicer then ISACS by default, journaled actuator), built by
``iosched.host_agent.assembly`` over ``iosched.simdriver``'s
``SimulatedDriver`` and the simulator's knob set; agents report over
oslo.messaging (``fake:/`` in the process, or a ``rabbit://`` URL) to the real
Nova plugin endpoint, whose store feeds the real filter and weigher inside
Nova's handlers. Stock runs
the same requests with Nova's default filters/weighers and no agent; a
read-only collector still measures its vCPUs so both sides are reported
the same way.

Time: requests arrive every ``arrival_interval_s`` of simulated time; the
hosts advance in ticks of ``tick_s``; after the last placement comes a
warm-up, then the measured window.
"""

import time
import uuid as uuid_mod

from oslo_log import log as logging

from iosched.cinder_qos import translate
from iosched.contract import flavor as flavor_contract
from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.demo import placement
from iosched.host_agent import assembly
from iosched.host_agent.collectors import vcpu_io_strength
from iosched.host_agent import conf as agent_conf
from iosched.host_agent import model
from iosched.host_agent import plugins
from iosched.host_agent.reporter import messaging
from iosched.host_agent.reporter import rpcapi
from iosched.nova_plugin import state as plugin_state
from iosched.simdriver import driver as sim_driver
from iosched.simulator import host as sim_host
from iosched.simulator import spec as sim_spec
from iosched.simulator import spec_kernel

LOG = logging.getLogger(__name__)
CONF = agent_conf.CONF


def workload_for(server):
    w = dict(server.workload)
    kind = w.pop('type')
    if kind == 'cpu':
        return sim_spec.CpuBound()
    if kind == 'idle':
        return sim_spec.Idle()
    if kind == 'request_response':
        return sim_spec.RequestResponse(**w)
    if kind == 'mixed':
        return sim_spec.Mixed(**w)
    if kind == 'disk_closed_loop':
        return sim_spec.DiskClosedLoop(disk='vda', **w)
    raise ValueError('unknown workload %r' % kind)


def host_seed(seed, name):
    return seed * 1000003 + sum(ord(c) * (i + 1) for i, c in enumerate(name))


class Cloud(object):

    def __init__(self, scenario, with_iosched, transport_url='fake:/',
                 progress=None):
        self.sc = scenario
        self.with_iosched = with_iosched
        self.progress = progress or (lambda msg: None)
        self.sims = {}
        self.drivers = {}
        self.agents = {}
        self.observers = {}
        self.placements = []        # placement.Decision
        self.server_host = {}       # server name -> host
        self.server_uuid = {}
        self.qos = {}               # volume type -> QoS spec dict
        self.slos = {}
        for name, text in scenario.volume_types.items():
            self.slos[name] = slo_mod.parse(text)
            self.qos[name] = translate.translate(self.slos[name])
        # the scheduler worker's state: its store on the simulated clock
        self.state = (plugin_state.SchedulerState(clock=self.now)
                      if with_iosched else None)
        self.scheduler = placement.Scheduler(with_iosched, self.state)
        self.host_states = [placement.make_host_state(h, h.ram_mb)
                            for h in scenario.hosts]
        for h in scenario.hosts:
            sim = sim_host.SimHost(sim_spec.HostSpec(
                name=h.name, pcpus=h.pcpus,
                default_slice_us=h.default_slice_us,
                kernel=spec_kernel.kernel(h.kernel),
                disk=sim_spec.DiskSpec(service_us=h.disk_service_us,
                                       parallelism=h.disk_parallelism)),
                seed=host_seed(scenario.seed, h.name))
            self.sims[h.name] = sim
            self.drivers[h.name] = sim_driver.SimulatedDriver(sim)
            self.observers[h.name] = vcpu_io_strength.VcpuIoStrengthCollector(
                CONF)
        self.store = self.state.store if with_iosched else None
        self.server = None
        self.last_vcpus = {}        # host -> tuple[VcpuIoStrength]
        self.cpu_at = {}            # uuid -> cpu_run_us at t0
        if with_iosched:
            self._start_iosched(transport_url)

    # -- wiring ----------------------------------------------------------
    def _start_iosched(self, transport_url):
        from iosched.nova_plugin import endpoint
        CONF.set_override('tick_interval', self.sc.tick_s, 'host_agent')
        transport = messaging.get_transport(CONF, transport_url)
        # One transport for both ends: each fake:/ transport is its own bus.
        self.server = endpoint.start_listener(
            CONF, store=self.store, transport=transport,
            host='demo-scheduler-%s' % uuid_mod.uuid4().hex[:8],
            metrics=self.state.metrics)
        reporter = rpcapi.ReportAPI(transport, CONF.reporter.topic)
        for name, drv in self.drivers.items():
            self.agents[name] = assembly.build_agent(
                CONF, drv, reporter=reporter, journal_path='',
                policies=plugins.load_policies(CONF, self.sc.policies))
            self.agents[name].start()

    def close(self):
        for a in self.agents.values():
            a.shutdown()
        if self.server is not None:
            self.server.stop()
            self.server.wait()
        messaging.cleanup()

    def now(self):
        return min(s.now_us for s in self.sims.values()) / 1e6

    # -- time --------------------------------------------------------------
    def advance(self, until_s):
        """Run every host to ``until_s``, ticking agents on the way."""
        tick_us = int(self.sc.tick_s * 1e6)
        while True:
            now_us = min(s.now_us for s in self.sims.values())
            if now_us >= int(until_s * 1e6):
                return
            nxt = min((now_us // tick_us + 1) * tick_us, int(until_s * 1e6))
            for sim in self.sims.values():
                sim.run_until(nxt)
            if nxt % tick_us == 0:
                self._tick()

    def _tick(self):
        for name, drv in self.drivers.items():
            if self.with_iosched:
                agent = self.agents[name]
                agent.tick()
                if agent.last_snapshot is not None:
                    self.last_vcpus[name] = agent.last_snapshot.vcpus
            else:
                self.last_vcpus[name] = self.observers[name].collect(
                    drv, drv.list_instances())
        if self.with_iosched:
            self._await_reports()

    def _await_reports(self, timeout=10.0):
        """Reports travel through the bus asynchronously; wait for them."""
        want = {n: a.seq - 1 for n, a in self.agents.items() if a.seq}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            held = {n: self.store.get(n) for n in want}
            if all(held[n] is not None and held[n].seq >= s
                   for n, s in want.items()):
                return
            time.sleep(0.002)
        LOG.warning('reports not all delivered within %.0fs', timeout)

    # -- placement ----------------------------------------------------------
    def place(self, index, server):
        spec = placement.make_request_spec(server, index)
        decision = self.scheduler.select(server, spec, self.host_states)
        self.placements.append(decision)
        if not decision.host:
            self.progress('  %-12s NO VALID HOST' % server.name)
            return
        uuid = spec.instance_uuid
        self.server_host[server.name] = decision.host
        self.server_uuid[server.name] = uuid
        disks = ()
        if server.workload['type'] == 'disk_closed_loop' or server.volume_type:
            qos = self.qos.get(server.volume_type, {})
            disks = (model.DiskInfo(target='vda', serial=uuid, qos=qos),)
        sim = self.sims[decision.host]
        sim.add_vm(sim_spec.VmSpec(
            uuid=uuid, name=server.name,
            vcpus=tuple(workload_for(server)
                        for _ in range(server.flavor.vcpus)),
            disks=tuple(d.target for d in disks)))
        if disks and disks[0].qos:
            # What Nova's libvirt driver applies at attach: FRONTEND keys.
            sim.set_disk_iotune(uuid, 'vda', {
                k: float(v) for k, v in disks[0].qos.items()
                if k in qos_keys.FRONTEND_KEYS})
        self.drivers[decision.host].add_instance(model.InstanceInfo(
            uuid=uuid, name=server.name, flavor=server.flavor.name,
            vcpus=server.flavor.vcpus,
            extra_specs=dict(server.flavor.extra_specs), disks=disks))
        if self.store is not None:
            req = flavor_contract.read(server.flavor.extra_specs)
            io = req.has_io_vcpus
            lsvm = req.latency_sensitive
            self.store.note_placement(
                decision.host, io_vcpus=server.flavor.vcpus if io else 0,
                lsvm_vcpus=server.flavor.vcpus if lsvm else 0,
                vcpus=server.flavor.vcpus)

    def run(self):
        """Place every server, warm up, measure. Returns (t0_s, t1_s)."""
        t = 0.0
        self.advance(self.sc.tick_s)   # first samples: agents have a window
        for i, server in enumerate(self.sc.servers):
            t = max(t, self.now()) + self.sc.arrival_interval_s
            self.advance(t)
            self.place(i, server)
            d = self.placements[-1]
            self.progress('  [%2d/%d] %-12s -> %s' % (
                i + 1, len(self.sc.servers), server.name, d.host or '-'))
        t0 = self.now() + self.sc.warmup_s
        self.advance(t0)
        for name, uuid in self.server_uuid.items():
            self.cpu_at[uuid] = self.sims[self.server_host[name]].cpu_run_us(
                uuid)
        t1 = t0 + self.sc.measure_s
        step = max(self.sc.measure_s / 4.0, self.sc.tick_s)
        while self.now() < t1 - 1e-9:
            self.advance(min(t1, self.now() + step))
            self.progress('  simulated %.0f/%.0f s of the measured window'
                          % (self.now() - t0, self.sc.measure_s))
        return t0, t1


def run_variant(scenario, with_iosched, transport_url='fake:/',
                progress=None):
    """Run one variant; return (cloud, t0, t1). The caller closes cloud."""
    cloud = Cloud(scenario, with_iosched, transport_url, progress)
    try:
        t0, t1 = cloud.run()
    except Exception:
        cloud.close()
        raise
    return cloud, t0, t1


def set_defaults():
    """The agent configuration the embedded default uses: in-memory
    journal, a report every tick.
    """
    placement.setup_nova()     # parses the global CONF once
    CONF.set_override('journal_path', '', 'host_agent')
    CONF.set_override('report_every_ticks', 1, 'host_agent')
