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
"""Pure parsers of the libvirt driver: domain XML with Nova's metadata,
procfs thread files (on a fake tree), and tracepoint lines.
"""

import os

import pytest

from iosched.host_agent.drivers.libvirt import domain_xml
from iosched.host_agent.drivers.libvirt import threads
from iosched.host_agent.drivers.libvirt import tracing

NOVA_XML = """<domain type='kvm' id='3'>
  <name>instance-0000002a</name>
  <uuid>8d2c7e1a-5b7e-4a44-9a41-0d3b1c6b7f10</uuid>
  <metadata>
    <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
      <nova:package version="34.0.0"/>
      <nova:name>web-1</nova:name>
      <nova:flavor name="lsvm.small" id="42">
        <nova:memory>2048</nova:memory>
        <nova:vcpus>2</nova:vcpus>
        <nova:extraSpecs>
          <nova:extraSpec
            name="iosched:latency_sensitive">true</nova:extraSpec>
          <nova:extraSpec name="iosched:latency_ms">2</nova:extraSpec>
        </nova:extraSpecs>
      </nova:flavor>
    </nova:instance>
  </metadata>
  <vcpu placement='static'>2</vcpu>
  <cputune>
    <vcpupin vcpu='0' cpuset='1'/><vcpupin vcpu='1' cpuset='2-3'/>
  </cputune>
  <devices>
    <disk type='file' device='disk'>
      <source file='/var/lib/nova/instances/x/disk'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <disk type='block' device='disk'>
      <source dev='/dev/sdb'/><target dev='vdb' bus='virtio'/>
      <serial>5f0e6b0c-2a7b-4c1e-8a2d-6c8f1d2e3a4b</serial>
    </disk>
    <disk type='file' device='cdrom'><target dev='hda' bus='ide'/></disk>
    <interface type='ethernet'><mac address='fa:16:3e:00:00:01'/>
      <target dev='tap0a1b2c3d'/></interface>
  </devices>
</domain>"""


def test_nova_domain():
    d = domain_xml.parse(NOVA_XML)
    assert d.uuid == '8d2c7e1a-5b7e-4a44-9a41-0d3b1c6b7f10'
    assert (d.name, d.nova_name, d.flavor, d.vcpus) == (
        'instance-0000002a', 'web-1', 'lsvm.small', 2)
    assert d.extra_specs == {'iosched:latency_sensitive': 'true',
                             'iosched:latency_ms': '2'}
    assert [(k.target, k.serial) for k in d.disks] == [
        ('vda', ''), ('vdb', '5f0e6b0c-2a7b-4c1e-8a2d-6c8f1d2e3a4b')]
    assert d.nics == (domain_xml.Nic('tap0a1b2c3d', 'fa:16:3e:00:00:01'),)
    assert d.vcpupin == {0: '1', 1: '2-3'}


def test_domain_without_nova_metadata():
    d = domain_xml.parse("<domain><name>x</name><uuid>u</uuid></domain>")
    assert (d.flavor, d.extra_specs, d.vcpus, d.disks) == ('', {}, 1, ())


@pytest.mark.parametrize('xml,says', [
    ('<domain><name>x', 'not well-formed'),
    ('<network/>', 'expected <domain>'),
    ('<domain><name>x</name></domain>', 'lacks <uuid>'),
    ('<domain><name>x</name><uuid>u</uuid><vcpu>two</vcpu></domain>',
     'not an integer'),
])
def test_bad_xml(xml, says):
    with pytest.raises(domain_xml.DomainXMLError, match=says):
        domain_xml.parse(xml)


@pytest.mark.parametrize('text,want', [
    ('0', (0,)), ('0-3', (0, 1, 2, 3)), ('1,3-4', (1, 3, 4)),
    ('2-3,0\n', (0, 2, 3)),
])
def test_cpuset(text, want):
    assert domain_xml.parse_cpuset(text) == want


@pytest.mark.parametrize('text', ['3-1', 'a', '-1', '1-x'])
def test_bad_cpuset(text):
    with pytest.raises(ValueError):
        domain_xml.parse_cpuset(text)


def _task(root, pid, tid, comm, run=0, wait=0, vol=0, cpu=0):
    d = os.path.join(root, str(pid), 'task', str(tid))
    os.makedirs(d)
    open(os.path.join(d, 'comm'), 'w').write(comm + '\n')
    open(os.path.join(d, 'schedstat'), 'w').write('%d %d 7\n' % (run, wait))
    open(os.path.join(d, 'status'), 'w').write(
        'Name:\t%s\nvoluntary_ctxt_switches:\t%d\n'
        'nonvoluntary_ctxt_switches:\t3\n' % (comm, vol))
    fields = ['S'] + ['0'] * 35 + [str(cpu)] + ['0'] * 13
    open(os.path.join(d, 'stat'), 'w').write(
        '%d (%s) %s\n' % (tid, comm, ' '.join(fields)))


def test_vcpu_threads_and_counters_on_a_fake_proc(tmp_path):
    proc = str(tmp_path / 'proc')
    _task(proc, 100, 100, 'qemu-system-x86')
    _task(proc, 100, 101, 'CPU 0/TCG', run=5000, wait=700, vol=42, cpu=1)
    _task(proc, 100, 102, 'CPU 1/KVM')
    _task(proc, 100, 103, 'IO mon_iothread')
    _task(proc, 100, 104, 'CPU 2/bogus')
    assert threads.vcpu_tids(proc, 100) == {0: 101, 1: 102}
    _task(proc, 100, 105, 'vhost-100')
    assert threads.io_threads(proc, 100) == {
        'emulator': 100, 'io': {'vhost-100': 105}}
    assert threads.thread_counters(proc, 100, 101) == (5000, 700, 42, 1)
    with pytest.raises(threads.ThreadError):
        threads.thread_counters(proc, 100, 999)


