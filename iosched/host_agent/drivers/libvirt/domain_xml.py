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
"""Pure parsing of libvirt domain XML into what the agent needs.

Nova's libvirt driver writes its metadata into the domain (namespace
``http://openstack.org/xmlns/libvirt/nova/1.1``, see
``nova/virt/libvirt/config.py LibvirtConfigGuestMetaNovaInstance``)::

    <metadata>
      <nova:instance xmlns:nova="http://openstack.org/xmlns/libvirt/nova/1.1">
        <nova:name>web-1</nova:name>
        <nova:flavor name="lsvm.small" id="...">
          <nova:vcpus>1</nova:vcpus>
          <nova:extraSpecs>
            <nova:extraSpec name="iosched:latency_ms">2</nova:extraSpec>
          </nova:extraSpecs>
        </nova:flavor>
      </nova:instance>
    </metadata>

The domain ``<uuid>`` is the Nova instance uuid; a disk's ``<serial>`` is
the Cinder volume id and its ``<iotune>`` the front-end keys of the
volume's QoS spec as Nova copied them at attach (``parse_iotune``; Nova's
``LibvirtConfigGuestDisk``: one child element per key, e.g.
``<total_iops_sec>400</total_iops_sec>``). Names taken from here are
checked before they are ever used in a path (``iosched.host_agent.paths``).
"""

import dataclasses
import xml.etree.ElementTree as ET

from iosched.contract import qos_keys

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'
_NS = {'nova': NOVA_NS}


class DomainXMLError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Disk:
    target: str           # 'vda'
    serial: str           # Cinder volume id ('' for local disks)
    source: str           # file path or block device, informational
    alias: str = ''       # QEMU device id ('virtio-disk0'), from <alias>
    iotune: dict = dataclasses.field(default_factory=dict)  # parse_iotune


@dataclasses.dataclass(frozen=True)
class Nic:
    target: str           # host tap name, '' when libvirt reports none
    mac: str


@dataclasses.dataclass(frozen=True)
class Domain:
    uuid: str
    name: str             # libvirt domain name
    nova_name: str        # instance display name ('' without metadata)
    flavor: str
    vcpus: int
    extra_specs: dict
    disks: tuple          # tuple[Disk]
    nics: tuple           # tuple[Nic]
    vcpupin: dict         # vcpu index -> cpuset string ('0-1,3')


def _text(node, path, default=''):
    found = node.find(path, _NS)
    return found.text.strip() if found is not None and found.text else default


def parse(xml_text):
    """Parse a domain XML document; raise DomainXMLError when malformed."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as e:
        raise DomainXMLError('domain XML is not well-formed: %s' % e)
    if root.tag != 'domain':
        raise DomainXMLError('root element is <%s>, expected <domain>'
                             % root.tag)
    uuid = _text(root, 'uuid')
    name = _text(root, 'name')
    if not uuid or not name:
        raise DomainXMLError('domain XML lacks <uuid> or <name>')
    try:
        vcpus = int(_text(root, 'vcpu', '1'))
    except ValueError:
        raise DomainXMLError('<vcpu> is not an integer')
    inst = root.find('metadata/nova:instance', _NS)
    flavor = ''
    specs = {}
    nova_name = ''
    if inst is not None:
        nova_name = _text(inst, 'nova:name')
        fl = inst.find('nova:flavor', _NS)
        if fl is not None:
            flavor = fl.get('name', '')
            for spec in fl.findall('nova:extraSpecs/nova:extraSpec', _NS):
                if spec.get('name'):
                    specs[spec.get('name')] = (spec.text or '').strip()
    disks = []
    for d in root.findall('devices/disk'):
        if d.get('device', 'disk') != 'disk':
            continue
        target = d.find('target')
        if target is None or not target.get('dev'):
            continue
        src = d.find('source')
        source = ''
        if src is not None:
            source = src.get('file') or src.get('dev') or src.get('name', '')
        alias = d.find('alias')
        disks.append(Disk(target=target.get('dev'),
                          serial=_text(d, 'serial'), source=source,
                          alias=alias.get('name', '') if alias is not None
                          else '', iotune=parse_iotune(d.find('iotune'))))
    nics = []
    for n in root.findall('devices/interface'):
        target = n.find('target')
        mac = n.find('mac')
        nics.append(Nic(target=target.get('dev', '') if target is not None
                        else '',
                        mac=mac.get('address', '') if mac is not None
                        else ''))
    pins = {}
    for pin in root.findall('cputune/vcpupin'):
        try:
            pins[int(pin.get('vcpu'))] = pin.get('cpuset', '')
        except (TypeError, ValueError):
            raise DomainXMLError('<vcpupin vcpu=%r> is not an integer'
                                 % pin.get('vcpu'))
    return Domain(uuid=uuid, name=name, nova_name=nova_name, flavor=flavor,
                  vcpus=vcpus, extra_specs=specs, disks=tuple(disks),
                  nics=tuple(nics), vcpupin=pins)


def parse_iotune(node):
    """``{key: int}`` of an ``<iotune>`` element's front-end keys
    (``qos_keys.FRONTEND_KEYS``) with a whole value > 0, what QEMU
    enforces; {} for None. Other children (``*_max_length``,
    ``group_name``) and values that are not whole numbers are left out.
    """
    out = {}
    if node is None:
        return out
    for child in node:
        if child.tag not in qos_keys.FRONTEND_KEYS:
            continue
        try:
            value = int((child.text or '').strip())
        except ValueError:
            continue
        if value > 0:
            out[child.tag] = value
    return out


def parse_cpuset(text, max_cpu=4096):
    """'0-2,5' -> (0, 1, 2, 5); raise ValueError on bad syntax."""
    cpus = set()
    for part in filter(None, (p.strip() for p in text.split(','))):
        if '-' in part:
            lo, hi = (int(x) for x in part.split('-', 1))
            if lo > hi:
                raise ValueError('bad cpu range %r' % part)
            cpus.update(range(lo, hi + 1))
        else:
            cpus.add(int(part))
    if any(c < 0 or c > max_cpu for c in cpus):
        raise ValueError('cpu id out of range in %r' % text)
    return tuple(sorted(cpus))
