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
"""``etc/systemd/io-host-agent.service``: its claims, and SIGTERM restoring.

* The hardening is what docs and ``iosched/host_agent/privsep.py`` reason: the
  bounding set is the privsep daemon's capabilities (CAP_SYS_NICE) and
  nothing else, the file system is read-only but the cgroup tree, tracefs
  and the journal's state directory, and the settings that would break the
  agent (read-only cgroups, no SCHED_DEADLINE, hidden QEMU threads) are
  absent. The syscall filter admits the calls the agent makes.
* ``systemd-analyze verify`` accepts the unit and ``systemd-analyze
  security --offline`` rates it (no systemd as PID 1 is needed for both).
* A running ``io-host-agent`` (simulated driver, journal in a temp dir,
  reports over the real RabbitMQ) sent SIGTERM, as systemd's stop does,
  restores every knob its journal holds and exits 0 within the unit's
  TimeoutStopSec.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent import privsep
from tests import fixtures

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
UNIT = os.path.join(ROOT, 'etc', 'systemd', 'io-host-agent.service')
AGENT = os.path.join(os.path.dirname(sys.executable), 'io-host-agent')


def parse_unit(path=UNIT):
    """{section: {key: [values in order]}} (systemd keys may repeat)."""
    sections, current = {}, None
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith(('#', ';')):
                continue
            m = re.fullmatch(r'\[(\w+)\]', line)
            if m:
                current = sections.setdefault(m.group(1), {})
                continue
            key, _, value = line.partition('=')
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


def _one(service, key):
    values = service.get(key)
    assert values and len(values) == 1, (key, values)
    return values[0]


def seconds(text):
    m = re.fullmatch(r'(\d+)(s|min)?', text)
    assert m, text
    return int(m.group(1)) * (60 if m.group(2) == 'min' else 1)


@pytest.fixture(scope='module')
def service():
    return parse_unit()['Service']


def test_capabilities_are_the_privsep_daemons_and_no_more(service):
    from oslo_privsep import capabilities as caps
    want = {caps.CAPS_BYVALUE[c] for c in privsep.CAPABILITIES}
    assert want == {'CAP_SYS_NICE'}
    assert set(_one(service, 'CapabilityBoundingSet').split()) == want
    assert 'AmbientCapabilities' not in service
    # root with FORK privsep: nothing gains privileges by exec
    assert _one(service, 'User') == 'root'
    assert _one(service, 'NoNewPrivileges') == 'yes'


def test_the_lsvm_parent_group_is_made_before_start(service):
    # The one step that needs CAP_DAC_OVERRIDE, run by systemd itself with
    # full privileges ("+") and allowed to fail on cgroup v2 ("-").
    from iosched.host_agent.conf import vslicer
    (opt,) = [o for o in vslicer.VSLICER_OPTS if o.name == "weight_group"]
    assert _one(service, 'ExecStartPre') == (
        '-+/bin/mkdir -p /sys/fs/cgroup/cpu/%s' % opt.default)


def test_file_system_is_read_only_but_what_the_agent_writes(service):
    assert _one(service, 'ProtectSystem') == 'strict'
    assert _one(service, 'ProtectHome') == 'yes'
    rw = service['ReadWritePaths']
    assert '/sys/fs/cgroup' in rw                 # privsep cgroup writes
    assert '-/sys/kernel/tracing' in rw           # the tracefs instance
    # the journal: [host_agent] journal_path's directory is the
    # StateDirectory systemd creates writable
    # the option's default, not the global CONF's current value: other
    # tests' overrides can reach it through oslo's shared OptGroup objects
    from iosched.host_agent.conf import agent as agent_opts
    (journal,) = [o.default for o in agent_opts.OPTS
                  if o.name == 'journal_path']
    assert os.path.dirname(journal) == '/var/lib/%s' % _one(
        service, 'StateDirectory')


def test_nothing_that_would_break_the_agent(service):
    for key, why in [('ProtectControlGroups', 'cgroup writes'),
                     ('ProtectKernelTunables', '/sys read-only'),
                     ('RestrictRealtime', 'SCHED_DEADLINE refused'),
                     ('MemoryDenyWriteExecute', 'ctypes/libffi')]:
        assert service.get(key, ['no']) == ['no'], why
    assert service.get('ProtectProc', ['default']) == ['default']
    # libvirt's socket and the broker
    families = _one(service, 'RestrictAddressFamilies').split()
    assert {'AF_UNIX', 'AF_INET', 'AF_INET6'} <= set(families)


def test_stop_and_restart_as_the_agent_needs(service):
    # back after any death; only `systemctl stop` keeps it down
    assert _one(service, 'Restart') == 'always'
    # reload = SIGHUP: mutable options re-read, knobs kept
    assert _one(service, 'ExecReload') == '/bin/kill -HUP $MAINPID'
    assert _one(service, 'KillSignal') == 'SIGTERM'
    # only the agent gets SIGTERM; its privsep daemon must outlive it
    assert _one(service, 'KillMode') == 'mixed'
    assert seconds(_one(service, 'TimeoutStopSec')) >= 30
    exec_start = _one(service, 'ExecStart').split()
    assert os.path.basename(exec_start[0]) == 'io-host-agent'
    assert exec_start[1:] == ['--config-file',
                              '/etc/iosched/host-agent.conf']


def _systemd_analyze():
    path = shutil.which('systemd-analyze')
    fixtures.require('systemd-analyze', path is not None,
                     'not installed (Debian: systemd)')
    return path


def test_syscall_filter_admits_the_agents_calls(service):
    assert _one(service, 'SystemCallFilter') == '@system-service'
    out = subprocess.run([_systemd_analyze(), 'syscall-filter',
                          '@system-service'], capture_output=True,
                         text=True, check=True).stdout
    # @system-service includes groups; expand them
    names = set(re.findall(r'^\s+([a-z_0-9]+)\s*$', out, re.M))
    for group in re.findall(r'^\s+(@[a-z-]+)\s*$', out, re.M):
        names |= set(re.findall(r'^\s+([a-z_0-9]+)\s*$', subprocess.run(
            [_systemd_analyze(), 'syscall-filter', group],
            capture_output=True, text=True, check=True).stdout, re.M))
    # sched_setattr/affinity (knobs, privsep daemon), capset + prctl
    # (privsep dropping capabilities, no_new_privs), mkdir (tracefs
    # instance, self-test cgroup), clone (privsep fork), connect (libvirt)
    for call in ('sched_setattr', 'sched_getattr', 'sched_setaffinity',
                 'capset', 'prctl', 'mkdir', 'clone', 'connect',
                 'clock_nanosleep'):
        assert call in names, call


def test_systemd_analyze_verify_and_security(tmp_path):
    tool = _systemd_analyze()
    unit = tmp_path / 'io-host-agent.service'
    # verify checks that ExecStart exists: point it at this venv's agent
    unit.write_text(open(UNIT).read().replace(
        '/opt/iosched/bin/io-host-agent', AGENT))
    verify = subprocess.run([tool, 'verify', str(unit)],
                            capture_output=True, text=True)
    assert verify.returncode == 0 and not verify.stderr.strip(), (
        verify.stdout + verify.stderr)
    security = subprocess.run([tool, 'security', '--offline=true',
                               str(unit)], capture_output=True, text=True)
    m = re.search(r'Overall exposure level for \S+: ([0-9.]+) (\w+)',
                  security.stdout + security.stderr)
    assert m, security.stdout + security.stderr
    print('systemd-analyze security: exposure %s %s' % m.groups())
    # 0 (best) .. 10; "OK" is below 4.5. Measured 2.7 on systemd 252.
    assert float(m.group(1)) < 4.5, security.stdout


def test_sigterm_restores_every_knob_within_the_stop_timeout(tmp_path,
                                                              service):
    url = fixtures.rabbit_url()
    tag = uuid.uuid4().hex[:8]
    journal = tmp_path / 'journal.jsonl'
    conf = tmp_path / 'host-agent.conf'
    conf.write_text(
        '[DEFAULT]\ntransport_url = %s\n[host_agent]\nhost = unit-%s\n'
        'driver = simulated\ntick_interval = 0.2\nreport_every_ticks = 5\n'
        'journal_path = %s\n[reporter]\ntopic = iosched-unit-reports-%s\n'
        'resync_topic = iosched-unit-agents-%s\n[metrics]\nenabled = false\n'
        % (url, tag, journal, tag, tag))
    log = tmp_path / 'agent.log'
    with open(log, 'w') as out:
        proc = subprocess.Popen([AGENT, '--config-file', str(conf)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        held = []
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and journal.read_text().strip():
                held, _ = journal_mod.read_held(str(journal))
                if held:
                    # a few more ticks (and a report) before the stop
                    time.sleep(1.0)
                    held, _ = journal_mod.read_held(str(journal))
                    break
            time.sleep(0.2)
        assert held, log.read_text()[-3000:]
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        rc = proc.wait(timeout=seconds(_one(service, 'TimeoutStopSec')))
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    print('SIGTERM -> exit in %.1f s, %d knobs held' % (took, len(held)))
    assert rc == 0, text[-3000:]
    assert journal_mod.read_held(str(journal))[0] == [], text[-3000:]
    m = re.search(r'agent stopped; restored (\d+) knobs', text)
    assert m and int(m.group(1)) >= len(held), text[-3000:]
