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
"""``ansible/rollout.yml`` against the one-machine cloud (issue 26,
deliverable 6): the real ansible-playbook (this venv's ansible-core,
``connection: local``), the real roles, on the cloud's own compute host
and nova-scheduler.

* The DevStack plugin's agent is stopped first (SIGTERM to the agent
  alone: it restores its knobs; then ``procs stop``). The compute play
  (pre-check, then role ``iosched_host_agent``) installs the agent from a
  wheel of this checkout into an install root of its own under a temp dir,
  with the libvirt driver, the cloud's host name, bus (the ``iosched-cloud``
  vhost), Cinder and Placement credentials (copied from the plugin's
  host-agent.conf, as an operator copies nova-compute's: see
  tests/cloud/ansible_vars.py), policies ``vslicer,slo``, SLOs from Cinder,
  its own metrics port, and the ``background`` service manager; the
  role's health check sees its report on the bus.
* The scheduler play (role ``iosched_scheduler``) pip-installs the same
  wheel into the cloud venv (nova-scheduler's Python; ``--no-deps``, the
  role's default; it replaces the DevStack-installed iosched of the same
  checkout), edits the cloud's nova.conf and restarts nova-scheduler with
  ``python -m iosched.cloud.procs STATE restart nova-scheduler``.
* Asserted: ``iosched-status`` on the cloud's nova.conf (the schedulers'
  bus) lists the host; the agent's ``/metrics`` has live values (ticks
  counting, report age within three intervals, its build); nova-scheduler
  restarted with the wheel's plugin (its listener's log line); nova.conf
  changed only where the role's edit differs from the plugin's; a second
  run changes nothing and restarts nothing; a plain server and an LSVM
  server boot through the restarted scheduler onto this host, the
  rollout's agent manages the LSVM and reads an SLO volume's SLO from
  Cinder.
* The Grafana dashboard (as the package installed it): every series
  selector of its agent panels, matched against two live scrapes 5 s
  apart (tests/cloud/dashboard_series.py; the project has no PromQL
  evaluator, so this checks the selected series exist, not the queries'
  values).
* Teardown: servers and volume deleted, the rollout's agent stopped
  (``io-host-agent-ctl stop``: SIGTERM, knobs restored), nova.conf put
  back byte for byte (the running nova-scheduler read the role's, which
  means the same), the DevStack agent started again and its report
  awaited, the temp dir removed: the later tests find the cloud as ``up``
  left it (the cloud venv keeps the wheel's iosched: the same code).

Uses the session's cloud (tests/cloud/conftest.py); skipped locally
without ansible-playbook or the cloud's components, a failure under
CI=true. About 4 to 5 minutes on a running cloud.
"""

import difflib
import json
import os
import time

import pytest

from iosched.cloud import procs
from tests import ansible_run
from tests.cloud import ansible_vars
from tests.cloud import client
from tests.cloud.client import LAYOUT
from tests.cloud import dashboard_series
from tests.cloud import rollout_site
from tests import fixtures

AGENT = rollout_site.AGENT
NOVA_CONF = rollout_site.NOVA_CONF
DASHBOARD = os.path.join(ansible_run.ROOT, 'etc', 'grafana',
                         'iosched-dashboard.json')
LISTENING = 'Listening for iosched host reports on topic iosched-reports'
# nova.conf lines the scheduler role changes on top of the DevStack
# plugin's: the same filters, weigher and options, but the role writes
# booleans in lower case and sets resync_on_start (True, Nova's plugin
# default, which the plugin leaves out): ([removed], [added]).
NOVA_CONF_CHANGES = (['listen_for_reports = True'],
                     ['listen_for_reports = true', 'resync_on_start = true'])
# Agent-panel selectors that may select nothing on this host, and why;
# one with status="failed" must select nothing (no knob write may fail);
# every other one must select series (under rate/increase: in both
# scrapes).
MAY_BE_EMPTY = {
    'iosched_agent_slo_indicator': 'judged windows only: the idle guest '
                                   'completes no request on its volume',
}


