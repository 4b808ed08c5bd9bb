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
"""The operator guide's path end to end (docs/operator.md sections 3c, 5).

Real pieces: four ``io-host-agent`` processes (``driver = simulated``, the
wall-clock simulated host of ``iosched.simdriver.daemon``,
instead of libvirt) whose host-agent.conf is section 3c's ``ini`` block,
read from docs/operator.md and edited as an operator would (only the values
after ``key =`` change, so a trailing comment oslo.config would take as
part of the value breaks the test), the RabbitMQ of
``IOSCHED_RABBIT_URL``, ``iosched-status --host`` as the guide's check,
and Nova's API, conductor and scheduler in Nova's functional harness
(``ProviderUsageBaseTestCase``, fake computes host1..host4) with nova.conf
as docs/nova.md "Enable it" says: ``[iosched] listen_for_reports = true``
and ``[DEFAULT] transport_url`` the real broker, so the scheduler's report
listener (``iosched.nova_plugin.listener``) gets the agents' reports over the
bus. Nova's own RPC stays on the harness's fake driver (its transport is built
before the test sets the URL); only the iosched listener reads the URL.
The worker's listener is started (``SchedulerState.start_listener``) as a
scheduler worker's starts at plugin load or fork (the harness loaded the
filters before the test set ``listen_for_reports``), before the first
request.

The hosts differ in their agents' configuration:

* host1, host4: the guide's configuration (vslicer, ``mechanism = auto``:
  the simulated self-test picks deadline, p99 wake-up a few us);
* host2: ``policies = isacs`` (no vSlicer): ``lsvm.supported = false``;
* host3: vslicer on a kernel without wake-up preemption
  (``mechanism = slice``, ``wakeup_preemption = false``): a woken LSVM may
  wait a whole T_NLSVM = 3 ms > L = 2 ms (the simulated host already runs
  an LSVM with ``iosched:latency_ms = 2``, which the new one must not
  break).

The flavor is the guide's (``iosched:latency_sensitive=true``,
``iosched:latency_ms=5``, ``trait:CUSTOM_IOSCHED_LSVM=required``,
``resources:CUSTOM_IOSCHED_LSVM_BW=500``). Before any agent runs, no host
has the trait: NoValidHost. The agents also keep their child providers
``<host>:iosched`` (``[io_inventory] publish = true`` in 3c): LSVM
bandwidth on host1, host3, host4, none on host2. The agents publish it
(``[lsvm_trait] publish = true``, ``[placement]`` with ``admin_token`` for
the fixture's noauth2) to the harness's Placement, served for them over
HTTP on 127.0.0.1 (same app and database as the harness's in-process
one): host1, host3, host4 get it, host2 (no vSlicer) does not. LSVM
servers land on host1 or host4 only: Placement leaves host2 out,
``LsvmFilter`` host3; a flavor without the trait line shows
``LsvmFilter`` alone rejects host2 too. Then host4's agent is stopped
(SIGTERM, exit 0): its trait stays, its report goes stale after
``report_ttl_intervals`` report intervals; with the default
``missing_report_policy = pass`` host4 still passes ``IoDensityFilter``
and ``LsvmFilter`` (no report, no verdict), with ``reject`` it is filtered
out and the next LSVMs go to host1 until host1's LSVM bandwidth is claimed
(1900 milli-CPUs: three LSVMs at 500), then NoValidHost. Every agent is stopped
with SIGTERM at the end and must exit
0. Figures (time to each host's first report through ``iosched-status``,
to the scheduler's store, to the trait, to place) are printed.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from wsgiref import simple_server

import fixtures
import nova.conf
from nova.tests.functional.api import client
from nova.tests.functional import integrated_helpers
from placement import deploy

from iosched.nova_plugin import conf as iosched_conf
from tests import fixtures as iosched_fixtures
from tests.nova import plugin_state

CONF = nova.conf.CONF
BIN = os.path.dirname(sys.executable)
AGENT = os.path.join(BIN, 'io-host-agent')
STATUS = os.path.join(BIN, 'iosched-status')
# Agents tick every 0.5 s and report every 2 ticks: interval 1 s, stale
# after report_ttl_intervals (3) * 1 s.
TICK = 0.5
EVERY = 2
WAIT_S = 60

GUIDE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), 'docs', 'operator.md')
# What a test machine with several agents needs beyond the guide's file
# (a temporary journal, no metrics port, short intervals, this run's
# topics, the fixture's Placement without Keystone).
TEST_CONF = """\
[host_agent]
tick_interval = %(tick)s
report_every_ticks = %(every)s
journal_path = %(journal)s
[reporter]
topic = %(topic)s
resync_topic = %(agents)s
[metrics]
enabled = false
[placement]
endpoint = %(placement)s
token = admin
"""
# Keystone password options of the guide's [placement], not used here.
PASSWORD_OPTS = ('auth_url', 'username', 'password', 'project_name',
                 'user_domain_name', 'project_domain_name')


def guide_agent_conf():
    """The host-agent.conf block of docs/operator.md section 3c."""
    with open(GUIDE) as f:
        text = f.read()
    section = text[text.index('### 3c.'):text.index('## 4.')]
    return section.split('```ini\n', 1)[1].split('```', 1)[0]


def edit_conf(text, values):
    """``text`` with values replaced, as an operator edits the file: only
    the value after ``key =`` changes, the rest of the line stays (a
    trailing comment included). ``values``: {(section, key): new value,
    or None to drop the line}; every key must be in ``text``.
    """
    out, section, seen = [], 'DEFAULT', set()
    for line in text.splitlines():
        m = re.match(r'\[([^\]]+)\]', line)
        if m:
            section = m.group(1)
        m = re.match(r'(\s*(\w+)\s*=\s*)(\S+)(.*)$', line)
        if m and (section, m.group(2)) in values:
            seen.add((section, m.group(2)))
            value = values[(section, m.group(2))]
            if value is None:
                continue
            line = m.group(1) + value + m.group(4)
        out.append(line)
    missing = set(values) - seen
    if missing:
        raise AssertionError('docs/operator.md 3c does not set %s'
                             % sorted(missing))
    return '\n'.join(out) + '\n'


NO_PREEMPTION = """\
[host_agent_policy.vslicer]
mechanism = slice
wakeup_preemption = false
"""
TRAIT = 'CUSTOM_IOSCHED_LSVM'
# The guide's section 5 flavor; and the same without the trait.
LSVM_BW = 'CUSTOM_IOSCHED_LSVM_BW'
LSVM_SPECS = {'iosched:latency_sensitive': 'true',
              'iosched:latency_ms': '5',
              'trait:' + TRAIT: 'required',
              'resources:' + LSVM_BW: '500'}
NO_TRAIT_SPECS = {'iosched:latency_sensitive': 'true',
                  'iosched:latency_ms': '5'}


class _QuietHandler(simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def serve_placement(test):
    """The harness's Placement (same database) over real HTTP on
    127.0.0.1, for the agents' trait publishers; its endpoint URL.

    Under eventlet (Nova's tests monkey-patch by default) a green WSGI
    server: socketserver's selector was imported unpatched and its loop
    would never yield to the other green threads.
    """
    app = deploy.loadapp(test.placement.fixture.conf_fixture.conf)
    patcher = sys.modules.get('eventlet.patcher')
    if patcher is not None and patcher.is_monkey_patched('socket'):
        import eventlet
        from eventlet import wsgi
        sock = eventlet.listen(('127.0.0.1', 0))
        green = eventlet.spawn(wsgi.server, sock, app, log_output=False)

        def stop():
            green.kill()
            sock.close()
        port = sock.getsockname()[1]
    else:
        server = simple_server.make_server('127.0.0.1', 0, app,
                                           handler_class=_QuietHandler)
        thread = threading.Thread(target=server.serve_forever,
                                  daemon=True)
        thread.start()

        def stop():
            server.shutdown()
            server.server_close()
            thread.join(10)
        port = server.server_address[1]
    test.addCleanup(stop)
    return 'http://127.0.0.1:%d' % port


class OperatorPathTestCase(integrated_helpers.ProviderUsageBaseTestCase):

    compute_driver = 'fake.MediumFakeDriver'
    hosts = ('host1', 'host2', 'host3', 'host4')

    def setUp(self):
        self.url = iosched_fixtures.rabbit_url()
        # nova.conf of nova-scheduler as docs/nova.md "Enable it" says
        plugin_state.enable_plugin(self, 'IoDensityFilter', 'LsvmFilter',
                                   'SloCapacityFilter')
        super().setUp()
        plugin_state.ignore_noload_warning()
        tag = uuid.uuid4().hex[:8]
        self.topic = 'iosched-oppath-reports-%s' % tag
        self.agents_topic = 'iosched-oppath-agents-%s' % tag
        iosched_conf.register_opts(CONF)
        self.flags(transport_url=self.url)
        self.flags(listen_for_reports=True, report_topic=self.topic,
                   agents_topic=self.agents_topic, resync_on_start=True,
                   group='iosched')
        # The scheduler worker's state, fresh and on the wall clock.
        state = self.useFixture(plugin_state.PluginState(clock=time.time))
        self.worker, self.store = state.worker, state.store
        for host in self.hosts:
            self._start_compute(host)
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.placement_url = serve_placement(self)
        self.procs = {}
        self.addCleanup(self._stop_all)

    # -- agents ----------------------------------------------------------
    def write_conf(self, host, policies='vslicer', extra=''):
        """Section 3c's file with this host's values (the simulated driver
        for libvirt), then what the test machine needs, then ``extra``.
        """
        values = {('reporter', 'transport_url'): self.url,
                  ('host_agent', 'host'): host,
                  ('host_agent', 'driver'): 'simulated',
                  ('host_agent', 'policies'): policies,
                  ('lsvm_trait', 'publish'): 'true',
                  ('placement', 'auth_type'): 'admin_token'}
        values.update((('placement', k), None) for k in PASSWORD_OPTS)
        path = os.path.join(self.dir, '%s-host-agent.conf' % host)
        with open(path, 'w') as f:
            f.write(edit_conf(guide_agent_conf(), values))
            f.write(TEST_CONF % dict(
                tick=TICK, every=EVERY, topic=self.topic,
                agents=self.agents_topic, placement=self.placement_url,
                journal=os.path.join(self.dir, '%s-journal.jsonl' % host)))
            f.write(extra)
        return path

    def start_agent(self, host, conf):
        log = open(os.path.join(self.dir, '%s-agent.log' % host), 'w')
        self.addCleanup(log.close)
        self.procs[host] = (subprocess.Popen(
            [AGENT, '--config-file', conf], stdout=log,
            stderr=subprocess.STDOUT), conf)

    def agent_log(self, host):
        with open(os.path.join(self.dir, '%s-agent.log' % host)) as f:
            return f.read()[-3000:]

    def stop_agent(self, host, signal_it=True):
        """SIGTERM (once); the exit status (killed after 60 s: -9)."""
        proc, _ = self.procs[host]
        if signal_it and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()

    def _stop_all(self):
        for proc, _ in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        codes = {h: self.stop_agent(h, signal_it=False) for h in self.procs}
        bad = {h: rc for h, rc in codes.items() if rc != 0}
        self.assertEqual({}, bad, '\n'.join(self.agent_log(h) for h in bad))

    # -- scheduler side --------------------------------------------------
    def wait_store(self, hosts, fresh=True, timeout=WAIT_S):
        """Until every host's report is fresh (or, fresh=False, missing)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = {h: self.store.get(h) is not None for h in hosts}
            if all(v == fresh for v in got.values()):
                return
            time.sleep(0.1)
        self.fail('store after %d s: %s (want fresh=%s)' % (timeout, got,
                                                            fresh))

    def wait_traits(self, want, timeout=WAIT_S):
        """Until each host's provider has the trait or not, as wanted."""
        rps = {h: self._get_provider_uuid_by_host(h) for h in want}
        deadline = time.monotonic() + timeout
        while True:
            got = {h: TRAIT in self._get_provider_traits(rp)
                   for h, rp in rps.items()}
            if got == want or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        self.assertEqual(want, got, '\n'.join(
            self.agent_log(h) for h in want if got[h] != want[h]))

    def wait_lsvm_bw(self, want, timeout=WAIT_S):
        """Until each host's child provider <host>:iosched has an
        LSVM_BW inventory or not, as wanted; {host: total or None}.
        """
        deadline = time.monotonic() + timeout
        while True:
            got = {}
            for host in want:
                rps = self.placement.get(
                    '/resource_providers?name=%s:iosched' % host,
                    version='1.14').body['resource_providers']
                inv = (self.placement.get(
                    '/resource_providers/%s/inventories' % rps[0]['uuid'],
                    version='1.14').body['inventories'] if rps else {})
                got[host] = inv.get(LSVM_BW, {}).get('total')
            if ({h: t is not None for h, t in got.items()} == want or
                    time.monotonic() >= deadline):
                break
            time.sleep(0.2)
        self.assertEqual(want, {h: t is not None for h, t in got.items()},
                         '\n'.join(self.agent_log(h) for h in want))
        return got

    def lsvm_bw_room(self, host):
        """LSVM_BW total - reserved - used on <host>:iosched."""
        rp = self.placement.get(
            '/resource_providers?name=%s:iosched' % host,
            version='1.14').body['resource_providers'][0]['uuid']
        inv = self.placement.get('/resource_providers/%s/inventories' % rp,
                                 version='1.14').body['inventories'][LSVM_BW]
        used = self.placement.get('/resource_providers/%s/usages' % rp,
                                  version='1.14').body['usages'].get(
                                      LSVM_BW, 0)
        return inv['total'] - inv['reserved'] - used

    def boot(self, flavor, expected_state='ACTIVE'):
        server = self.api.post_server({'server': self._build_server(
            flavor_id=flavor, networks='none')})
        deadline = time.monotonic() + WAIT_S
        # ERROR: until its fault is recorded too (it comes after)
        while time.monotonic() < deadline and (
                server.get('status', 'BUILD') == 'BUILD' or
                server['status'] == 'ERROR' and 'fault' not in server):
            time.sleep(0.1)
            server = self.api.get_server(server['id'])
        self.assertEqual(expected_state, server['status'], '\n'.join(
            '%s %s %s' % (d.host, d.passed, d.reason)
            for d in self.worker.explainer.recent(request=server['id'])))
        return server

    def records(self, server, host):
        """[(passed, reason)] of the iosched filters for host, in order."""
        return [(d.passed, d.reason) for d in self.worker.explainer.recent(
            request=server['id'], host=host, stage='filter')]

    def lsvm_verdicts(self, server):
        """{host: (passed, reason)} of LsvmFilter for this server."""
        out = {}
        for d in self.worker.explainer.recent(request=server['id'],
                                              stage='filter'):
            if ('LSVM' in d.reason or 'lsvm' in d.reason or
                    'no fresh report' in d.reason):
                out.setdefault(d.host, (d.passed, d.reason))
        return out

    def test_guide_path_places_lsvms_where_the_bound_holds(self):
        # 5: the flavor through Nova's API; nova-api refuses a bad bound
        # (512 MB and 1 GB instead of the guide's 2048 MB and 20 GB: the
        # fake computes have 8 GB and the test boots 9 servers.)
        flavor = self._create_flavor(name='lsvm.small', vcpu=1,
                                     memory_mb=512, disk=1, ephemeral=0,
                                     extra_spec=LSVM_SPECS)
        exc = self.assertRaises(
            client.OpenStackApiException,
            self.api_fixture.admin_api.post_extra_spec, flavor,
            {'extra_specs': {'iosched:latency_ms': '0'}})
        self.assertEqual(400, exc.response.status_code)
        # No agent has published the trait yet: no host has it.
        server = self.boot(flavor, expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])

        # 3c: the configuration file of each compute node, the agent,
        # and iosched-status --host as the check that it reports.
        confs = {
            'host1': self.write_conf('host1'),
            'host2': self.write_conf('host2', policies='isacs'),
            'host3': self.write_conf('host3', extra=NO_PREEMPTION),
            'host4': self.write_conf('host4'),
        }
        t0 = time.monotonic()
        for host, conf in confs.items():
            self.start_agent(host, conf)
        checks = {h: subprocess.Popen(
            [STATUS, '--config-file', confs[h], '--host', h, '--wait',
             str(WAIT_S)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True) for h in self.hosts}
        first = {}
        for host, check in checks.items():
            out, err = check.communicate(timeout=WAIT_S + 30)
            first[host] = time.monotonic() - t0
            self.assertEqual(0, check.returncode, '%s\n%s\n%s' % (
                out, err, self.agent_log(host)))
            self.assertIn(host, [line.split()[0]
                                 for line in out.splitlines()[1:]], out)
        print('time to first report (agent start -> iosched-status --host '
              'exit 0): %s' % ', '.join('%s %.1f s' % kv
                                        for kv in sorted(first.items())))

        # nova-scheduler's worker starts its report listener (at fork in
        # a real worker) and asks every agent for its report.
        t1 = time.monotonic()
        bg = self.worker.start_listener(CONF)
        self.assertTrue(bg.listening.wait(WAIT_S),
                        (bg.state, bg.last_error))
        self.wait_store(self.hosts)
        print('scheduler listener: listening and every host in its store '
              'after %.1f s (resync)' % (time.monotonic() - t1))
        self.assertFalse(self.store.get('host2').lsvm.supported)
        self.assertEqual('deadline', self.store.get('host1').lsvm.mechanism)
        self.assertEqual('slice', self.store.get('host3').lsvm.mechanism)
        self.assertFalse(self.store.get('host3').lsvm.wakeup_preemption)

        # The agents publish the trait (their reports say vSlicer runs):
        # on host1, host3, host4; not on host2.
        t2 = time.monotonic()
        self.wait_traits({'host1': True, 'host2': False, 'host3': True,
                          'host4': True})
        print('%s on the providers after %.1f s more' % (
            TRAIT, time.monotonic() - t2))
        # ... and keep their child providers' inventories ([io_inventory]
        # publish = true): LSVM bandwidth where vSlicer runs.
        totals = self.wait_lsvm_bw({'host1': True, 'host2': False,
                                    'host3': True, 'host4': True})
        print('%s on the child providers: %s' % (LSVM_BW, totals))

        placed = []
        for _ in range(4):
            t3 = time.monotonic()
            server = self.boot(flavor)
            placed.append((server, time.monotonic() - t3))
        print('time to place (POST /servers -> ACTIVE): %s' % ', '.join(
            '%s %.1f s' % (s['OS-EXT-SRV-ATTR:host'], t) for s, t in placed))
        hosts = {s['OS-EXT-SRV-ATTR:host'] for s, _ in placed}
        self.assertLessEqual(hosts, {'host1', 'host4'})
        # host2 has no trait: Placement left it out, no filter saw it
        why = self.lsvm_verdicts(placed[0][0])
        self.assertEqual({'host1': True, 'host3': False, 'host4': True},
                         {h: v[0] for h, v in why.items()})
        self.assertIn('worst-case latency 3ms > L 2ms (mechanism slice)',
                      why['host3'][1])
        self.assertIn('W=max(T_NLSVM, measured p99', why['host3'][1])
        self.assertIn('LSVM fits (deadline)', why['host1'][1])

        # Without the trait line, LsvmFilter alone keeps host2 out.
        bare = self._create_flavor(name='lsvm.notrait', vcpu=1,
                                   memory_mb=512, disk=1, ephemeral=0,
                                   extra_spec=NO_TRAIT_SPECS)
        server = self.boot(bare)
        self.assertIn(server['OS-EXT-SRV-ATTR:host'], ('host1', 'host4'))
        why = self.lsvm_verdicts(server)
        self.assertEqual({'host1': True, 'host2': False, 'host3': False,
                          'host4': True},
                         {h: v[0] for h, v in why.items()})
        self.assertIn('no vSlicer policy in its agent', why['host2'][1])

        # host4's agent stops: SIGTERM, exit 0, its report goes stale.
        t4 = time.monotonic()
        self.assertEqual(0, self.stop_agent('host4'), self.agent_log('host4'))
        self.wait_store(['host4'], fresh=False)
        self.wait_store(['host1', 'host2', 'host3'])
        print('host4 stopped: exit 0 and its report stale after %.1f s'
              % (time.monotonic() - t4))
        # a clean stop leaves the trait: Placement still offers host4
        self.wait_traits({'host4': True}, timeout=0)

        # missing_report_policy = pass (default): no report, no verdict;
        # both report filters (IoDensityFilter, LsvmFilter: an LSVM needs
        # a report) let host4 through
        server = self.boot(flavor)
        self.assertEqual(
            [(True, 'no fresh report (missing_report_policy=pass)')] * 2,
            self.records(server, 'host4')[:2])
        self.assertIn(server['OS-EXT-SRV-ATTR:host'], ('host1', 'host4'))
        print('missing_report_policy=pass: host4 passes the filters without '
              'a report; the LSVM went to %s' % server['OS-EXT-SRV-ATTR:host'])

        # missing_report_policy = reject: only hosts that report (the
        # first report filter already says no)
        self.flags(missing_report_policy='reject', group='iosched')
        # (host1 holds 1900 milli-CPUs of LSVM bandwidth, 3 LSVMs at 500:
        # 0 or 1 left, as the earlier LSVMs went)
        room = self.lsvm_bw_room('host1') // 500
        for _ in range(room):
            server = self.boot(flavor)
            self.assertEqual('host1', server['OS-EXT-SRV-ATTR:host'])
            self.assertEqual(
                [(False, 'no fresh report (missing_report_policy=reject)')],
                self.records(server, 'host4'))
        # host1's LSVM bandwidth is now claimed to the last 500: Placement
        # offers it no more, the filters reject host4: NoValidHost
        self.assertLess(self.lsvm_bw_room('host1'), 500)
        server = self.boot(flavor, expected_state='ERROR')
        self.assertIn('No valid host', server['fault']['message'])
        self.assertEqual(
            [(False, 'no fresh report (missing_report_policy=reject)')],
            self.records(server, 'host4'))
        recent = self.worker.explainer.recent(request=server['id'],
                                              stage='filter')
        self.assertNotIn('host1', [d.host for d in recent])
        print('missing_report_policy=reject: %d more LSVM(s) on host1, then '
              'its %s was used up: NoValidHost' % (room, LSVM_BW))
