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
"""Real signals on a real ``io-host-agent`` process (issue 25).

* Simulated driver (knobs in a journal, no libvirt): SIGHUP re-reads the
  configuration (a mutable option changes, an immutable one is refused
  by name) and the knobs stay held; SIGUSR2 writes a Guru Meditation
  Report file with an ``iosched agent`` section and the agent goes on;
  SIGTERM, SIGINT, SIGQUIT restore every knob, exit 0, 0, 131.
* Libvirt driver on a real testbed guest of this module's own (prefix
  ``iosched-svc-``, the system libvirtd): the LSVM's vCPU slice set by
  the agent survives SIGHUP and SIGUSR2, and SIGTERM, SIGINT or SIGQUIT
  put it back (read from the kernel).
* libvirtd down at start: a private libvirtd on a socket of its own (a
  session daemon run as ``nobody``: a second root libvirtd clashes with
  the system one on /run/libvirt's driver pid files, measured). The agent
  says once that it waits, nothing reaches stderr, it stays up; once the
  daemon starts it connects and ticks. SIGTERM during the wait ends it
  at once.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from iosched.host_agent.actuators import journal as journal_mod
from tests import fixtures

AGENT = os.path.join(os.path.dirname(sys.executable), 'io-host-agent')
STOPS = [('SIGTERM', 0), ('SIGINT', 0), ('SIGQUIT', 128 + signal.SIGQUIT)]


class Agent(object):
    """One ``io-host-agent`` process; its log in a file, stderr apart."""

    def __init__(self, tmp, conf_text):
        self.tmp = tmp
        self.log = tmp / 'agent.log'
        self.err = tmp / 'agent.err'
        self.gmr = tmp / 'gmr'
        self.gmr.mkdir(exist_ok=True)
        self.conf = tmp / 'agent.conf'
        self.write_conf(conf_text)
        with open(self.err, 'w') as err:
            self.proc = subprocess.Popen(
                [AGENT, '--config-file', str(self.conf)],
                stdout=subprocess.DEVNULL, stderr=err)

    def write_conf(self, text, default=''):
        self.conf.write_text(
            '[DEFAULT]\nlog_file = %s\n%s[oslo_reports]\nlog_dir = %s\n%s'
            % (self.log, default, self.gmr, text))

    def text(self):
        return self.log.read_text() if self.log.exists() else ''

    def wait_for(self, pattern, timeout=90, count=1):
        """The log's matches of ``pattern`` once there are ``count``."""
        deadline = time.monotonic() + timeout
        while True:
            found = re.findall(pattern, self.text())
            if len(found) >= count:
                return found
            assert self.proc.poll() is None, (
                'agent exited %s\n%s' % (self.proc.returncode,
                                         self.text()[-3000:]))
            assert time.monotonic() < deadline, (
                'no %r in the log\n%s' % (pattern, self.text()[-3000:]))
            time.sleep(0.1)

    def signal(self, name):
        self.proc.send_signal(getattr(signal, name))

    def stop(self, name, timeout=90):
        """Send ``name``; (exit status, seconds to exit)."""
        t0 = time.monotonic()
        self.signal(name)
        rc = self.proc.wait(timeout=timeout)
        return rc, time.monotonic() - t0

    def reports(self):
        return sorted(self.gmr.iterdir())

    def new_report(self, timeout=30):
        """SIGUSR2, then the text of the new report file."""
        before = set(self.reports())
        time.sleep(1.1)     # report files are named to the second
        self.signal('SIGUSR2')
        deadline = time.monotonic() + timeout
        while True:
            new = [p for p in self.reports() if p not in before]
            if new:
                time.sleep(0.5)              # written whole
                return new[0].read_text()
            assert time.monotonic() < deadline, self.text()[-3000:]
            time.sleep(0.1)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _held(journal):
    return journal_mod.read_held(str(journal))[0] if journal.exists() else []


def _keys(held):
    return {(h.kind, h.instance_uuid, h.target) for h in held}