@pytest.fixture(scope='module')
def site(cloud, tmp_path_factory):
    fixtures.require('ansible-core', os.path.exists(ansible_run.PLAYBOOK),
                     'no %s' % ansible_run.PLAYBOOK)
    site = rollout_site.Site(tmp_path_factory.mktemp('iosched-cloud-ansible'),
                             ansible_vars.read_ini(client.AGENT_CONF))
    site.prepare()
    try:
        rollout_site.stop_devstack_agent()
        yield site
    finally:
        rollout_site.teardown(site)


def _size(path):
    return os.path.getsize(path) if os.path.exists(path) else 0


def _since(path, offset):
    with open(path, errors='replace') as f:
        f.seek(offset)
        return f.read()


@pytest.fixture(scope='module')
def rolled_out(site):
    site.sched_offset = _size(LAYOUT.log('nova-scheduler'))
    first = site.play()
    assert first.returncode == 0, first.stdout[-6000:]
    return first


def _status():
    """iosched-status on the cloud's nova.conf: the schedulers' bus."""
    res = client.run([LAYOUT.bin('iosched-status'), '--config-file',
                      NOVA_CONF, '--host', LAYOUT.hostname, '--wait', '60',
                      '--json'])
    return {h['host']: h for h in json.loads(res.stdout)['hosts']}[
        LAYOUT.hostname]


def test_compute_play_installs_an_agent_that_reports(site, rolled_out):
    recap = rolled_out.recap
    assert recap[LAYOUT.hostname]['changed'] > 0, recap
    assert recap[ansible_vars.SCHEDULER_HOST]['changed'] > 0, recap
    assert procs.read_pid(LAYOUT.pidfile(AGENT)) is None
    assert site.ctl('status').returncode == 0
    with open('/proc/%d/cmdline' % site.pid()) as f:
        assert site.bin('io-host-agent') in f.read()
    conf = ansible_vars.read_ini(site.conf)
    assert conf['reporter']['transport_url'] == LAYOUT.transport_url
    assert conf['host_agent']['host'] == LAYOUT.hostname
    assert conf['host_agent']['driver'] == 'libvirt'
    assert conf['host_agent']['policies'] == 'vslicer,slo'
    assert conf['volume_slo'] == {'from_cinder': 'true'}
    assert conf['metrics']['port'] == str(site.port)
    row = _status()
    assert row['status'] == 'ok' and not row['errors'], row
    assert row['report_interval'] == pytest.approx(10.0)
    assert row['age_s'] < 30, row


def _metrics(series):
    out = {}
    for s in series:
        out.setdefault(s.name, []).append(s)
    return out


def test_metrics_endpoint_serves_live_values(site, rolled_out):
    first = _metrics(site.scrape()[0])
    time.sleep(3)
    second = _metrics(site.scrape()[0])
    (build,) = second['iosched_agent_build_info']
    assert build.labels['host'] == LAYOUT.hostname
    assert build.labels['policies'] == 'vslicer,slo'
    assert build.labels['mechanism'], build
    ticks = [m['iosched_agent_tick_duration_seconds_count'][0].value
             for m in (first, second)]
    assert 0 < ticks[0] < ticks[1], ticks
    (interval,) = second['iosched_agent_report_interval_seconds']
    (age,) = second['iosched_agent_report_age_seconds']
    assert 0 <= age.value < 3 * interval.value, (age, interval)
    assert second['iosched_agent_reports_total'][0].value > 0
    with open(site.base / 'run' / 'io-host-agent.log') as f:
        assert 'Prometheus metrics on http://127.0.0.1:%d/metrics' % (
            site.port) in f.read()


def _section(text, name):
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith('['):
            inside = line.strip() == '[%s]' % name
        elif inside and line.strip() and not line.startswith('#'):
            lines.append(line.strip())
    return lines