# name, thread names of QEMU pid 100 (tids 101...), want vCPUs, want I/O
# threads, want I/O-path threads (the emulator and the I/O threads)
QEMU_THREADS = [
    ('the testbed: main loop, vCPUs, the QMP monitor',
     ['qemu-system-x86', 'CPU 0/KVM', 'IO mon_iothread', 'call_rcu'],
     {0: 102}, {}, 1),
    ("Nova 34: <iothreads>1 adds 'IO iothread1'",
     ['qemu-system-x86', 'CPU 0/TCG', 'CPU 1/TCG', 'IO mon_iothread',
      'IO iothread1', 'worker'],
     {0: 102, 1: 103}, {'IO iothread1': 105}, 2),
    ('iothread and vhost workers',
     ['qemu-system-x86', 'CPU 0/KVM', 'IO iothread1', 'vhost-100',
      'vhost-101'],
     {0: 102}, {'IO iothread1': 103, 'vhost-100': 104, 'vhost-101': 105}, 4),
    ('names that only look like ours',
     ['qemu-system-x86', 'CPU x/KVM', 'IO', 'IO mon_iothread2',
      'vhost-', 'CPU 3/KVM'],
     {3: 106}, {'IO mon_iothread2': 104}, 2),
]


@pytest.mark.parametrize('name,comms,vcpus,io,n_io', QEMU_THREADS,
                         ids=[r[0] for r in QEMU_THREADS])
def test_qemu_threads_in_one_pass(tmp_path, name, comms, vcpus, io, n_io):
    proc = str(tmp_path / 'proc')
    _task(proc, 100, 100, comms[0])
    for i, comm in enumerate(comms[1:]):
        _task(proc, 100, 102 + i, comm)
    found = threads.qemu_threads(proc, 100)
    assert (found.vcpus, found.emulator, found.io) == (vcpus, 100, io)
    assert threads.io_path_threads(found) == n_io
    # the two halves the actuators, resolve and iotrace call
    assert threads.vcpu_tids(proc, 100) == vcpus
    assert threads.io_threads(proc, 100) == {'emulator': 100, 'io': io}


def test_qemu_threads_of_a_process_gone(tmp_path):
    with pytest.raises(threads.ThreadError, match='cannot list threads'):
        threads.qemu_threads(str(tmp_path), 100)


def test_pidfile(tmp_path):
    run = str(tmp_path)
    open(os.path.join(run, 'instance-1.pid'), 'w').write('4242\n')
    assert threads.qemu_pid(run, 'instance-1') == 4242
    with pytest.raises(threads.ThreadError):
        threads.qemu_pid(run, 'instance-2')
    open(os.path.join(run, 'bad.pid'), 'w').write('1')
    with pytest.raises(threads.ThreadError):
        threads.qemu_pid(run, 'bad')


def test_hostile_domain_name_never_leaves_the_run_dir(tmp_path):
    from iosched.host_agent import paths
    with pytest.raises((paths.UnsafePath, threads.ThreadError)):
        threads.qemu_pid(str(tmp_path), '../../etc/passwd')


def test_stat_processor_with_parentheses_in_comm():
    fields = ['R'] + ['0'] * 35 + ['3'] + ['0'] * 13
    assert threads.parse_stat_processor(
        '77 (weird) name)) %s' % ' '.join(fields)) == 3


def test_tracepoint_lines():
    text = (
        '  qemu-system-x86-4100  [001] d..2.  1234.567890: sched_wakeup: '
        'comm=CPU 0/TCG pid=4242 prio=120 target_cpu=001\n'
        '  <idle>-0     [000] dNh2.  1234.600001: sched_wakeup: '
        'comm=kworker/0:1 pid=17 prio=120 target_cpu=000\n'
        'garbage line\n')
    assert list(tracing.parse_lines(text)) == [
        (4242, 1234567890000), (17, 1234600001000)]
    assert tracing.filter_expr({3, 1}) == 'pid == 1 || pid == 3'
    assert tracing.filter_expr(()) == 'pid == 0'


def test_cpu_stat():
    from iosched.host_agent.linux import cgroups
    assert cgroups.parse_cpu_stat(
        'nr_periods 1200\nnr_throttled 37\nthrottled_time 812345678\n'
        'garbage\n') == {'nr_periods': 1200, 'nr_throttled': 37,
                         'throttled_time': 812345678}


def test_stale_trace_instances_of_dead_agents_are_swept(tmp_path):
    import subprocess
    dead = subprocess.Popen(['true'])
    dead.wait()
    inst = tmp_path / 'instances'
    for name in ('iosched-%d' % dead.pid, 'iosched-%d' % os.getpid(),
                 'someone-else'):
        ev = inst / name / 'events' / 'sched' / 'sched_wakeup'
        ev.mkdir(parents=True)
        (ev / 'enable').write_text('1')
    tracer = tracing.WakeupTracer(str(tmp_path), name='iosched-1')
    # a real tracefs removes an instance's files with it; a tmp dir cannot
    # rmdir a non-empty directory, so emulate by emptying the dead one.
    import shutil
    shutil.rmtree(inst / ('iosched-%d' % dead.pid) / 'events')
    assert tracer.sweep_stale() == ['iosched-%d' % dead.pid]
    assert sorted(os.listdir(inst)) == sorted(['iosched-%d' % os.getpid(),
                                               'someone-else'])
