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
"""The libvirt driver's inventory bookkeeping: its clock (the HostReport
contract's epoch seconds), when it reads a domain's XML again, and the
QEMU threads it finds for each domain (a fake /proc).
"""

import time

import pytest

from iosched.host_agent import conf as agent_conf
from iosched.host_agent.drivers.libvirt import driver as lv
from tests import fixtures

CONF = agent_conf.CONF


def test_now_is_epoch_seconds_for_the_report_contract():
    # HostReport.ts is seconds since the epoch (contract.payload); the
    # monotonic clock gave the host's uptime instead (found on the cloud)
    now = lv.LibvirtDriver.now(object.__new__(lv.LibvirtDriver))
    assert abs(now - time.time()) < 5.0


def _blocks_driver(names_by_tick):
    d = object.__new__(lv.LibvirtDriver)
    d._info = {'u1': (None, 1, {}, None, 7)}
    d._xml = {7: ('u1', 'parsed', None)}
    d._blocks = {}
    dropped = []
    for names in names_by_tick:
        d._stats = {'u1': dict({'block.count': len(names)}, **{
            'block.%d.name' % i: n for i, n in enumerate(names)})}
        d._xml.setdefault(7, ('u1', 'parsed', None))
        d._drop_xml_of_changed_disks()
        dropped.append(7 not in d._xml)
    return dropped


@pytest.mark.parametrize('ticks, dropped', [
    ([['vda'], ['vda']], [False, False]),               # nothing changed
    ([['vda'], ['vda', 'vdb']], [False, True]),         # a volume attached
    ([['vda', 'vdb'], ['vda']], [False, True]),         # detached
    ([['vda'], ['vda', 'vdb'], ['vda', 'vdb']], [False, True, False]),
])
def test_hot_attached_disk_rereads_the_domain_xml(ticks, dropped):
    assert _blocks_driver(ticks) == dropped


class Dom(object):
    """A running domain as listAllDomains gives it (what list_instances
    asks of one).
    """

    def __init__(self, dom_id, uuid, name):
        self.dom_id, self.uuid, self._name = dom_id, uuid, name

    def ID(self):
        return self.dom_id

    def UUIDString(self):
        return self.uuid

    def name(self):
        return self._name

    def XMLDesc(self, flags):
        return ("<domain><name>%s</name><uuid>%s</uuid><vcpu>2</vcpu>"
                "</domain>" % (self._name, self.uuid))


class Conn(object):
    def __init__(self, doms):
        self.doms = doms

    def listAllDomains(self, flags):
        return list(self.doms)

    def domainListGetStats(self, doms, flags):
        return []


def _qemu(proc, pid, comms):
    """A QEMU process in a fake /proc: the main loop, then ``comms``."""
    for i, comm in enumerate(['qemu-system-x86'] + comms):
        d = proc / str(pid) / 'task' / str(pid + i)
        d.mkdir(parents=True)
        (d / 'comm').write_text(comm + '\n')


# name, thread names besides the main loop, want vCPU tids (of pid 100),
# want InstanceInfo.io_threads
DOMAINS = [
    ('the testbed: the QMP monitor is not on the I/O path',
     ['CPU 0/KVM', 'CPU 1/KVM', 'IO mon_iothread'], {0: 101, 1: 102}, 1),
    ("Nova 34: <iothreads>1", ['CPU 0/TCG', 'CPU 1/TCG', 'IO mon_iothread',
                               'IO iothread1'], {0: 101, 1: 102}, 2),
    ('Nova 34 with a vhost worker', ['CPU 0/KVM', 'IO iothread1',
                                     'CPU 1/KVM', 'vhost-100'],
     {0: 101, 1: 103}, 3),
]


@pytest.fixture
def conf(tmp_path):
    """The agent's CONF reading a fake /proc and libvirt run dir."""
    fixtures.require('libvirt-python', lv.libvirt is not None,
                     'pip install libvirt-python')
    overrides = [('proc_root', str(tmp_path / 'proc'), 'host_paths'),
                 ('libvirt_run_dir', str(tmp_path / 'run'), 'host_paths'),
                 ('trace_wakeups', False, 'libvirt'),
                 ('latency_histograms', False, 'libvirt')]
    for opt, value, group in overrides:
        CONF.set_override(opt, value, group)
    yield CONF
    for opt, _, group in overrides:
        CONF.clear_override(opt, group)


@pytest.mark.parametrize('name,comms,vcpus,n_io', DOMAINS,
                         ids=[r[0] for r in DOMAINS])
def test_list_instances_counts_the_io_path_threads(tmp_path, conf, name,
                                                    comms, vcpus, n_io):
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / 'instance-1.pid').write_text('100\n')
    _qemu(tmp_path / 'proc', 100, comms)
    drv = lv.LibvirtDriver(conf, Conn([Dom(3, 'u1', 'instance-1')]))
    [info] = drv.list_instances()
    assert (info.uuid, info.vcpus, info.io_threads) == ('u1', 2, n_io)
    assert [drv.vcpu_tid('u1', v) for v in (0, 1)] == [vcpus[0], vcpus[1]]


# thread names besides the main loop, listed?
PARTIAL = [
    ('starting: no vCPU thread named yet', ['qemu-system-x86'], False),
    ('starting: vCPU 1 not named yet', ['CPU 0/TCG', 'qemu-system-x86'],
     False),
    ('stopping: vCPU threads gone', ['IO iothread1'], False),
    ('running', ['CPU 0/TCG', 'CPU 1/TCG'], True),
]


@pytest.mark.parametrize('name,comms,listed', PARTIAL,
                         ids=[r[0] for r in PARTIAL])
def test_a_domain_without_all_its_vcpu_threads_waits(tmp_path, conf, name,
                                                     comms, listed):
    # found on the cloud: a booting LSVM's first tick planned vcpu_slice
    # for a vCPU whose thread was not named yet ("cannot set vcpu_slice
    # ... no thread for vCPU 0")
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / 'instance-1.pid').write_text('100\n')
    _qemu(tmp_path / 'proc', 100, comms)
    drv = lv.LibvirtDriver(conf, Conn([Dom(3, 'u1', 'instance-1')]))
    assert [i.uuid for i in drv.list_instances()] == (['u1'] if listed
                                                      else [])


def test_a_starting_domain_is_listed_once_its_vcpus_run(tmp_path, conf):
    (tmp_path / 'run').mkdir()
    (tmp_path / 'run' / 'instance-1.pid').write_text('100\n')
    _qemu(tmp_path / 'proc', 100, ['CPU 0/TCG', 'qemu-system-x86'])
    drv = lv.LibvirtDriver(conf, Conn([Dom(3, 'u1', 'instance-1')]))
    assert drv.list_instances() == []
    (tmp_path / 'proc' / '100' / 'task' / '102' / 'comm').write_text(
        'CPU 1/TCG\n')
    [info] = drv.list_instances()
    assert info.uuid == 'u1' and drv.vcpu_tid('u1', 1) == 102
    assert drv._partial == {}
