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
"""One block request as the VMM sees it.

``vm`` is the VM's name or None for host (background) I/O; ``proc`` is
the "process" a CFQ-like elevator sees (the VM, or 'backup' / 'hostmeta'
for host jobs). ``ops`` counts the guest's 16 KiB operations merged in;
``waiters`` are the guest threads it wakes. Times in ms.
"""


class Req:
    __slots__ = ('vm', 'proc', 'lba', 'nsect', 'write', 'ops', 'waiters',
                 't_guest', 't_arrive', 'deadline', 'bg', 'done', 'kind',
                 'seq', 'merged')

    def __init__(self, vm, lba, nsect, write, kind='data', bg=False,
                 proc=None, done=None):
        self.vm = vm
        self.proc = proc if proc is not None else vm
        self.lba = lba
        self.nsect = nsect
        self.write = write
        self.kind = kind
        self.bg = bg
        self.done = done
        self.ops = 0
        self.waiters = []
        self.t_guest = 0.0
        self.t_arrive = 0.0
        self.deadline = 0.0
        self.seq = 0
        self.merged = None         # requests dom0's block layer merged in

    @property
    def end(self):
        return self.lba + self.nsect

    def __repr__(self):
        return 'Req(%s %d+%d %s)' % (self.vm or self.proc, self.lba,
                                     self.nsect, 'W' if self.write else 'R')
