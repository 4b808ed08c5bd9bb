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
"""Nova's libvirt ``<disk>`` for a Cinder attachment, in a process of its own.

``python -m tests.functional.nova_volume_disk`` reads one JSON object on
stdin, ``{"attachment": <Cinder's attachment, as POST /attachments
answers>, "volume_id": ..., "dev": "vdb", "device_path": ...}``, and
prints the disk element Nova's libvirt driver would put into the domain:
the attachment turned into Nova's connection_info
(``nova.volume.cinder._translate_attachment_ref``), its ``serial`` set to
the volume id as ``DriverVolumeBlockDevice`` does,
then ``LibvirtVolumeDriver.get_config(...).to_xml()`` (the ``<iotune>``
from ``connection_info['data']['qos_specs']``, the ``<serial>``). Nova is
imported here only: it must not share the tests' interpreter (its
configuration, Cinder's).
"""

import json
import sys


class _Host(object):
    """Nova's ``Host`` as far as ``get_config`` asks it: the volume has no
    libvirt secret (not encrypted).
    """

    def find_secret(self, usage_type, usage_id):
        return None


def main():
    req = json.load(sys.stdin)
    from nova.virt.libvirt.volume import volume as nova_volume
    from nova.volume import cinder as nova_cinder
    att = nova_cinder._translate_attachment_ref(dict(req['attachment']))
    connection_info = att['connection_info']
    connection_info['serial'] = req['volume_id']
    # os-brick's connect_volume would have set it (iSCSI: the /dev path)
    connection_info['data'].setdefault('device_path',
                                       req.get('device_path', '/dev/null'))
    drv = nova_volume.LibvirtVolumeDriver(_Host())
    conf = drv.get_config(connection_info, {
        'type': 'disk', 'dev': req.get('dev', 'vdb'), 'bus': 'virtio'})
    sys.stdout.write(conf.to_xml())
    return 0


if __name__ == '__main__':
    sys.exit(main())
