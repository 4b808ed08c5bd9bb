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
"""Where the agent reads SLOs on a real host: the disks' ``<serial>`` and
``<iotune>`` in the domain XML, the iotune ceiling, the per-disk and the
host's source (``disk.slo_source``), ``[volume_slo] from_cinder`` unset
(on with credentials), the start-up WARNING and the report field.
"""

import json

from oslo_config import cfg
import pytest

from iosched.cinder_qos import translate
from iosched.contract import payload
from iosched.contract import payload_sections as ps
from iosched.contract import qos_attach
from iosched.contract import slo as slo_mod
from iosched.host_agent import cinder_slo
from iosched.host_agent.conf import opts as agent_opts
from iosched.host_agent.drivers.libvirt import domain_xml
from iosched.host_agent import model
from iosched.host_agent import volume_slo

SLO_TEXT = '120iops,60ms'
SPECS = translate.translate(slo_mod.parse(SLO_TEXT))   # total_iops_sec 400
# What Nova writes into <iotune> from the attachment's qos_specs.
IOTUNE = qos_attach.iotune(qos_attach.specs_at_attach(
    SPECS, translate.consumer(), 1))
VOL = '0b7d4a8e-6c1b-4f1e-9a43-1f6f3c2a9d10'


def _iotune_xml(keys):
    return ''.join('<%s>%s</%s>' % (k, v, k) for k, v in keys.items())


DOMAIN = """<domain type='qemu'>
  <name>instance-00000001</name>
  <uuid>6f1c3a52-0000-4000-8000-000000000001</uuid>
  <devices>
    <disk type='file' device='disk'>
      <source file='/var/lib/nova/instances/x/disk'/>
      <target dev='vda' bus='virtio'/>
    </disk>
    <disk type='block' device='disk'>
      <source dev='/dev/sdb'/>
      <target dev='vdb' bus='virtio'/>
      <iotune>%s</iotune>
      <serial>%s</serial>
    </disk>
    <disk type='file' device='cdrom'>
      <target dev='hda' bus='ide'/>
      <serial>not-a-disk</serial>
    </disk>
  </devices>
</domain>""" % (_iotune_xml(IOTUNE), VOL)


def test_nova_iotune_is_exactly_the_front_end_keys_of_the_slo():
    assert IOTUNE == {'total_iops_sec': 400, 'size_iops_sec': 16384}


def test_domain_xml_gives_each_disk_its_serial_and_iotune():
    d = domain_xml.parse(DOMAIN)
    assert [(k.target, k.serial, k.iotune) for k in d.disks] == [
        ('vda', '', {}), ('vdb', VOL, IOTUNE)]


@pytest.mark.parametrize('children, want', [
    ('', {}),
    ('<total_iops_sec>400</total_iops_sec>', {'total_iops_sec': 400}),
    ('<total_iops_sec>400</total_iops_sec><size_iops_sec>16384'
     '</size_iops_sec>', {'total_iops_sec': 400, 'size_iops_sec': 16384}),
    # libvirt shows what QEMU accepts: 0 is "no limit", *_max_length and
    # group_name are not Nova's keys, junk is not a number
    ('<total_iops_sec>0</total_iops_sec>', {}),
    ('<total_iops_sec_max_length>5</total_iops_sec_max_length>'
     '<group_name>g</group_name>', {}),
    ('<read_bytes_sec>x</read_bytes_sec>', {}),
    ('<read_bytes_sec> 1048576 </read_bytes_sec><read_iops_sec_max>50'
     '</read_iops_sec_max>', {'read_bytes_sec': 1048576,
                              'read_iops_sec_max': 50}),
], ids=['empty', 'total', 'cinder-qos', 'zero', 'not-nova-keys', 'junk',
        'others'])
def test_parse_iotune(children, want):
    node = domain_xml.ET.fromstring('<iotune>%s</iotune>' % children)
    assert domain_xml.parse_iotune(node) == want


def test_parse_iotune_of_no_element():
    assert domain_xml.parse_iotune(None) == {}


@pytest.mark.parametrize('iotune, want', [
    ({}, None),
    (IOTUNE, 400.0),
    ({'total_iops_sec': 400}, None),          # a plain limit, no S
    ({'size_iops_sec': 16384}, None),
    ({'read_iops_sec': 100, 'size_iops_sec': 4096}, None),
    ({'total_iops_sec': 900, 'total_iops_sec_max': 900,
      'size_iops_sec': 16384}, 900.0),
])
def test_iotune_ceiling(iotune, want):
    assert model.iotune_ceiling(iotune) == want


