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
"""Domain XML of a testbed guest, shaped like what Nova's libvirt driver
writes: ``<uuid>`` is the instance uuid, ``<metadata><nova:instance>`` has
the structure of ``nova.virt.libvirt.config.LibvirtConfigGuestMetaNova*``
(package, name, creationTime, flavor with extraSpecs, image, owner, root,
ports), the disk's ``<serial>`` is the (fake) Cinder volume id, and its
``<iotune>`` (``spec.disk_iotune``, none by default) what Nova writes from
the volume's front-end QoS spec.

Devices: direct kernel boot (TCG, ``type='qemu'``), a raw virtio-blk disk
(``cache='none' io='native'``, or ``spec.disk_cache`` with ``io='threads'``
for the host page cache modes; a file, or with ``spec.disk_dev`` a storage
slice of a shared block device), a virtio-serial channel ``iosched.0`` bound
to a unix socket, a tap NIC with no host address and no guest driver (so
no traffic), a file console and no balloon.
"""

import time
import xml.etree.ElementTree as ET

from iosched.contract import qos_keys

NOVA_NS = 'http://openstack.org/xmlns/libvirt/nova/1.1'
NOVA_PACKAGE = '34.0.0 (iosched-testbed)'
CHANNEL_NAME = 'iosched.0'
FAKE_USER = ('5f2a3cde-0000-4000-8000-000000000001', 'iosched')
FAKE_PROJECT = ('5f2a3cde-0000-4000-8000-000000000002', 'iosched-testbed')

ET.register_namespace('nova', NOVA_NS)


def _sub(parent, tag, text=None, **attrs):
    el = ET.SubElement(parent, tag, {k: str(v) for k, v in attrs.items()})
    if text is not None:
        el.text = str(text)
    return el


def _n(tag):
    return '{%s}%s' % (NOVA_NS, tag)