def test_scheduler_play_installs_the_plugin_and_restarts_nova(site,
                                                              rolled_out):
    # the cloud venv's iosched is the wheel now
    direct = client.run([LAYOUT.python, '-c', 'import importlib.metadata '
                         'as m; print(m.distribution("iosched").read_text('
                         '"direct_url.json"))'], cwd='/').stdout
    assert os.path.basename(site.wheel) in direct, direct
    # restarted (the procs start line), its listener up with the plugin
    log = LAYOUT.log('nova-scheduler')
    client.wait(lambda: LISTENING in _since(log, site.sched_offset).rsplit(
        '\n--- ', 1)[-1], 'nova-scheduler loads iosched again', 120)
    text = _since(log, site.sched_offset)
    starts = [ln for ln in text.splitlines()
              if ln.startswith('--- ') and ' start: ' in ln]
    assert len(starts) == 1, starts
    new = text.rsplit('\n--- ', 1)[-1].splitlines()
    assert not [ln for ln in new if ' ERROR ' in ln and 'iosched' in ln]
    with open(NOVA_CONF) as f:
        after = f.read()
    assert _section(after, 'filter_scheduler') == _section(
        site.nova_before, 'filter_scheduler')
    diff = [ln for ln in difflib.ndiff(_section(site.nova_before, 'iosched'),
                                       _section(after, 'iosched'))
            if ln[:2] in ('- ', '+ ')]
    print('nova.conf [iosched], plugin -> role: %s' % diff)
    assert ([ln[2:] for ln in diff if ln[0] == '-'],
            sorted(ln[2:] for ln in diff if ln[0] == '+')) == (
        NOVA_CONF_CHANGES)


def test_a_second_run_changes_nothing(site, rolled_out):
    pids = (site.pid(), procs.read_pid(LAYOUT.pidfile('nova-scheduler')))
    with open(NOVA_CONF) as f:
        before = f.read()
    again = site.play('--skip-tags', 'iosched_precheck')
    assert again.returncode == 0, again.stdout[-4000:]
    assert {h: r['changed'] for h, r in again.recap.items()} == {
        LAYOUT.hostname: 0, ansible_vars.SCHEDULER_HOST: 0}, (
        again.stdout[-4000:])
    assert (site.pid(), procs.read_pid(
        LAYOUT.pidfile('nova-scheduler'))) == pids
    with open(NOVA_CONF) as f:
        assert f.read() == before


def _admin(*args, **kw):
    return client.openstack(*args, admin=True, **kw)


def _boot(name, flavor):
    """A server on this host through the scheduler (``--host``: the
    filters run, restricted to the host; 2.74), as the admin.
    """
    return _admin('--os-compute-api-version', '2.74', 'server', 'create',
                  '--flavor', flavor, '--image', 'iosched-guest-idle',
                  '--nic', 'none', '--host', LAYOUT.hostname, name)


def _built(sid):
    return client.wait(lambda: (lambda s: s if s['status'] in (
        'ACTIVE', 'ERROR') else None)(_admin('server', 'show', sid)),
        'server %s built' % sid, 300, 3)


def _volume_status(vid, status):
    return client.wait(lambda: _admin('volume', 'show', vid)['status']
                       == status, 'volume %s %s' % (vid, status), 180, 3)


def _cleanup(made):
    vol, servers = made.get('volume'), made.get('servers', {})
    if vol and 'plain' in servers:
        _admin('server', 'remove', 'volume', servers['plain']['id'],
               vol['id'], parse=False, check=False)
        _volume_status(vol['id'], 'available')
    for s in servers.values():
        _admin('server', 'delete', '--wait', s['id'], parse=False,
               check=False)
    if vol:
        _admin('volume', 'delete', vol['id'], parse=False, check=False)
        client.wait(lambda: not isinstance(_admin(
            'volume', 'show', vol['id'], check=False), dict),
            'volume %s deleted' % vol['id'], 180, 3)
    _admin('volume', 'slo', 'type', 'delete', 'ans-slo', parse=False,
           check=False)