class FakeCinder(object):
    def __init__(self, answers):
        self.answers = answers

    def specs(self, serial):
        return self.answers.get(serial)


PLAIN = {'total_iops_sec': '300'}      # a type with a plain limit


# (file content, Cinder's answers or None: not configured, the disk's
#  serial, iotune and driver specs) -> (disk source, B or ceiling, SLO?)
@pytest.mark.parametrize('by_file, cinder, serial, iotune, qos, want', [
    ({}, None, VOL, IOTUNE, {}, ('iotune', 400.0, False)),
    ({}, None, '', IOTUNE, {}, ('', 0.0, False)),      # a local disk
    ({}, None, VOL, {}, {}, ('', 0.0, False)),
    ({}, None, VOL, {'total_iops_sec': 400}, {}, ('', 0.0, False)),
    ({VOL: SPECS}, None, VOL, IOTUNE, {}, ('file', 120.0, True)),
    ({}, {VOL: SPECS}, VOL, IOTUNE, {}, ('cinder', 120.0, True)),
    ({}, {VOL: PLAIN}, VOL, IOTUNE, {}, ('cinder', 0.0, False)),
    ({}, {VOL: {}}, VOL, IOTUNE, {}, ('cinder', 0.0, False)),
    # Cinder does not know it (or never answered): the ceiling counts
    ({}, {}, VOL, IOTUNE, {}, ('iotune', 400.0, False)),
    ({VOL: SPECS}, {VOL: PLAIN}, VOL, {}, {}, ('file', 120.0, True)),
    ({}, None, 'vol-1', {}, SPECS, ('driver', 120.0, True)),
], ids=['iotune-only', 'local-disk', 'nothing', 'plain-limit', 'file',
        'cinder', 'cinder-plain', 'cinder-no-qos', 'cinder-unknown',
        'file-first', 'driver'])
def test_disk_source_and_reservation(tmp_path, by_file, cinder, serial,
                                     iotune, qos, want):
    path = ''
    if by_file:
        f = tmp_path / 'qos.json'
        f.write_text(json.dumps(by_file))
        path = str(f)
    res = volume_slo.Resolver(path, None if cinder is None
                              else FakeCinder(cinder))
    (inst,) = res.attach([model.InstanceInfo(uuid='u', name='u', disks=(
        model.DiskInfo('vdb', serial=serial, qos=qos, iotune=iotune),))])
    d = inst.disks[0]
    assert (d.slo_source, d.reserved_iops, d.slo is not None) == want
    assert d.iotune == iotune


def _disk(source):
    return model.InstanceInfo(uuid='u', name='u', disks=(
        model.DiskInfo('vdb', slo_source=source),))


# (cinder on, file set, driver reads <iotune>, disks) -> host's source
@pytest.mark.parametrize('cinder_on, file_on, reads_iotune, insts, want', [
    (True, True, True, [], 'cinder'),
    (False, True, True, [], 'file'),
    (False, False, True, [], 'iotune'),
    (False, False, True, [_disk('iotune')], 'iotune'),
    (False, False, False, [_disk('driver')], 'driver'),
    (False, False, True, [_disk('driver')], 'driver'),
    (False, False, False, [], 'none'),
    (False, False, False, [_disk('')], 'none'),
])
def test_host_source(cinder_on, file_on, reads_iotune, insts, want):
    got = volume_slo.host_source(cinder_on, file_on, reads_iotune, insts)
    assert got == want and got in ps.SLO_SOURCES


def _conf(args=()):
    conf = cfg.ConfigOpts()
    agent_opts.register_all(conf)
    conf(list(args), default_config_files=[])
    return conf


# ([volume_slo] from_cinder, [cinder] auth_type) -> reads Cinder
@pytest.mark.parametrize('from_cinder, auth_type, want', [
    (None, None, False),
    (None, 'password', True),
    (None, 'admin_token', True),
    (True, None, True),          # asked for: a missing auth is an outage
    (False, 'password', False),
    (False, None, False),
])
def test_from_cinder_unset_means_with_credentials(from_cinder, auth_type,
                                                  want):
    conf = _conf()
    assert conf.volume_slo.from_cinder is None      # the default
    # (the groups are module objects: an override outlives this conf)
    try:
        if from_cinder is not None:
            conf.set_override('from_cinder', from_cinder, 'volume_slo')
        if auth_type is not None:
            conf.set_override('auth_type', auth_type, 'cinder')
        assert cinder_slo.enabled(conf) is want
        assert (cinder_slo.from_conf(conf) is not None) is want
    finally:
        conf.clear_override('from_cinder', 'volume_slo')
        conf.clear_override('auth_type', 'cinder')


