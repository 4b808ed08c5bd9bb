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
"""SIGKILL campaign against the real agent daemon on the simulated driver.

``io-host-agent`` runs the simulated host with ``simulated_state_file``,
so knob values outlive the process as on a real host. It is killed with
SIGKILL again and again: half of the kills a few milliseconds after it was
seen writing (its journal grew: mid-actuation), half at a random time
after its start (imports, restore, first ticks). After each kill, every
knob the host holds must be its original value or a target the journal
recorded since its last clear: never a third value. The next start
restores from the journal and acts again (and is killed again). A final
start ends with SIGTERM: every knob is back to its original value and the
journal holds nothing.

``IOSCHED_KILLS`` sets the number of kills (default 20 in CI;
``make bench-faults`` runs 100). The real-guest campaign is
``tests/testbed/test_kill_campaign_real.py``.
"""

import json
import os
import random
import signal
import subprocess
import sys
import time
import types

from iosched.host_agent.actuators import journal as journal_mod
from iosched.simdriver import daemon as sim_daemon
from iosched.simdriver import knobs as sim_knobs
from iosched.simdriver import state_file
from tests import fault_tally

AGENT = os.path.join(os.path.dirname(sys.executable), 'io-host-agent')
KILLS = int(os.environ.get('IOSCHED_KILLS', '20'))
HOST = 'kill-campaign'


def _canon(value):
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value, sort_keys=True)


def _defaults(keys):
    """Each knob's value on a fresh simulated host (its original)."""
    conf = types.SimpleNamespace(host_agent=types.SimpleNamespace(
        host=HOST, simulated_state_file='', simulated_profile=''))
    knobs = sim_knobs.SimulatedKnobs(sim_daemon.build(conf))
    return {k: _canon(knobs.read_knob(*k)) for k in keys}


def _journaled_targets(path):
    """{knob: {targets since the last clear/forget}} from the journal."""
    targets = {}
    if not os.path.exists(path):
        return targets
    with open(path, encoding='utf-8') as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue        # a torn last line (killed mid-append)
            if entry['op'] == 'clear':
                targets.clear()
                continue
            key = (entry['kind'], entry['uuid'], entry['target'])
            if entry['op'] == 'forget':
                targets.pop(key, None)
            elif entry['op'] == 'change':
                targets.setdefault(key, set()).add(_canon(entry['after']))
    return targets


def _third_values(state_path, journal_path):
    state = state_file.load(state_path)
    defaults = _defaults(state)
    targets = _journaled_targets(journal_path)
    wrong = []
    for key, value in state.items():
        allowed = {defaults[key]} | targets.get(key, set())
        if _canon(value) not in allowed:
            wrong.append((key, _canon(value), sorted(allowed)))
    return state, wrong


def _config(tmp_path):
    conf = tmp_path / 'host-agent.conf'
    conf.write_text(
        '[DEFAULT]\n[host_agent]\nhost = %s\ndriver = simulated\n'
        'tick_interval = 0.1\npolicies = vslicer,isacs,slo\n'
        'journal_path = %s\nsimulated_state_file = %s\n'
        '[reporter]\nenabled = false\n[metrics]\nenabled = false\n'
        '[lsvm_trait]\npublish = false\n' % (
            HOST, tmp_path / 'journal.jsonl', tmp_path / 'state.json'))
    return conf


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


def test_sigkill_campaign_never_leaves_a_third_value(tmp_path):
    conf = _config(tmp_path)
    journal = str(tmp_path / 'journal.jsonl')
    state_path = str(tmp_path / 'state.json')
    log = open(tmp_path / 'agent.log', 'a+')
    rnd = random.Random(int(os.environ.get('IOSCHED_KILL_SEED', '15')))
    mid_actuation = kinds = kills = left = 0
    seen_kinds = set()
    try:
        for i in range(KILLS):
            before = _size(journal)
            proc = subprocess.Popen([AGENT, '--config-file', str(conf)],
                                    stdout=log, stderr=subprocess.STDOUT)
            if i % 2 == 0:
                # mid-actuation: a few ms after the journal grew
                deadline = time.monotonic() + 30
                while (_size(journal) == before and proc.poll() is None
                       and time.monotonic() < deadline):
                    time.sleep(0.001)
                time.sleep(rnd.uniform(0.0, 0.02))
                mid_actuation += _size(journal) != before
            else:
                time.sleep(rnd.uniform(0.2, 3.0))
            assert proc.poll() is None, 'agent exited on its own:\n%s' % (
                _tail(log))
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            kills += 1
            state, wrong = _third_values(state_path, journal)
            left += len(wrong)
            assert not wrong, 'kill %d left third values: %s' % (i, wrong)
            seen_kinds |= {k[0] for k in state}
        # the last start restores, acts, and restores everything on SIGTERM
        proc = subprocess.Popen([AGENT, '--config-file', str(conf)],
                                stdout=log, stderr=subprocess.STDOUT)
        time.sleep(3.0)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, _tail(log)
        state, wrong = _third_values(state_path, journal)
        defaults = _defaults(state)
        left += sum(_canon(v) != defaults.get(k) for k, v in state.items())
        assert {k: _canon(v) for k, v in state.items()} == defaults
        assert journal_mod.read_held(journal)[0] == []
        kinds = len(seen_kinds)
    finally:
        log.close()
        fault_tally.note('SIGKILL campaign', cases=kills, knobs_left=left)
    print('%d SIGKILLs (%d mid-actuation), %d knob kinds held, 0 third '
          'values, SIGTERM restored all' % (KILLS, mid_actuation, kinds))
    assert mid_actuation >= KILLS // 4
    assert kinds >= 2, seen_kinds


def _tail(log):
    log.flush()
    log.seek(0)
    return log.read()[-4000:]
