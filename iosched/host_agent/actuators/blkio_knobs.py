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
"""Block I/O knobs of a real host: a VM's BFQ weight and a device's
I/O scheduler (the vaio policy's actuators).

=================  ===================  ===================================
kind               instance / target    value
=================  ===================  ===================================
vm_io_weight       VM / ''              int 100..1000: libvirt blkiotune
                                        ``weight`` (live). libvirt writes
                                        ``blkio.bfq.weight`` (cgroup v1) or
                                        ``io.bfq.weight`` (v2) when BFQ's
                                        files exist, else ``blkio.weight``
                                        / ``io.weight`` (measured on libvirt
                                        9.0, v1: docs/vaio.md)
block_scheduler    '' / device name     str, e.g. 'bfq': written to
                   ('loop3', 'sda')     ``<sys_root>/block/<dev>/queue/
                                        scheduler`` (needs root)
bfq_slice_idle     '' / device name     int, us: BFQ's ``queue/iosched/
                                        slice_idle_us`` (0 = no idling);
                                        only while the device runs bfq
=================  ===================  ===================================

Reads return the written shape, so the journal restores what it read.
"""

import os
import re

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import knob_set
from iosched.host_agent.actuators import libvirt_knobs
from iosched.host_agent.drivers import base
from iosched.host_agent import paths

# The libvirt module as the libvirt knobs import it (None without it).
libvirt = libvirt_knobs.libvirt

KINDS = (knob_kinds.VM_IO_WEIGHT, knob_kinds.BLOCK_SCHEDULER,
         knob_kinds.BFQ_SLICE_IDLE)
SLICE_IDLE_MAX_US = 1000000
WEIGHT_RANGE = (100, 1000)
DEV_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.!-]{0,63}$')


def parse_scheduler(text):
    """('bfq', ('none', 'mq-deadline', 'bfq')) from sysfs's
    '[bfq] none mq-deadline' line ('' when none is bracketed).
    """
    names, current = [], ''
    for word in text.split():
        if word.startswith('[') and word.endswith(']'):
            word = word[1:-1]
            current = word
        names.append(word)
    return current, tuple(names)


def scheduler_path(sys_root, dev):
    if not DEV_RE.match(dev or ''):
        raise base.DriverError('block device name %r: want a kernel name '
                               'like sda or loop3' % (dev,))
    return paths.safe_join(sys_root, 'block', dev, 'queue', 'scheduler')


def slice_idle_path(sys_root, dev):
    scheduler_path(sys_root, dev)            # checks the name
    return paths.safe_join(sys_root, 'block', dev, 'queue', 'iosched',
                           'slice_idle_us')


class BlkioKnobs(knob_set.KnobWriter):
    """read/write of the kinds above; ``driver.domain(uuid)`` resolves
    VMs (the libvirt driver).
    """

    def __init__(self, driver, sys_root='/sys'):
        self.driver = driver
        self.sys_root = sys_root

    def knobs(self):
        return KINDS

    def read_knob(self, kind, uuid, target):
        if kind == knob_kinds.VM_IO_WEIGHT:
            self._vm_target(target)
            dom = self.driver.domain(uuid)
            try:
                got = dom.blkioParameters(libvirt.VIR_DOMAIN_AFFECT_LIVE)
            except libvirt.libvirtError as e:
                raise base.DriverError('cannot read the blkio weight of %s: '
                                       '%s' % (uuid, e))
            if 'weight' not in got:
                raise base.DriverError('libvirt reports no blkio weight for '
                                       '%s (no blkio/io controller?)' % uuid)
            return int(got['weight'])
        if kind == knob_kinds.BLOCK_SCHEDULER:
            path = scheduler_path(self.sys_root, target)
            try:
                with open(path) as fh:
                    return parse_scheduler(fh.read())[0]
            except OSError as e:
                raise base.DriverError('cannot read %s: %s' % (path, e))
        if kind == knob_kinds.BFQ_SLICE_IDLE:
            path = slice_idle_path(self.sys_root, target)
            try:
                with open(path) as fh:
                    return int(fh.read().strip())
            except (OSError, ValueError) as e:
                raise base.DriverError('cannot read %s (is %s on bfq?): %s'
                                       % (path, target, e))
        raise base.DriverError('unknown knob %r; accepted: %s'
                               % (kind, ', '.join(KINDS)))

    def write_knob(self, kind, uuid, target, value):
        if kind == knob_kinds.VM_IO_WEIGHT:
            self._vm_target(target)
            lo, hi = WEIGHT_RANGE
            if (isinstance(value, bool) or not isinstance(value, int)
                    or not lo <= value <= hi):
                raise base.DriverError('blkio weight %r of %s: want an int '
                                       '%d..%d' % (value, uuid, lo, hi))
            dom = self.driver.domain(uuid)
            try:
                dom.setBlkioParameters({'weight': value},
                                       libvirt.VIR_DOMAIN_AFFECT_LIVE)
            except libvirt.libvirtError as e:
                raise base.DriverError('cannot set the blkio weight of %s '
                                       'to %d: %s' % (uuid, value, e))
            return
        if kind == knob_kinds.BLOCK_SCHEDULER:
            path = scheduler_path(self.sys_root, target)
            if not isinstance(value, str) or not DEV_RE.match(value):
                raise base.DriverError('scheduler %r for %s: want a name '
                                       'like bfq' % (value, target))
            try:
                with open(path) as fh:
                    offered = parse_scheduler(fh.read())[1]
                if value not in offered:
                    raise base.DriverError(
                        'scheduler %r is not offered for %s; offered: %s'
                        % (value, target, ', '.join(offered)))
                with open(path, 'w') as fh:
                    fh.write(value)
            except OSError as e:
                raise base.DriverError('cannot set %s to %s: %s%s' % (
                    path, value, e, ' (needs root)'
                    if not os.access(path, os.W_OK) else ''))
            return
        if kind == knob_kinds.BFQ_SLICE_IDLE:
            path = slice_idle_path(self.sys_root, target)
            if (isinstance(value, bool) or not isinstance(value, int)
                    or not 0 <= value <= SLICE_IDLE_MAX_US):
                raise base.DriverError('slice_idle_us %r for %s: want an '
                                       'int 0..%d' % (value, target,
                                                      SLICE_IDLE_MAX_US))
            try:
                with open(path, 'w') as fh:
                    fh.write(str(value))
            except OSError as e:
                raise base.DriverError('cannot set %s to %d (is %s on '
                                       'bfq?): %s' % (path, value, target,
                                                      e))
            return
        raise base.DriverError('unknown knob %r; accepted: %s'
                               % (kind, ', '.join(KINDS)))

    @staticmethod
    def _vm_target(target):
        if target != '':
            raise base.DriverError('target %r: vm_io_weight is of the whole '
                                   "VM, its target is ''" % (target,))