def _gmr_value(report, key):
    m = re.search(r'^%s = (.*)$' % re.escape(key), report, re.M)
    assert m, report[-2000:]
    return m.group(1).strip()


# -- simulated driver ----------------------------------------------------

def _sim_conf(journal, tick):
    return ('[host_agent]\ndriver = simulated\ntick_interval = %s\n'
            'report_every_ticks = 5\njournal_path = %s\n'
            '[reporter]\nenabled = false\n[metrics]\nenabled = false\n'
            '[host_agent_policy.vslicer]\nnlsvm_slice_us = 3000\n'
            % (tick, journal))


@pytest.fixture
def sim_agent(tmp_path):
    journal = tmp_path / 'journal.jsonl'
    agent = Agent(tmp_path, _sim_conf(journal, 0.2))
    agent.journal = journal
    try:
        deadline = time.monotonic() + 90
        while not _held(journal):
            assert agent.proc.poll() is None, agent.text()[-3000:]
            assert time.monotonic() < deadline, agent.text()[-3000:]
            time.sleep(0.1)
        yield agent
    finally:
        agent.kill()


def test_sighup_reloads_mutable_options_and_keeps_the_knobs(sim_agent):
    held = _held(sim_agent.journal)
    text = _sim_conf(sim_agent.journal, 0.3).replace(
        'nlsvm_slice_us = 3000', 'nlsvm_slice_us = 4000').replace(
        'driver = simulated', 'driver = simulated\nactuator = noop')
    sim_agent.write_conf(text, default='debug = true\n')
    sim_agent.signal('SIGHUP')
    sim_agent.wait_for(r'SIGHUP: configuration reloaded')
    log = sim_agent.text()
    assert 'Option host_agent.tick_interval changed from [0.2] to [0.3]' \
        in log
    assert ('Option host_agent_policy.vslicer.nlsvm_slice_us changed from '
            '[3000] to [4000]') in log
    assert re.search(r'Option DEFAULT\.debug changed from \[\w*\] to '
                     r'\[true\]', log), log[-3000:]
    # read once at start: named, kept
    assert 'Ignoring change to immutable option host_agent.actuator' in log
    assert sim_agent.proc.poll() is None
    # the loop runs with the new values; the knobs are still held
    report = sim_agent.new_report()
    assert _gmr_value(report, 'tick_interval') == '0.3'
    assert sim_agent.proc.poll() is None
    assert _keys(_held(sim_agent.journal)) >= _keys(held)
    # debug took effect at once: the reload logged every option's new
    # value at DEBUG (off before: no DEBUG line until the SIGHUP)
    debug = re.findall(r'^\S+ \S+ \d+ DEBUG .*', log, re.M)
    assert debug and log.index(debug[0]) > log.index('changed from [0.2]')
    rc, took = sim_agent.stop('SIGTERM')
    assert rc == 0 and _held(sim_agent.journal) == []


def test_sigusr2_writes_a_guru_meditation_report(sim_agent):
    report = sim_agent.new_report()
    for section in ('Guru Meditation', 'Threads', 'Configuration',
                    'iosched agent'):
        assert section in report, report[:2000]
    assert int(_gmr_value(report, 'knobs held (journal)')) >= 1
    assert int(_gmr_value(report, 'ticks')) >= 1
    time.sleep(1.0)
    assert sim_agent.proc.poll() is None       # still running, and
    assert len(sim_agent.new_report()) > 0      # a second one works
    assert sim_agent.text().count('agent stopped') == 0


@pytest.mark.parametrize('name,status', STOPS)
def test_stop_signals_restore_every_knob_first(sim_agent, name, status):
    held = _held(sim_agent.journal)
    rc, took = sim_agent.stop(name)
    print('%s -> exit %d in %.2f s, %d knobs held' % (name, rc, took,
                                                      len(held)))
    log = sim_agent.text()
    assert rc == status, log[-3000:]
    assert '%s: restoring every knob held' % name in log
    m = re.search(r'agent stopped; restored (\d+) knobs', log)
    assert m and int(m.group(1)) >= len(held), log[-3000:]
    assert _held(sim_agent.journal) == []
    assert sim_agent.err.read_text() == ''