def nova_instance(spec, volume_id, port_id, creation_time=None):
    """The ``<nova:instance>`` element (Nova's field order)."""
    inst = ET.Element(_n('instance'))
    _sub(inst, _n('package'), version=NOVA_PACKAGE)
    _sub(inst, _n('name'), spec.name)
    _sub(inst, _n('creationTime'), time.strftime(
        '%Y-%m-%d %H:%M:%S', time.gmtime(creation_time or time.time())))
    flavor = _sub(inst, _n('flavor'), name=spec.flavor_name,
                  id=spec.flavor_name)
    _sub(flavor, _n('memory'), spec.memory_mib)
    _sub(flavor, _n('disk'), max(1, spec.disk_mib // 1024))
    _sub(flavor, _n('swap'), 0)
    _sub(flavor, _n('ephemeral'), 0)
    _sub(flavor, _n('vcpus'), 1)
    specs = _sub(flavor, _n('extraSpecs'))
    for key, value in sorted(spec.flavor_extra_specs.items()):
        _sub(specs, _n('extraSpec'), value, name=key)
    image = _sub(inst, _n('image'), uuid='')      # boot from volume
    _sub(image, _n('properties'))
    owner = _sub(inst, _n('owner'))
    _sub(owner, _n('user'), FAKE_USER[1], uuid=FAKE_USER[0])
    _sub(owner, _n('project'), FAKE_PROJECT[1], uuid=FAKE_PROJECT[0])
    _sub(inst, _n('root'), type='volume', uuid=volume_id)
    ports = _sub(inst, _n('ports'))
    _sub(ports, _n('port'), uuid=port_id)
    return inst


def _aio(cache):
    """QEMU's io= for a cache mode: native AIO needs O_DIRECT."""
    return 'native' if cache in ('none', 'directsync') else 'threads'


def domain_xml(spec, *, domain_name, uuid, volume_id, port_id, kernel,
               initrd, disk, socket_path, console_log, tap, pin=None,
               creation_time=None):
    """The full ``<domain>`` XML text."""
    dom = ET.Element('domain', type='qemu')
    _sub(dom, 'name', domain_name)
    _sub(dom, 'uuid', uuid)
    meta = _sub(dom, 'metadata')
    meta.append(nova_instance(spec, volume_id, port_id, creation_time))
    _sub(dom, 'memory', spec.memory_mib, unit='MiB')
    _sub(dom, 'vcpu', 1, placement='static')
    tune = _sub(dom, 'cputune')
    _sub(tune, 'shares', 1024)
    if pin is not None:
        _sub(tune, 'vcpupin', vcpu=0, cpuset=pin)
        _sub(tune, 'emulatorpin', cpuset=pin)
    os_el = _sub(dom, 'os')
    _sub(os_el, 'type', 'hvm', arch='x86_64', machine='pc')
    _sub(os_el, 'kernel', kernel)
    _sub(os_el, 'initrd', initrd)
    _sub(os_el, 'cmdline', ' '.join(spec.kernel_args()))
    features = _sub(dom, 'features')
    _sub(features, 'acpi')
    _sub(features, 'apic')
    _sub(dom, 'clock', offset='utc')
    _sub(dom, 'on_poweroff', 'destroy')
    _sub(dom, 'on_reboot', 'destroy')
    _sub(dom, 'on_crash', 'destroy')
    dev = _sub(dom, 'devices')
    _sub(dev, 'emulator', '/usr/bin/qemu-system-x86_64')
    if spec.disk_dev:               # a region of a shared block device
        d = _sub(dev, 'disk', type='block', device='disk')
        _sub(d, 'driver', name='qemu', type='raw', cache=spec.disk_cache,
             io=_aio(spec.disk_cache))
        src = _sub(d, 'source', dev=spec.disk_dev)
        _sub(_sub(src, 'slices'), 'slice', type='storage',
             offset=int(spec.disk_offset), size=int(spec.disk_mib) * 2**20)
    else:
        d = _sub(dev, 'disk', type='file', device='disk')
        _sub(d, 'driver', name='qemu', type='raw', cache=spec.disk_cache,
             io=_aio(spec.disk_cache))
        _sub(d, 'source', file=disk)
    _sub(d, 'target', dev='vda', bus='virtio')
    _sub(d, 'serial', volume_id)
    if spec.disk_iotune:            # as Nova's LibvirtConfigGuestDisk
        tune = _sub(d, 'iotune')
        for key in qos_keys.FRONTEND_KEYS:
            if key in spec.disk_iotune:
                _sub(tune, key, int(spec.disk_iotune[key]))
    _sub(dev, 'controller', type='usb', model='none')
    _sub(dev, 'controller', type='virtio-serial', index=0)
    ch = _sub(dev, 'channel', type='unix')
    _sub(ch, 'source', mode='bind', path=socket_path)
    _sub(ch, 'target', type='virtio', name=CHANNEL_NAME)
    nic = _sub(dev, 'interface', type='ethernet')
    _sub(nic, 'target', dev=tap, managed='yes')
    _sub(nic, 'model', type='virtio')
    ser = _sub(dev, 'serial', type='file')
    _sub(ser, 'source', path=console_log)
    _sub(ser, 'target', port=0)
    _sub(dev, 'memballoon', model='none')
    ET.indent(dom)
    return ET.tostring(dom, encoding='unicode')


def read_nova_metadata(xml_text):
    """(name, flavor, extra_specs) from a domain's Nova metadata, as an
    agent would read it; ``None`` fields when absent.
    """
    root = ET.fromstring(xml_text)
    inst = root.find('metadata/' + _n('instance'))
    if inst is None:
        return None, None, None
    flavor = inst.find(_n('flavor'))
    specs = {e.get('name'): e.text or ''
             for e in inst.iterfind('%s/%s/%s' % (
                 _n('flavor'), _n('extraSpecs'), _n('extraSpec')))}
    return (inst.findtext(_n('name')),
            flavor.get('name') if flavor is not None else None, specs)


def serial_tcp_ports(xml_text):
    """[(host, port)] of a domain's TCP serial ports in target-port order,
    as Nova's libvirt driver writes them with ``[serial_console] enabled``
    (``<serial type='tcp'><source mode='bind' host=.. service=..>``, one
    per ``hw:serial_port_count``; the first carries the console log).
    Nova writes no ``<target>``: libvirt numbers the ports in document
    order, which the live XML then shows as ``<target port=N>``. A
    wildcard listen host (0.0.0.0, ::) is returned as the loopback.
    """
    root = ET.fromstring(xml_text)
    ports = []
    for i, ser in enumerate(root.iterfind('devices/serial')):
        src = ser.find('source')
        if (ser.get('type') != 'tcp' or src is None or
                src.get('mode', 'connect') != 'bind'):
            continue
        target = ser.find('target')
        idx = i
        if target is not None and target.get('port') is not None:
            idx = int(target.get('port'))
        host = src.get('host') or '127.0.0.1'
        if host in ('0.0.0.0', '::', '[::]'):
            host = '127.0.0.1' if host == '0.0.0.0' else '::1'
        ports.append((idx, host, int(src.get('service'))))
    return [(h, p) for _, h, p in sorted(ports)]
