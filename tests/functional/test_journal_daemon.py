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
"""The journal against the host, with the real daemon (issue 27).

``io-host-agent`` on the simulated driver with a state file (its knobs
outlive the process, as a real host's do; ``tests/functional/
test_kill_campaign.py``), faced with what an unlucky operator meets:

* a second agent started on the same journal refuses, naming the first's
  PID, and changes nothing;
* the journal lost after a SIGKILL: the next start finds every knob the
  dead agent had changed by reconciling with the host's definition, and
  puts it back;
* the journal on a filesystem that turned read-only: the next start
  restores what the journal records and exits 1 with one line;
* the filesystem full when SIGTERM comes: every knob is restored.

The read-only and full filesystems are real: a small tmpfs mounted for
the test (root).
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from iosched.simdriver import state_file
from tests import fault_tally
from tests import fixtures
from tests.functional import test_kill_campaign as kc

AGENT = os.path.join(os.path.dirname(sys.executable), 'io-host-agent')
TALLY = {'cases': 0, 'escaped': 0, 'knobs_left': 0}


def _config(tmp_path, journal_dir, name='host-agent.conf'):
    conf = tmp_path / name
    conf.write_text(
        '[DEFAULT]\nlog_file = %s\n[host_agent]\nhost = %s\n'
        'driver = simulated\ntick_interval = 0.1\n'
        'policies = vslicer,isacs,slo\njournal_path = %s\n'
        'simulated_state_file = %s\n'
        '[reporter]\nenabled = false\n[metrics]\nenabled = false\n'
        '[lsvm_trait]\npublish = false\n' % (
            tmp_path / (name + '.log'), kc.HOST,
            os.path.join(journal_dir, 'journal.jsonl'),
            tmp_path / 'state.json'))
    return conf


def _start(conf):
    return subprocess.Popen([AGENT, '--config-file', str(conf)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _changed(tmp_path):
    """Knobs of the simulated host away from their defaults."""
    state = state_file.load(str(tmp_path / 'state.json'))
    defaults = kc._defaults(state)
    return {k: v for k, v in state.items() if kc._canon(v) != defaults[k]}


def _wait_for(what, check, proc=None, timeout=30):
    deadline = time.monotonic() + timeout
    while not check():
        if proc is not None and proc.poll() is not None:
            pytest.fail('the agent exited (%s) before %s: %s' % (
                proc.returncode, what, proc.stderr.read()[-2000:]))
        assert time.monotonic() < deadline, 'timed out waiting: ' + what
        time.sleep(0.05)


def _log(conf):
    path = str(conf) + '.log'
    return open(path).read() if os.path.exists(path) else ''


def _running(conf, proc):
    """Whether ``proc`` logged that it runs (after its signal handlers)."""
    return any(' %d ' % proc.pid in line and 'io-host-agent on' in line
               for line in _log(conf).splitlines())


def _stop(proc, sig=signal.SIGTERM):
    if proc.poll() is None:
        proc.send_signal(sig)
    proc.wait(60)
    return proc.returncode


def _left(tmp_path):
    n = len(_changed(tmp_path))
    TALLY['knobs_left'] += n
    return n


def test_a_second_agent_on_the_same_journal_refuses(tmp_path):
    conf = _config(tmp_path, str(tmp_path))
    first = _start(conf)
    try:
        _wait_for('a knob changed', lambda: _changed(tmp_path), first)
        held = _changed(tmp_path)
        second = _start(_config(tmp_path, str(tmp_path), 'second.conf'))
        TALLY['cases'] += 1
        assert second.wait(60) == 2
        said = _log(tmp_path / 'second.conf')
        assert 'PID %d' % first.pid in said, said[-2000:]
        assert 'restored' not in said and 'Traceback' not in said
        assert first.poll() is None          # the first goes on
        assert set(_changed(tmp_path)) >= set(held)
    finally:
        assert _stop(first) == 0, _log(conf)[-3000:]
    assert _left(tmp_path) == 0


@pytest.mark.parametrize('damage', ['deleted', 'garbage'])
def test_a_lost_journal_is_made_good_by_reconciling(tmp_path, damage):
    """SIGKILL with knobs changed, then the journal is gone (deleted, or
    overwritten with garbage): the next start puts every one back,
    naming it, before it acts again.
    """
    conf = _config(tmp_path, str(tmp_path))
    journal = tmp_path / 'journal.jsonl'
    proc = _start(conf)
    _wait_for('two knobs changed', lambda: len(_changed(tmp_path)) >= 2,
              proc)
    _stop(proc, signal.SIGKILL)
    lost = _changed(tmp_path)
    if damage == 'deleted':
        journal.unlink()
    else:
        journal.write_bytes(b'\x00\xff garbage\n' * 3)
    proc = _start(conf)
    TALLY['cases'] += 1
    try:
        _wait_for('the reconciliation', lambda: 'knobs found changed with '
                  'no journal record' in _log(conf), proc)
    finally:
        assert _stop(proc) == 0, _log(conf)[-3000:]
    said = _log(conf)
    for kind, uuid, target in lost:
        assert 'put back %s %s/%s' % (kind, uuid, target) in said
    assert 'Traceback' not in said
    assert _left(tmp_path) == 0


def _tmpfs(tmp_path, size='256k'):
    fixtures.require('root (to mount a tmpfs)', os.geteuid() == 0,
                     'not root')
    mnt = tmp_path / 'mnt'
    mnt.mkdir()
    subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=%s' % size,
                    'iosched-journal-test', str(mnt)], check=True)
    return mnt


def _umount(mnt):
    subprocess.run(['umount', '-l', str(mnt)], check=False)


def test_a_read_only_journal_restores_and_stops(tmp_path):
    mnt = _tmpfs(tmp_path)
    try:
        conf = _config(tmp_path, str(mnt))
        proc = _start(conf)
        _wait_for('two knobs changed',
                  lambda: len(_changed(tmp_path)) >= 2, proc)
        _stop(proc, signal.SIGKILL)
        assert _changed(tmp_path)
        subprocess.run(['mount', '-o', 'remount,ro', str(mnt)], check=True)
        proc = _start(conf)
        TALLY['cases'] += 1
        assert proc.wait(60) == 1, _log(conf)[-3000:]
        said = _log(conf)
        assert 'cannot be written' in said and 'Traceback' not in said
        assert _left(tmp_path) == 0
    finally:
        _umount(mnt)


def test_a_full_disk_at_stop_restores_every_knob(tmp_path):
    mnt = _tmpfs(tmp_path)
    try:
        conf = _config(tmp_path, str(mnt))
        proc = _start(conf)
        _wait_for('two knobs changed',
                  lambda: len(_changed(tmp_path)) >= 2, proc)
        held = len(_changed(tmp_path))
        # fill the filesystem: no entry fits any more
        fd = os.open(mnt / 'filler', os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b'\0' * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        # and the journal's last page (blank lines are no entries)
        fd = os.open(mnt / 'journal.jsonl', os.O_WRONLY | os.O_APPEND)
        try:
            while os.write(fd, b'\n'):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        TALLY['cases'] += 1
        code = _stop(proc)
        said = _log(conf)
        assert code in (0, 1), said[-3000:]
        assert 'Traceback' not in said, said[-3000:]
        assert _left(tmp_path) == 0, (held, said[-3000:])
        # what the journal still holds is restored again, harmlessly
        os.unlink(mnt / 'filler')
        again = _start(conf)
        # running (its signal handlers installed) before it is stopped: a
        # SIGTERM during start-up kills it outright (-15, seen in CI)
        _wait_for('the restarted agent running',
                  lambda: _running(conf, again), again)
        assert _stop(again) == 0, _log(conf)[-3000:]
        assert _left(tmp_path) == 0
    finally:
        _umount(mnt)


def test_tally():
    fault_tally.note('the journal against the daemon', **TALLY)
    assert TALLY['escaped'] == TALLY['knobs_left'] == 0
    print(json.dumps(TALLY))