@pytest.fixture(scope='module')
def servers(site, rolled_out):
    _admin('flavor', 'create', '--vcpus', '1', '--ram', '256', '--disk',
           '1', 'e2e.plain', check=False)
    _admin('volume', 'slo', 'type', 'create', 'ans-slo', '200iops,20ms',
           check=False)
    made = {'servers': {}}
    try:
        for key, flavor in (('plain', 'e2e.plain'), ('lsvm', 'lsvm.small')):
            made['servers'][key] = _boot('ans-' + key, flavor)
        for key, s in made['servers'].items():
            made['servers'][key] = _built(s['id'])
        made['volume'] = _admin('volume', 'create', '--size', '1', '--type',
                                'ans-slo', 'ans-vol')
        _volume_status(made['volume']['id'], 'available')
        _admin('server', 'add', 'volume', made['servers']['plain']['id'],
               made['volume']['id'], parse=False)
        _volume_status(made['volume']['id'], 'in-use')
        yield made
    finally:
        _cleanup(made)


def test_servers_boot_through_the_rolled_out_scheduler(site, servers):
    for s in servers['servers'].values():
        assert s['status'] == 'ACTIVE', s
        assert s['OS-EXT-SRV-ATTR:host'] == LAYOUT.hostname, s
    # the rollout's agent (its iosched-explain reads its journal) acts on
    # the LSVM
    lsvm = servers['servers']['lsvm']['id']
    knobs = client.wait(lambda: json.loads(client.run(
        [site.bin('iosched-explain'), '--config-file', site.conf,
         '--instance', lsvm, '--json']).stdout)['knobs'],
        'the rollout agent acts on the LSVM', 120, 3)
    assert any(k['rule'].startswith('vslicer.lsvm') for k in knobs), knobs
    row = client.wait(lambda: (lambda r: r if r['slo']['volumes'] >= 1
                               else None)(_status()),
                      'the agent reads the volume\'s SLO', 180, 5)
    assert row['slo']['source'] == 'cinder', row
    assert row['slo']['reserved_iops'] == pytest.approx(200.0), row


def test_dashboard_agent_queries_select_live_series(site, servers):
    try:
        import promql_parser    # noqa: F401
        ok, why = True, ''
    except ImportError as e:
        ok, why = False, 'pip install promql-parser: %s' % e
    fixtures.require('promql-parser', ok, why)
    path = os.path.join(site.root, 'share', 'iosched', 'grafana',
                        'iosched-dashboard.json')
    with open(path) as f, open(DASHBOARD) as g:
        board = json.load(f)
        assert board == json.load(g)

    def acted():
        series = site.scrape()[0]
        return all(dashboard_series.select(series, dashboard_series.Selector(
            name, (), False)) for name in ('iosched_agent_knobs_held',
                                           'iosched_agent_slo_windows_total'))
    client.wait(acted, 'knobs and SLO windows in the metrics', 120, 3)
    first, _ = site.scrape()
    time.sleep(5)
    second, names = site.scrape()
    values = {'agent': '127.0.0.1:%d' % site.port, '__rate_interval': '1m'}
    queries = dashboard_series.agent_queries(board)
    assert len(queries) >= 12, queries
    seen = []
    for title, expr in queries:
        for sel in dashboard_series.selectors(
                dashboard_series.grafana(expr, values)):
            assert sel.name in names, (title, sel)
            got = [len(dashboard_series.select(s, sel))
                   for s in ((first, second) if sel.ranged else (second,))]
            seen.append((title, sel.name, got))
            if ('status', '=', 'failed') in sel.matchers:
                assert got == [0], (title, sel)
            elif sel.name not in MAY_BE_EMPTY:
                assert min(got) > 0, (title, sel, got)
    print('\n'.join('%s: %s %s' % s for s in seen))
