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
"""What the agent holds on a domain, written into the domain itself.

libvirt's live settings (vcpupin, emulatorpin, schedinfo, iotune,
interface bandwidth) are part of the domain's live XML, and a live
migration carries the live XML to the destination: the knobs a source
agent changed arrive there, and the destination's journal knows nothing
of them. So beside its journal the agent keeps, in the domain's live
``<metadata>`` (namespace ``HELD_NS``), the originals of the libvirt knobs
it holds on that domain and the host that changed them::

    <held host="compute-1">
      <knob kind="vcpu_pin" target="0">[0, 1]</knob>
    </held>

An agent that sees a domain for the first time puts back every original
recorded there that its own journal does not hold (``DriverActuator.
adopt``): a domain migrated in, or whose agent lost its journal, is not
left pinned or throttled by a decision nobody here can explain.

Pure text <-> dict here; ``LibvirtKnobs`` reads and writes the element.
"""

import json
from xml.etree import ElementTree

HELD_NS = 'http://openstack.org/xmlns/iosched/held/1'
HELD_KEY = 'iosched'


class MarkerError(ValueError):
    """A metadata element that is not what this module writes."""


def to_xml(host, held):
    """``held``: {(kind, target): original} -> the element's text."""
    root = ElementTree.Element('held', host=str(host))
    for (kind, target), original in sorted(held.items()):
        knob = ElementTree.SubElement(root, 'knob', kind=str(kind),
                                      target=str(target))
        knob.text = json.dumps(list(original) if isinstance(original, tuple)
                               else original, sort_keys=True)
    return ElementTree.tostring(root, encoding='unicode')


def from_xml(text):
    """The element's text -> (host, {(kind, target): original as JSON
    gives it}); MarkerError when it is not a marker.
    """
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as e:
        raise MarkerError('not XML: %s' % e)
    if root.tag.rsplit('}', 1)[-1] != 'held' or not root.get('host'):
        raise MarkerError('expected <held host="...">, got <%s>' % root.tag)
    held = {}
    for knob in root:
        kind, target = knob.get('kind'), knob.get('target')
        if knob.tag.rsplit('}', 1)[-1] != 'knob' or not kind or (
                target is None):
            raise MarkerError('expected <knob kind=".." target="..">')
        try:
            held[(kind, target)] = json.loads(knob.text or 'null')
        except ValueError as e:
            raise MarkerError('knob %s/%s: not JSON: %s' % (kind, target, e))
    return root.get('host'), held
