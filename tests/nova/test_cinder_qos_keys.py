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

"""iosched.contract.qos_keys.FRONTEND_KEYS against the installed Nova.

Nova drops unknown QoS keys silently, so only this test catches a key that
Nova would not apply. The list is a local variable, ``tune_opts``, inside
``LibvirtBaseVolumeDriver.get_config()`` in
``nova/virt/libvirt/volume/volume.py``: we read it from the source, and we
also run ``get_config()`` to see which keys reach the libvirt ``<iotune>``.
"""

import ast
import inspect

from lxml import etree
from nova.virt.libvirt.volume import volume

from iosched.cinder_qos import translate
from iosched.contract import qos_keys
from iosched.contract import slo


def _nova_tune_opts():
    src = inspect.getsource(volume.LibvirtBaseVolumeDriver.get_config)
    tree = ast.parse(inspect.cleandoc('\n' + src))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], 'id', None) == 'tune_opts'):
            return ast.literal_eval(node.value)
    raise AssertionError('tune_opts not found in Nova get_config()')


class _FakeHost(object):
    def find_secret(self, usage_type, usage_id):
        return None


def _disk_config(qos_specs):
    drv = volume.LibvirtBaseVolumeDriver(_FakeHost(), is_block_dev=True)
    conf = drv.get_config(
        {'serial': 'c0ffee00-0000-4000-8000-000000000001',
         'data': {'qos_specs': qos_specs}},
        {'type': 'block', 'dev': 'vdb', 'bus': 'virtio'})
    conf.source_path = '/dev/sdb'
    return conf


def test_frontend_keys_match_nova_tune_opts():
    tune_opts = _nova_tune_opts()
    assert len(tune_opts) == len(set(tune_opts)) == 13
    assert set(qos_keys.FRONTEND_KEYS) == set(tune_opts)


def test_nova_applies_every_frontend_key_and_nothing_else():
    specs = {k: str(i + 1) for i, k in enumerate(qos_keys.FRONTEND_KEYS)}
    specs.update({k: '7' for k in qos_keys.IOSCHED_KEYS})
    specs['total_iops_sec_max_length'] = '2'
    conf = _disk_config(specs)
    applied = {name[len('disk_'):]: value
               for name, value in vars(conf).items()
               if name.startswith('disk_') and value is not None}
    assert applied == {k: specs[k] for k in qos_keys.FRONTEND_KEYS}


def test_translated_spec_reaches_libvirt_iotune():
    specs = translate.translate(slo.parse('120iops,60ms'), expected_qd=8)
    xml = etree.fromstring(_disk_config(specs).to_xml())
    iotune = {child.tag: child.text for child in xml.find('iotune')}
    assert iotune == {'total_iops_sec': '200', 'size_iops_sec': '16384'}


def test_throughput_class_burst_reaches_libvirt_iotune():
    specs = translate.translate(slo.parse('1000iops,80ms'))
    xml = etree.fromstring(_disk_config(specs).to_xml())
    iotune = {child.tag: child.text for child in xml.find('iotune')}
    assert iotune == {'total_iops_sec': '1500', 'total_iops_sec_max': '1500',
                      'size_iops_sec': '16384'}
