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
"""The agent: one tick = measure -> decide -> act -> (every N ticks) report.

Built by ``iosched.host_agent.assembly.build_agent`` (the command, the demo,
the benches and the tests); the constructor takes the parts ready-made.

``run()`` is wait + ``tick()``; a tick never raises: a bad VM is logged and
skipped, a failing policy is skipped, a failing report is retried next
time, and the host's regulation goes on. ``stop()`` restores every knob the
agent changed (from the journal).
"""

import collections
import threading
import time

from oslo_log import log as logging

from iosched.contract import stats
from iosched.host_agent import cinder_slo
from iosched.host_agent.collectors import disk as disk_collector
from iosched.host_agent.collectors import io_threads
from iosched.host_agent.collectors import vcpu_io_strength
from iosched.host_agent import deadline_watch
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import lsvm_mechanism
from iosched.host_agent import model
from iosched.host_agent.policies import compose
from iosched.host_agent.reporter import build
from iosched.host_agent import start_recovery
from iosched.host_agent import tick_wait
from iosched.host_agent import volume_retune
from iosched.host_agent import volume_slo

LOG = logging.getLogger(__name__)


class Agent(object):

    def __init__(self, conf, driver, policies, actuator, reporter=None,
                 collectors=None, host_sched=None):
        self.conf = conf
        self.driver = driver
        self.policies = list(policies)
        self.actuator = actuator
        self.reporter = reporter
        self.vcpu_collector, self.disk_collector = collectors or (
            vcpu_io_strength.VcpuIoStrengthCollector(conf),
            disk_collector.DiskCollector(conf))
        self.io_thread_collector = io_threads.IoThreadCollector(conf)
        self.host = conf.host_agent.host or driver.host_name()
        self.volumes = volume_slo.Resolver(conf.host_agent.volume_qos_file,
                                           cinder_slo.from_conf(conf))
        # a volume's static limits re-applied when they change attached
        self.retuner = volume_retune.Retuner()
        self.ticks = 0
        self.seq = 0
        self.last_snapshot = None
        self.last_plan = None
        self.last_report = None
        # policy name -> the Plan.state of its last decide (its own frozen
        # State; None for a stateless one), given to its next decide.
        self.policy_states = {}
        self._known = {}      # uuid -> generation seen last tick
        self._outage = None   # (first failed tick, monotonic t, message)
        self._disk_latency = collections.deque(maxlen=600)
        self._stop = threading.Event()
        # the wait between ticks and the calls queued for it
        self._between = tick_wait.Between(
            conf.host_agent.tick_interval,
            lambda: self.conf.host_agent.tick_interval)
        self._resend_lock = threading.Lock()
        # iosched.host_agent.metrics.AgentMetrics when [metrics] is on: told
        # the duration of every tick (tick_done never raises).
        self.observer = None
        # The LSVM mechanism in force: the one given, else resolved by
        # start() (until then, or without a vSlicer policy: slices, not
        # measured).
        self.host_sched = host_sched or model.HostSched()
        self._resolve_sched = host_sched is None
        # Why the agent stopped on its own (the journal cannot be written),
        # or None; the daemon then exits with status 1.
        self.failure = None

    @property
    def outage(self):
        """(first failed tick, monotonic t, error) or None: driver down."""
        return self._outage

    @property
    def report_interval(self):
        c = self.conf.host_agent
        return c.tick_interval * c.report_every_ticks

    def start(self):
        """Undo what a crashed previous run left (journal), put back what
        was changed without a record (reconciliation), then go; stop at
        once when the journal cannot be written.
        """
        # A guest's deadline thread the kernel left throttled freezes its
        # QEMU, and every libvirt call to it: free it before the driver is
        # asked anything (recovery reads the inventory first).
        deadline_watch.unstick(self.actuator)
        start_recovery.recover(self.conf, self.driver, self.actuator)
        self._check_journal()
        if self._resolve_sched and any(p.name == 'vslicer'
                                       for p in self.policies):
            # The wake-up self-test runs once, before any knob is ours.
            self.host_sched = lsvm_mechanism.resolve(self.conf, self.driver,
                                                     self.actuator)
        if any(p.name == 'slo' for p in self.policies):
            volume_slo.warn_without_source(self.conf, self.slo_source())

    def _check_journal(self):
        """Stop (after restoring) when the journal takes no entries: the
        agent never acts unjournaled.
        """
        if self.failure is None:
            self.failure = start_recovery.journal_failure(self.actuator)
            if self.failure is not None:
                LOG.error('%s', self.failure)
                self.stop()

    def slo_source(self, instances=()):
        """Where this agent reads SLOs (``volume_slo.host_source``)."""
        return volume_slo.host_source(
            self.volumes.cinder is not None,
            bool(self.conf.host_agent.volume_qos_file),
            getattr(self.driver, 'reads_iotune', False), instances)

    def tick(self):
        """One control step. Never raises."""
        t0 = time.monotonic()
        errors = []
        try:
            self._tick(errors)
        except driver_base.DriverError as e:
            # The hypervisor cannot be read (libvirtd restarting): the
            # knobs stay as they are; said once per outage.
            self._driver_down(e)
            errors.append('tick: %s' % e)
        except Exception as e:  # the loop must survive anything
            LOG.exception('tick %d failed', self.ticks)
            errors.append('tick: %s' % e)
        else:
            self._driver_up()
        self.ticks += 1
        if self.ticks % self.conf.host_agent.report_every_ticks == 0:
            self._report(errors)
        if self.observer is not None:
            self.observer.tick_done(self, time.monotonic() - t0)

    def _maybe_retest(self, n_guests):
        """Measure and choose the LSVM mechanism again when the host
        changed (``lsvm_mechanism.should_retest``); a new mechanism first
        puts every knob back (the old mechanism's decisions are not the new
        one's), then the plan of this tick applies the new one.
        """
        if not self._resolve_sched:
            return
        g = self.conf['host_agent_policy.vslicer']
        retest, why = lsvm_mechanism.should_retest(
            self.host_sched, time.monotonic(), n_guests,
            lsvm_mechanism.host_load(self.conf), g)
        if not retest:
            return
        LOG.info('the host changed (%s): LSVM self-test again', why)
        old = self.host_sched.mechanism
        self.host_sched = lsvm_mechanism.resolve(self.conf, self.driver,
                                                     self.actuator)
        if self.host_sched.mechanism != old:
            restored = self.actuator.restore_all()
            self.policy_states.pop('vslicer', None)
            LOG.warning('LSVM mechanism %s -> %s (%s); restored %d knobs '
                        'of the old one', old, self.host_sched.mechanism,
                        self.host_sched.measured_by, restored)

    def _driver_down(self, error):
        if self._outage is None:
            self._outage = (self.ticks, time.monotonic(), str(error))
            LOG.warning('tick %d: the driver cannot be read (%s); knobs '
                        'stay as they are, retried every tick', self.ticks,
                        error)
        else:
            LOG.debug('tick %d: the driver still cannot be read (%s)',
                      self.ticks, error)

    def _driver_up(self):
        if self._outage is not None:
            first, t0, _ = self._outage
            LOG.info('the driver answers again at tick %d, %d failed ticks '
                     '(%.1f s) after the first', self.ticks,
                     self.ticks - first, time.monotonic() - t0)
            self._outage = None

    def _tick(self, errors):
        instances = self.volumes.attach(self.driver.list_instances())
        self._maybe_retest(len(instances))
        current = {i.uuid: i.generation for i in instances}
        # Gone, or started again (a new process: hard reboot, or migrated
        # away and back) since the last tick: what the agent held on the
        # old process is moot (its threads and live settings went with
        # it), and the journal must not restore it onto the new one.
        gone = {u for u, g in self._known.items() if current.get(u) != g}
        restarted = gone & set(current)
        if restarted:
            LOG.info('instances %s run in a new process: their knobs start '
                     'from their defaults again', ', '.join(sorted(
                         restarted)))
        if gone:
            self.retuner.forget(gone)
            self.vcpu_collector.forget(gone)
            self.disk_collector.forget(gone)
            self.io_thread_collector.forget(gone)
            self.actuator.forget_instances(gone)
        adopt = getattr(self.actuator, 'adopt', None)
        if adopt is not None:
            # First sight (agent start, a new VM, one migrated in): what
            # another agent left on it, with no decision here, goes back.
            for uuid in sorted(u for u, g in current.items()
                               if self._known.get(u) != g):
                adopt(uuid)
        self._known = current
        self.retuner.retune(instances, self.actuator, self.driver.now)
        vcpus = self.vcpu_collector.collect(self.driver, instances)
        disks = self.disk_collector.collect(self.driver, instances)
        io_thr = self.io_thread_collector.collect(self.driver, instances)
        errors.extend(self.vcpu_collector.errors)
        errors.extend(self.io_thread_collector.errors)
        self.io_thread_collector.errors = []
        errors.extend(self.disk_collector.errors)
        self.vcpu_collector.errors = []
        self.disk_collector.errors = []
        for d in disks:
            if d.iops > 0:
                self._disk_latency.append(d.mean_latency_ms)
        prev_ts = self.last_snapshot.ts if self.last_snapshot else None
        now = self.driver.now()
        snapshot = model.HostSnapshot(
            host=self.host, ts=now,
            window_s=(now - prev_ts) if prev_ts is not None else 0.0,
            pcpus=tuple(self.driver.pcpus()),
            instances={i.uuid: i for i in instances},
            vcpus=vcpus, disks=disks, sched=self.host_sched,
            disk_capacity_iops=self._disk_capacity(),
            block_devices=self._block_devices(errors), io_threads=io_thr)
        self.last_snapshot = snapshot
        plans = []
        for policy in self.policies:
            try:
                plan = policy.decide(snapshot,
                                     self.policy_states.get(policy.name))
            except Exception as e:
                LOG.exception('policy %s failed; its actions are skipped',
                              policy.name)
                errors.append('policy %s: %s' % (policy.name, e))
                continue
            plans.append(plan)
            self.policy_states[policy.name] = plan.state
        plan = compose.merge_plans(plans)
        # A note (a refused bound, an LSVM without a reservation) is said
        # once, when it appears, not on every tick it still holds.
        said = set(self.last_plan.notes) if self.last_plan else set()
        for note in plan.notes:
            if note not in said:
                LOG.warning('%s', note)
        self.last_plan = plan
        self.actuator.apply(plan, now)
        errors.extend(getattr(self.actuator, 'errors', ()))
        self._check_journal()

    def _block_devices(self, errors):
        """The driver's ``block_devices()`` (the vaio policy's input), or
        () when it has none or cannot say.
        """
        from_driver = getattr(self.driver, 'block_devices', None)
        if from_driver is None:
            return ()
        try:
            return tuple(from_driver())
        except Exception as e:   # a device we cannot read: no vaio input
            LOG.warning('no block devices this tick: %s', e)
            errors.append('block devices: %s' % e)
            return ()

    def _disk_capacity(self):
        """[host_agent] disk_capacity_iops, else the driver's, else 0."""
        from_driver = getattr(self.driver, 'disk_capacity_iops', None)
        return build.choose_disk_capacity(
            self.conf.host_agent.disk_capacity_iops,
            from_driver() if from_driver is not None else None)

    def _report(self, errors):
        if self.last_snapshot is None:
            return
        # Other threads may take or free deadline bandwidth: re-read the
        # admission figures once per report (a /proc scan), but not while
        # the driver is down (they are read through it): the last ones
        # stand, and the outage is said once, not once per report.
        if self._outage is None:
            self.host_sched = lsvm_mechanism.refresh_deadline(
                self.host_sched, self.driver)
        lat = list(self._disk_latency)
        try:
            report = build.build_report(
                self.last_snapshot, self.seq, self.report_interval,
                lsvm=(self.last_plan.facts.get('lsvm')
                      if self.last_plan else None),
                disk_latency_p50_ms=stats.percentile(lat, 0.5) or 0.0,
                disk_latency_p99_ms=stats.percentile(lat, 0.99) or 0.0,
                errors=errors,
                decisions=build.report_decisions(self.conf, self.actuator),
                disk_capacity_iops=self._disk_capacity(),
                slo=(self.last_plan.facts.get('slo')
                     if self.last_plan else None),
                slo_source=self.slo_source(
                    self.last_snapshot.instances.values()))
        except Exception:    # a bug: say where
            LOG.exception('report %d not built; next one will be', self.seq)
            return
        self.last_report = report
        self.seq += 1
        if self.reporter is None:
            return
        try:
            self.reporter.report_host_io(report)
        except Exception as e:
            # The bus, not the agent (broker down, no scheduler listening
            # yet): one line; the traceback at DEBUG.
            LOG.warning('report %d not sent (%s: %s); next one will be',
                        report.seq, type(e).__name__, e)
            LOG.debug('report %d not sent', report.seq, exc_info=True)

    def resend_last_report(self):
        """Send the latest built report again, now (a scheduler's resync).

        Thread-safe: called from the resync server's threads while the
        control loop ticks. The report goes unchanged (same ``seq`` and
        ``ts``): a scheduler that holds it already ignores the copy, a new
        one stores it. Returns False when there is nothing to send yet.
        """
        report = self.last_report
        if report is None or self.reporter is None:
            return False
        with self._resend_lock:
            self.reporter.report_host_io(report)
        return True

    def run(self):
        """Tick every ``tick_interval`` seconds until ``stop()``, then
        restore every knob (also when ``start()`` or a bug raises).
        """
        try:
            self.start()
            deadline_watch.start(self.actuator, self._stop)
            while not self._stop.is_set():
                t0 = time.monotonic()
                self.tick()
                self._between.wait(t0, self._stop)
        finally:
            self.shutdown()

    def call_between_ticks(self, call):
        """Run ``call()`` in the control loop after the current tick (safe
        from a signal handler: the loop wakes up).
        """
        self._between.call(call)

    def stop(self):
        """End ``run()`` after the current tick (safe from a signal
        handler); ``run()`` then restores every knob.
        """
        self._stop.set()
        self._between.wake.set()

    def shutdown(self):
        """Restore every knob this agent changed."""
        restored = self.actuator.restore_all()
        LOG.info('agent stopped; restored %d knobs', restored)
        return restored