def test_sigterm_while_waiting_for_libvirtd_exits_at_once(tmp_path):
    fixtures.require('libvirt-python', _has_libvirt(), 'not installed')
    agent = Agent(tmp_path, _lv_conf(tmp_path / 'journal.jsonl',
                                     tmp_path / 'nowhere.sock'))
    try:
        agent.wait_for(r'waiting for the libvirt driver')
        rc, took = agent.stop('SIGTERM', timeout=30)
    finally:
        agent.kill()
    print('SIGTERM while waiting -> exit %d in %.2f s' % (rc, took))
    assert rc == 0, agent.text()[-3000:]
    assert 'stopped while waiting for the driver' in agent.text()
    assert agent.err.read_text() == ''


# -- libvirtd down at start -------------------------------------------

def _has_libvirt():
    try:
        import libvirt  # noqa: F401
    except ImportError:
        return False
    return True


def _lv_conf(journal, sock, extra=''):
    return ('[host_agent]\ndriver = libvirt\ntick_interval = 0.3\n'
            'policies = slo\njournal_path = %s\n'
            'driver_retry_interval = 0.2\ndriver_retry_max_interval = 1\n'
            '[libvirt]\nuri = qemu+unix:///session?socket=%s\n'
            '[reporter]\nenabled = false\n[metrics]\nenabled = false\n%s'
            % (journal, sock, extra))


