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
"""Which attached disks have an SLO: QoS specs by volume id, to SLOs.

A disk's QoS spec comes from the driver (``DiskInfo.qos``: simulated
hosts), from the ``[host_agent] volume_qos_file`` (``QosFile``: volume id
-> spec keys, re-read when it changes) or, for the other disks with a
serial, from the Cinder API (``iosched.host_agent.cinder_slo``, with
``[cinder]`` credentials unless ``[volume_slo] from_cinder = false``).
On a real host that is the only way to the SLO: Cinder hands Nova the
front-end spec in the attachment's ``connection_info['data']['qos_specs']``
and Nova's libvirt driver writes only its 13 front-end keys into the
disk's ``<iotune>``; the ``iosched:*`` keys reach no file on the host. A
volume none of them knows, whose ``<iotune>`` carries the keys
``cinder_qos`` writes, is counted at its ceiling (``model.iotune_ceiling``,
``slo_source`` iotune) and has no SLO to defend.

``attach`` returns the instances with each disk's spec, its source and its
``iosched.contract.slo.SLO`` (``SLO.from_specs``, the reader of what the
admin tooling writes); a spec that does not parse is reported once and the
disk treated as having no SLO. ``host_source`` names the host's source
for the report (``disk.slo_source``).
"""

import dataclasses
import json
import os

from oslo_log import log as logging

from iosched.contract import payload_sections as ps
from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.host_agent import model

LOG = logging.getLogger(__name__)


class QosFile(object):
    """``{volume id: {key: value}}`` from a JSON file, cached by mtime."""

    def __init__(self, path):
        self.path = path
        self._stamp = None
        self._specs = {}
        self._said = None

    def specs(self):
        """The file's content; the last good one when it is bad or gone."""
        if not self.path:
            return {}
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                self._specs = _load(self.path)
                self._stamp = stamp
                self._said = None
        except (OSError, ValueError, RecursionError) as e:
            # (RecursionError: json nested deeper than the stack)
            if str(e) != self._said:
                LOG.warning('volume_qos_file %s: %s; keeping the last good '
                            'content (%d volumes)', self.path, e,
                            len(self._specs))
                self._said = str(e)
        return self._specs


def _load(path):
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not all(
            isinstance(k, str) and isinstance(v, dict)
            for k, v in data.items()):
        raise ValueError('not a JSON object of volume id -> QoS spec object;'
                         ' accepted: {"<volume id>": {"<key>": "<value>"}}')
    return {k: {str(a): str(b) for a, b in v.items()}
            for k, v in data.items()}


def slo_of(specs):
    """The ``iosched.contract.slo.SLO`` of a QoS spec dict, None without
    ``iosched:`` keys; raises ``slo.SLOError`` for a bad one.
    """
    if not any(qos_keys.is_iosched_key(str(k)) for k in specs):
        return None
    return slo_mod.SLO.from_specs(specs)


class Resolver(object):
    """Fills ``DiskInfo.qos`` and ``DiskInfo.slo`` of listed instances."""

    def __init__(self, qos_file='', cinder=None):
        self.file = QosFile(qos_file)
        self.cinder = cinder    # a cinder_slo.CinderQosLookup, or None
        self._bad = {}          # serial -> error said
        self._seen = None       # {(instance uuid, serial)} of the last call

    def attach(self, instances):
        self._refresh_attached(instances)
        by_serial = self.file.specs()
        out = []
        for inst in instances:
            disks = tuple(self._disk(inst, d, by_serial) for d in inst.disks)
            if disks != tuple(inst.disks):
                inst = dataclasses.replace(inst, disks=disks)
            out.append(inst)
        return out

    # A volume attached since the last call is read from Cinder afresh,
    # not from the cache: Cinder refuses to retype a volume in use when the
    # front-end QoS changes, so a retype happens while it is detached, and
    # a cached SLO would be its old type's (the first-sight re-tune would
    # then write the old limits over those Nova just applied). Volumes no
    # longer attached here are dropped from the cache.
    def _refresh_attached(self, instances):
        seen = {(i.uuid, d.serial) for i in instances for d in i.disks
                if d.serial}
        if self.cinder is not None and self._seen is not None:
            now = {s for _, s in seen}
            self.cinder.forget({s for _, s in seen - self._seen} |
                               ({s for _, s in self._seen} - now))
        self._seen = seen

    def _disk(self, inst, disk, by_serial):
        qos = dict(disk.qos or {})
        source = disk.slo_source or (ps.SLO_SOURCE_DRIVER if qos else '')
        if disk.serial and disk.serial in by_serial:
            qos.update(by_serial[disk.serial])
            source = ps.SLO_SOURCE_FILE
        elif disk.serial and self.cinder is not None:
            got = self.cinder.specs(disk.serial)
            if got is not None:     # {}: Cinder knows it has no QoS spec
                qos.update(got)
                source = ps.SLO_SOURCE_CINDER
        if not source and disk.serial and model.iotune_ceiling(disk.iotune):
            source = ps.SLO_SOURCE_IOTUNE
        if not qos:
            if source != disk.slo_source:
                disk = dataclasses.replace(disk, slo_source=source)
            return disk
        try:
            slo = slo_of(qos)
            self._bad.pop(disk.serial, None)
        except slo_mod.SLOError as e:
            key = disk.serial or '%s/%s' % (inst.uuid, disk.target)
            if self._bad.get(key) != str(e):
                LOG.warning('disk %s/%s (volume %s): bad SLO, not defended:'
                            ' %s', inst.uuid, disk.target, disk.serial, e)
                self._bad[key] = str(e)
            slo = None
        return dataclasses.replace(disk, qos=qos, slo=slo,
                                   slo_source=source)


# host_source := cinder        if the agent reads Cinder
#                file          else if [host_agent] volume_qos_file is set
#                driver        else if the driver gave a disk its spec
#                iotune        else if the driver reads disks' <iotune>
#                none          else (reserved_iops cannot be known)
def host_source(cinder_on, file_on, driver_iotune, instances=()):
    """The host's ``disk.slo_source`` (``payload_sections.SLO_SOURCES``)."""
    if cinder_on:
        return ps.SLO_SOURCE_CINDER
    if file_on:
        return ps.SLO_SOURCE_FILE
    if any(d.slo_source == ps.SLO_SOURCE_DRIVER
           for i in instances for d in i.disks):
        return ps.SLO_SOURCE_DRIVER
    return ps.SLO_SOURCE_IOTUNE if driver_iotune else ps.SLO_SOURCE_NONE


def warn_without_source(conf, source):
    """The one start-up WARNING of an agent whose slo policy has no source
    of SLOs (``source`` is ``host_source``'s answer).
    """
    if source not in (ps.SLO_SOURCE_IOTUNE,
                      ps.SLO_SOURCE_NONE):
        return
    LOG.warning(
        'the slo policy runs without an SLO source (slo_source=%s): '
        'no [cinder] credentials ([volume_slo] from_cinder is %s) and '
        'no [host_agent] volume_qos_file, so no volume\'s SLO is known '
        'and none is defended; %s. Configure [cinder] auth_type and '
        'credentials (those of nova-compute\'s [cinder] section) or a '
        'volume_qos_file', source, conf.volume_slo.from_cinder,
        'disk.reserved_iops counts each volume\'s <iotune> ceiling '
        '(an upper bound)' if source == ps.SLO_SOURCE_IOTUNE
        else 'disk.reserved_iops stays 0 (the scheduler sees '
        'slo_source=none)')