def test_disk_state_slo_source_reads_old_and_newer_reports():
    base = {'capacity_iops': 1000.0, 'reserved_iops': 120.0,
            'latency_p50_ms': 1.0, 'latency_p99_ms': 2.0}
    read = ps.DiskState.from_dict
    assert read(base, 'disk.').slo_source == ''            # 1.4
    for s in ps.SLO_SOURCES:
        assert read(dict(base, slo_source=s), 'disk.').slo_source == s
    # a source a newer agent names: unknown, not an error
    assert read(dict(base, slo_source='placement'), 'disk.').slo_source \
        == ''
    with pytest.raises(payload.payload_check.PayloadError,
                       match='disk.slo_source'):
        read(dict(base, slo_source=3), 'disk.')


def test_unknowing_sources():
    assert set(ps.SLO_SOURCES_UNKNOWING) == {'none', ''}
    assert payload.VERSION == '1.5'


def _sim_agent(tmp_path, qos_file='', reads_iotune=False):
    from iosched.host_agent import assembly
    from iosched.host_agent.policies import slo
    from iosched.simdriver import driver as sim_driver
    from iosched.simulator import host as sim_host
    from iosched.simulator import spec as S
    conf = _conf()
    conf.set_override('journal_path', str(tmp_path / 'journal.jsonl'),
                      'host_agent')
    conf.set_override('volume_qos_file', qos_file, 'host_agent')
    host = sim_host.SimHost(S.HostSpec(name='h', pcpus=2), seed=7)
    drv = sim_driver.SimulatedDriver(host)
    drv.reads_iotune = reads_iotune
    host.add_vm(S.VmSpec(uuid='db', name='db', vcpus=(S.Idle(),),
                         disks=('vdb',)))
    drv.add_instance(model.InstanceInfo(uuid='db', name='db', disks=(
        model.DiskInfo('vdb', VOL, iotune=IOTUNE if reads_iotune
                       else {}),)))
    return conf, assembly.build_agent(conf, drv,
                                      policies=[slo.SloPolicy(conf)])


# ([host_agent] volume_qos_file, driver reads <iotune>) ->
#   (one start WARNING, report's slo_source, reserved_iops)
@pytest.mark.parametrize('by_file, reads_iotune, want', [
    (True, True, (False, 'file', 120.0)),
    (False, True, (True, 'iotune', 400.0)),
    (False, False, (True, 'none', 0.0)),
], ids=['file', 'iotune', 'none'])
def test_agent_says_its_source_at_start_and_in_its_report(
        tmp_path, caplog, by_file, reads_iotune, want):
    path = ''
    if by_file:
        path = str(tmp_path / 'qos.json')
        with open(path, 'w') as fh:
            json.dump({VOL: SPECS}, fh)
    conf, ag = _sim_agent(tmp_path, path, reads_iotune)
    try:
        caplog.set_level('WARNING')
        ag.start()
        warned = [r for r in caplog.records
                  if 'without an SLO source' in r.getMessage()]
        for _ in range(conf.host_agent.report_every_ticks):
            ag.tick()
        disk = ag.last_report.disk
        assert (bool(warned), disk.slo_source, disk.reserved_iops) == want
        if warned:
            assert len(warned) == 1
            assert '[cinder] auth_type' in warned[0].getMessage()
        back = payload.HostReport.from_dict(ag.last_report.to_dict())
        assert back.disk.slo_source == want[1]
    finally:
        ag.stop()
        for name in ('journal_path', 'volume_qos_file'):
            conf.clear_override(name, 'host_agent')


@pytest.mark.parametrize('source, shown', [
    ('cinder', 'cinder'), ('iotune', 'iotune'), ('none', 'none'),
    ('', 'unknown'),
])
def test_iosched_status_shows_the_source(source, shown):
    import dataclasses
    from iosched.nova_plugin.cmd import status
    from tests.unit.nova_plugin import reports
    rep = reports.report(host='h1', ts=100.0, seq=1)
    rep = dataclasses.replace(rep, disk=ps.DiskState(
        capacity_iops=1000.0, reserved_iops=120.0, slo_source=source))
    row = status.row(rep, 100.0, 101.0)
    assert (row['slo']['source'], row['slo']['reserved_iops']) == (
        shown, 120.0)
    head, line = status.table([row])[:2]
    assert head.split()[-1] == 'SLO-SOURCE' and line.split()[-1] == shown
