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
contract's epoch seconds) and when it reads a domain's XML again."""

import time

import pytest

from iosched.host_agent.drivers.libvirt import driver as lv


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
