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
"""``iosched-status`` against the real RabbitMQ and a real agent daemon.

One ``io-host-agent`` (simulated driver, its resync server on) runs for the
module on fresh topics. The command joins the reports fanout, asks for a
resync, asks the agent for its whole report (its fanout carries only the
head, RPC 1.3) and prints the table or JSON; ``--host`` returns as soon as that
host's report is in (0) or says who is missing after ``--wait`` (1); a
broker that does not answer is bad input (2).
"""

import io
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from iosched.contract import payload
from iosched.nova_plugin.cmd import status
from tests import fixtures

AGENT = os.path.join(os.path.dirname(sys.executable), 'io-host-agent')


@pytest.fixture(scope='module')
def agent(tmp_path_factory):
    url = fixtures.rabbit_url()
    tag = uuid.uuid4().hex[:8]
    base = tmp_path_factory.mktemp('iosched-ans-status')
    conf = base / 'host-agent.conf'
    info = dict(url=url, host='status-%s' % tag, conf=str(conf),
                topic='iosched-status-reports-%s' % tag,
                agents='iosched-status-agents-%s' % tag)
    conf.write_text(
        '[DEFAULT]\ntransport_url = %(url)s\n[host_agent]\nhost = %(host)s\n'
        'driver = simulated\ntick_interval = 0.5\nreport_every_ticks = 30\n'
        'journal_path =\n[reporter]\ntopic = %(topic)s\n'
        'resync_topic = %(agents)s\n[metrics]\nenabled = false\n' % info)
    info['log'] = base / 'agent.log'
    log = open(info['log'], 'w')
    proc = subprocess.Popen([AGENT, '--config-file', str(conf)], stdout=log,
                            stderr=subprocess.STDOUT)
    info['proc'] = proc
    try:
        # The first periodic report comes after 15 s: wait for it only
        # once here; afterwards every command gets it by resync at once.
        rc, out, err = run('--config-file', info['conf'], '--host',
                           info['host'], '--wait', '120')
        assert rc == 0, (err, open(base / 'agent.log').read()[-3000:])
        yield info
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    rc = status.main(list(argv), out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _bus(agent):
    return ['--transport-url', agent['url'], '--topic', agent['topic'],
            '--agents-topic', agent['agents']]


def test_host_reported_returns_at_once(agent):
    resent = agent['log'].read_text().count('(resync)')
    t0 = time.monotonic()
    rc, out, err = run(*_bus(agent), '--host', agent['host'], '--wait', '60')
    print('iosched-status --host: %.1f s' % (time.monotonic() - t0))
    assert rc == 0, err
    header, line = out.splitlines()[:2]
    assert header.split()[:4] == ['HOST', 'AGE', 'SEQ', 'EVERY']
    assert line.split()[0] == agent['host'] and 'vslicer' in line
    # the agent answered the command's resync (re-sent its latest report)
    assert agent['log'].read_text().count('(resync)') > resent
    # ... and its send_report: the whole report, to this command alone
    assert 'sent whole report' in agent['log'].read_text()


def test_json_table_of_every_host(agent):
    rc, out, err = run(*_bus(agent), '--wait', '3', '--json')
    assert rc == 0, err
    doc = json.loads(out)
    assert doc['topic'] == agent['topic'] and doc['missing'] == []
    row, = doc['hosts']
    assert row['host'] == agent['host']
    assert row['status'] == 'ok' and row['errors'] == []
    assert row['report_interval'] == 15.0 and row['pcpus'] == 2
    # the vCPU records and decisions came whole (send_report), though
    # the fanout carries only the head
    assert row['whole'] and row['vcpus'] == 5 and row['lsvm']['count'] == 1
    # vSlicer's rules, and the agent's own slo.retune of the SLO volume
    assert 'vslicer' in row['policies'] and row['knobs'] > 0
    assert row['version'] == payload.VERSION


def test_config_file_gives_url_and_topics(agent):
    rc, out, err = run('--config-file', agent['conf'], '--host',
                       agent['host'], '--wait', '60')
    assert rc == 0, err
    assert out.splitlines()[1].startswith(agent['host'])


def test_missing_host_exits_1_naming_who_answered(agent):
    rc, out, err = run(*_bus(agent), '--host', 'nowhere-1', '--wait', '2')
    assert rc == status.EXIT_MISSING
    assert 'no report from nowhere-1 within 2 s' in err
    assert 'heard from: %s' % agent['host'] in err
    assert agent['host'] in out          # the table of who did report


def test_too_old_report_does_not_count(agent):
    # a 0 s bound cannot be met by a report measured before the command
    # started (the resync re-sends the latest one, measured earlier); a
    # periodic report (every 15 s) measured inside the 2 s window does
    # meet it: a second window cannot hold another one
    for _ in range(2):
        rc, out, err = run(*_bus(agent), '--host', agent['host'],
                           '--max-age', '0', '--wait', '2')
        if rc == status.EXIT_MISSING:
            break
    assert rc == status.EXIT_MISSING, (out, err)


def test_nobody_on_a_fresh_topic_exits_1():
    url = fixtures.rabbit_url()
    tag = uuid.uuid4().hex[:8]
    rc, out, err = run('--transport-url', url, '--topic', 'nobody-%s' % tag,
                       '--agents-topic', 'nobody-agents-%s' % tag,
                       '--wait', '1')
    assert rc == status.EXIT_MISSING and out == ''
    assert 'no host reported within 1 s on topic nobody-%s' % tag in err


def test_no_broker_is_bad_input():
    rc, out, err = run('--transport-url',
                       'rabbit://guest:secret@127.0.0.1:1/', '--wait', '1')
    assert rc == status.EXIT_BAD_INPUT
    assert 'no message broker answers at rabbit://guest:***@127.0.0.1:1/' \
        in err and 'secret' not in err


def test_bad_arguments_are_bad_input(tmp_path):
    assert run('--wait', '0')[0] == status.EXIT_BAD_INPUT
    rc, _, err = run('--config-file', str(tmp_path / 'none.conf'))
    assert rc == status.EXIT_BAD_INPUT and 'no configuration file' in err
    empty = tmp_path / 'empty.conf'
    empty.write_text('[DEFAULT]\n')
    rc, _, err = run('--config-file', str(empty), '--wait', '1')
    assert rc == status.EXIT_BAD_INPUT and 'no transport URL' in err


def test_collector_keeps_the_newest_report_per_host():
    base = fixtures.sim_host_with_vms
    sim, driver = base(name='c-1')
    agent = fixtures.make_agent(driver)
    fixtures.run_ticks(sim, agent, 2)
    first = agent.last_report
    fixtures.run_ticks(sim, agent, 1)
    newer = agent.last_report
    c = status.Collector(watch=['c-1', 'c-2'])
    c.update(newer)
    c.update(first)                     # out of order: ignored
    assert c.reports['c-1'][0] is newer and c.received == 2
    assert c.missing() == ['c-2'] and not c.done.is_set()
    row = status.row(newer, c.reports['c-1'][1], newer.ts + 5)
    assert row['age_s'] == 5.0 and 'vslicer' in row['policies']
    lines = status.table([row])
    assert lines[1].split()[:2] == ['c-1', '5.0s']


def test_leaves_no_topic_override_behind(agent):
    """[iosched]'s OptGroup is shared by every ConfigOpts registering it:
    the command's topics must not stay as overrides (a later listener in
    the same process, e.g. nova-scheduler's or a test's, would use them).
    """
    from oslo_config import cfg

    from iosched.nova_plugin import conf as iosched_conf
    run(*_bus(agent), '--wait', '1')
    fresh = cfg.ConfigOpts()
    iosched_conf.register_opts(fresh)
    fresh([], default_config_files=[])
    assert fresh.iosched.report_topic == 'iosched-reports'
    assert fresh.iosched.agents_topic == 'iosched-agents'


def test_save_writes_reports_the_report_readers_take(agent, tmp_path):
    """--save DIR: the documented way to the saved HostReport that
    iosched-explain --report and iosched-placement --report read.
    """
    saved = tmp_path / 'reports'
    rc, out, err = run(*_bus(agent), '--host', agent['host'], '--wait', '60',
                       '--save', str(saved))
    assert rc == 0, err
    path = saved / ('%s.json' % agent['host'])
    assert 'saved %s' % path in err
    report = payload.load(str(path))
    assert report.host == agent['host'] and report.vcpus
    assert not list(saved.glob('*.tmp'))
    bindir = os.path.dirname(sys.executable)
    explain = subprocess.run(
        [os.path.join(bindir, 'iosched-explain'), '--report', str(path)],
        capture_output=True, text=True, timeout=120)
    assert explain.returncode == 0, explain.stderr
    assert agent['host'] in explain.stdout
    placement = subprocess.run(
        [os.path.join(bindir, 'iosched-placement'), '--report', str(path),
         '--vcpus', '2', '--json'],
        capture_output=True, text=True, timeout=120)
    assert placement.returncode == 0, placement.stderr
    hosts = json.loads(placement.stdout)
    assert agent['host'] in json.dumps(hosts)


def test_save_to_an_unwritable_place_is_bad_input(agent, tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    rc, _, err = run(*_bus(agent), '--host', agent['host'], '--wait', '60',
                     '--save', str(blocker / 'sub'))
    assert rc == status.EXIT_BAD_INPUT
    assert '--save' in err and 'cannot create' in err
