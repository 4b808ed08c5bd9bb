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
"""A lost journal on real guests (issue 27): ``io-host-agent`` on the
libvirt driver regulates the testbed's guests (each LSVM mechanism:
SCHED_DEADLINE, VM cgroup weight, EEVDF slice; isacs pins), is killed
with SIGKILL, and its journal is deleted *and* the held-knobs record in
each domain's metadata removed (both records lost). The next start finds
every knob the dead agent changed by reconciling each guest's live
settings with its persistent definition and the host's defaults, puts
them back, naming each; after SIGTERM every thread, cgroup and pin is
what it was before the first agent started.

The guests are ``test_libvirt_agent``'s fixture (three TCG guests).
"""

import os
import re
import signal
import subprocess
import time

import pytest

from iosched.host_agent.actuators import held_marker
from iosched.host_agent.linux import sched
from iosched.host_agent.linux import sched_deadline
from tests import fault_tally
from tests.functional import test_libvirt_agent as tla

guests = tla.guests
driver = tla.driver
TALLY = {'cases': 0, 'escaped': 0, 'knobs_left': 0}


def _state(driver):
    """Every setting the agent may change, per guest, as read live."""
    import libvirt
    out = {}
    for inst in driver.list_instances():
        dom = driver.domain(inst.uuid)
        for vcpu in range(inst.vcpus):
            tid = driver.vcpu_tid(inst.uuid, vcpu)
            reserved = sched_deadline.get_deadline_us(tid)
            out[(inst.name, 'deadline', vcpu)] = reserved
            out[(inst.name, 'cgroup', vcpu)] = tla.thread_cgroup(tid)
            out[(inst.name, 'slice', vcpu)] = (
                None if reserved else sched.get_slice_us(tid))
        out[(inst.name, 'vm_weight')] = tla._vm_weight(driver, inst.uuid)
        out[(inst.name, 'pins')] = tuple(
            tuple(m) for m in dom.vcpuPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE))
        out[(inst.name, 'emulator_pin')] = tuple(
            dom.emulatorPinInfo(libvirt.VIR_DOMAIN_AFFECT_LIVE))
        out[(inst.name, 'cgroup', 'emulator')] = tla.thread_cgroup(
            driver.io_threads(inst.uuid)['emulator'])
    return out


def _drop_markers(driver):
    import libvirt
    for inst in driver.list_instances():
        try:
            driver.domain(inst.uuid).setMetadata(
                libvirt.VIR_DOMAIN_METADATA_ELEMENT, None, None,
                held_marker.HELD_NS, libvirt.VIR_DOMAIN_AFFECT_LIVE)
        except libvirt.libvirtError:
            pass


@pytest.mark.parametrize('mechanism', ['deadline', 'weight', 'slice'])
def test_a_lost_journal_and_marker_are_made_good(guests, driver, tmp_path,
                                                 mechanism):
    before = _state(driver)
    uuid = tla._by_name(driver)['lsvm'].uuid
    tid = driver.vcpu_tid(uuid, 0)
    journal = tmp_path / 'journal.jsonl'
    conf = tmp_path / 'agent.conf'
    log = tmp_path / 'agent.log'
    conf.write_text(
        '[DEFAULT]\nlog_file = %s\n' % log +
        '[host_agent]\ndriver = libvirt\ntick_interval = 0.5\n'
        'policies = vslicer,isacs\n'
        'journal_path = %s\n[reporter]\nenabled = false\n' % journal +
        '[metrics]\nenabled = false\n'
        '[host_agent_policy.vslicer]\nmechanism = %s\n' % mechanism)
    cmd = [tla.AGENT, '--config-file', str(conf)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not tla._lsvm_changed(mechanism, tid, driver, uuid):
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, 'agent changed nothing'
            time.sleep(0.2)
        time.sleep(1.0)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    changed = {k for k, v in _state(driver).items() if before[k] != v}
    assert changed, 'the SIGKILL left nothing changed'
    journal.unlink()
    _drop_markers(driver)
    os.unlink(str(log))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    TALLY['cases'] += 1
    try:
        deadline = time.monotonic() + 60
        while 'found changed with no journal record' not in (
                log.read_text() if log.exists() else ''):
            assert proc.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.2)
        time.sleep(1.5)                          # it regulates again
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    text = log.read_text()
    assert proc.returncode == 0, text[-2000:]
    assert 'Traceback' not in text, text[-3000:]
    after = _state(driver)
    left = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    TALLY['knobs_left'] += len(left)
    n = int(re.search(r'put back (\d+) knobs found changed', text).group(1))
    print('%s: SIGKILL left %d settings changed; journal and marker lost; '
          'the restart put back %d knobs; %d left changed after SIGTERM'
          % (mechanism, len(changed), n, len(left)))
    assert not left, left


def test_tally():
    fault_tally.note('lost journal on real guests', **TALLY)
    assert TALLY['knobs_left'] == 0