class PrivateLibvirtd(object):
    """A session libvirtd run as ``nobody`` on its own socket."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix='iosched-svc-libvirtd-')
        os.chmod(self.dir, 0o755)
        self.run = os.path.join(self.dir, 'run')
        self.home = os.path.join(self.dir, 'home')
        for d in (self.run, self.home):
            os.makedirs(d)
            os.chown(d, 65534, 65534)
        self.conf = os.path.join(self.dir, 'libvirtd.conf')
        with open(self.conf, 'w') as fh:
            fh.write('unix_sock_dir = "%s"\n' % self.run)
        self.sock = os.path.join(self.run, 'libvirt-sock')
        self.proc = None

    def start(self):
        env = {'HOME': self.home, 'XDG_RUNTIME_DIR': self.run,
               'XDG_CONFIG_HOME': os.path.join(self.home, '.config'),
               'XDG_CACHE_HOME': os.path.join(self.home, '.cache'),
               'PATH': '/usr/sbin:/usr/bin:/sbin:/bin'}
        self.proc = subprocess.Popen(
            [shutil.which('setpriv'), '--reuid=65534', '--regid=65534',
             '--clear-groups', shutil.which('libvirtd'), '--config',
             self.conf], env=env, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.dir, 'libvirtd.log'), 'w'))

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def private_libvirtd():
    fixtures.require('libvirtd', shutil.which('libvirtd') is not None,
                     'no libvirtd binary (Debian: libvirt-daemon-system)')
    fixtures.require('setpriv', shutil.which('setpriv') is not None,
                     'no setpriv (Debian: util-linux)')
    fixtures.require('root', os.geteuid() == 0, 'runs libvirtd as nobody')
    fixtures.require('libvirt-python', _has_libvirt(), 'not installed')
    daemon = PrivateLibvirtd()
    try:
        yield daemon
    finally:
        daemon.stop()


def test_libvirtd_down_at_start_is_waited_for(tmp_path, private_libvirtd):
    agent = Agent(tmp_path, _lv_conf(tmp_path / 'journal.jsonl',
                                     private_libvirtd.sock))
    try:
        (line,) = agent.wait_for(r'WARNING \S+ \[-\] (waiting for the '
                                 r'libvirt driver: .*)')
        print(line)
        assert private_libvirtd.sock in line
        assert 'No such file or directory' in line     # the error, short
        # a few attempts (0.2 s doubling to 1 s) later: still one line,
        # still up, nothing on stderr
        time.sleep(4)
        assert agent.proc.poll() is None, agent.text()[-3000:]
        assert agent.text().count('waiting for the libvirt driver') == 1
        assert agent.err.read_text() == ''
        assert 'XML-RPC' not in agent.text()
        private_libvirtd.start()
        (line,) = agent.wait_for(r'(the libvirt driver answers: connected '
                                 r'after .*)', timeout=120)
        print(line)
        first = int(_gmr_value(agent.new_report(), 'ticks'))
        second = int(_gmr_value(agent.new_report(), 'ticks'))
        assert second > first >= 0, agent.text()[-3000:]
        rc, took = agent.stop('SIGTERM')
    finally:
        agent.kill()
    assert rc == 0, agent.text()[-3000:]
    assert agent.err.read_text() == ''
    assert 'XML-RPC' not in agent.text()


# -- libvirt driver, a real guest, real knobs ----------------------------

PREFIX = 'iosched-svc-'


@pytest.fixture(scope='module')
def lsvm_guest():
    from tests.testbed import needs
    tb, started = needs.start_testbed(PREFIX)
    from iosched.testbed import spec
    try:
        tb.build()
        tb.down()
        (guest,) = tb.up([spec.GuestSpec('lsvm', 'rr')])
        yield guest
    finally:
        tb.down()
        tb.close()


def _lsvm_tid(guest):
    from iosched.host_agent.drivers.libvirt import driver as lv_driver
    driver = lv_driver.LibvirtDriver.from_conf(fixtures.CONF)
    try:
        driver.list_instances()
        return driver.vcpu_tid(guest.uuid, 0)
    finally:
        driver.close()


@pytest.mark.parametrize('name,status', STOPS)
def test_real_guest_knobs_survive_hup_and_come_back_on_stop(
        tmp_path, lsvm_guest, name, status):
    from iosched.host_agent.linux import sched
    from iosched.host_agent.linux import sched_deadline
    tid = _lsvm_tid(lsvm_guest)
    before = sched.get_slice_us(tid)
    assert before != 1000 and sched_deadline.get_deadline_us(tid) is None
    journal = tmp_path / 'journal.jsonl'
    conf = ('[host_agent]\ndriver = libvirt\ntick_interval = 0.5\n'
            'journal_path = %s\n[reporter]\nenabled = false\n'
            '[metrics]\nenabled = false\n'
            '[host_agent_policy.vslicer]\nmechanism = slice\n' % journal)
    agent = Agent(tmp_path, conf)
    try:
        deadline = time.monotonic() + 90
        while sched.get_slice_us(tid) != 1000:       # the LSVM microslice
            assert agent.proc.poll() is None, agent.text()[-3000:]
            assert time.monotonic() < deadline, agent.text()[-3000:]
            time.sleep(0.2)
        agent.write_conf(conf.replace('tick_interval = 0.5',
                                      'tick_interval = 0.4'))
        agent.signal('SIGHUP')
        agent.wait_for(r'SIGHUP: configuration reloaded, 1 mutable')
        report = agent.new_report()
        assert _gmr_value(report, 'tick_interval') == '0.4'
        assert agent.proc.poll() is None
        assert sched.get_slice_us(tid) == 1000          # still held
        rc, took = agent.stop(name)
    finally:
        agent.kill()
    print('%s on a real guest -> exit %d in %.2f s' % (name, rc, took))
    log = agent.text()
    assert rc == status, log[-3000:]
    assert sched.get_slice_us(tid) == before, log[-3000:]
    assert sched_deadline.get_deadline_us(tid) is None
    assert _held(journal) == []
    assert 'cannot restore' not in log
    assert agent.err.read_text() == '', agent.err.read_text()[-2000:]
