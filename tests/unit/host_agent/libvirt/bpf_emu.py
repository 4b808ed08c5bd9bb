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
"""A test's kernel for ``bpf_tracer``'s programs: an interpreter of the
eBPF instructions they use, with a hash map (tid -> slot) and the slots'
array as a bytearray (what the tracer reads through mmap), so the
bytecode itself is checked without root or a kernel.
"""

import struct

from iosched.host_agent.drivers.libvirt import bpf_tracer
from iosched.host_agent.drivers.libvirt import ebpf as B

TIDS_FD, STATE_FD = 3, 4
M64 = (1 << 64) - 1


class Kernel(object):
    def __init__(self, slots=8):
        self.tids = {}                      # key bytes -> value bytes
        self.state = bytearray(bpf_tracer.SLOT_BYTES * slots)
        self.now = 0
        self.wakeup = bpf_tracer.wakeup_program(24, TIDS_FD, STATE_FD)
        self.switch = bpf_tracer.switch_program(56, TIDS_FD, STATE_FD)

    # the tracer's map syscalls, for monkeypatching ebpf
    def map_update(self, fd, key, value):
        assert fd == TIDS_FD
        self.tids[bytes(key)] = bytes(value)

    def map_delete(self, fd, key):
        self.tids.pop(bytes(key), None)

    def wake(self, tid, t):
        self.now = t
        self.run(self.wakeup, struct.pack('<24xi12x', tid))

    def switch_in(self, tid, t):
        self.now = t
        self.run(self.switch, struct.pack('<56xi4x', tid))

    # -- the interpreter ------------------------------------------------
    def _mem(self, ptr):
        region, off = ptr
        return {'ctx': self._ctx, 'stack': self._stack,
                'state': self.state}[region], off

    def _load(self, ptr, size):
        buf, off = self._mem(ptr)
        return int.from_bytes(buf[off:off + size], 'little')

    def _store(self, ptr, size, value):
        buf, off = self._mem(ptr)
        assert region_ok(ptr, size, len(buf))
        buf[off:off + size] = (value & ((1 << (8 * size)) - 1)).to_bytes(
            size, 'little')

    def run(self, code, ctx):
        self._ctx, self._stack = bytearray(ctx), bytearray(512)
        r = [0] * 11
        r[1], r[10] = ('ctx', 0), ('stack', 512)
        pc, steps = 0, 0
        insns = [struct.unpack_from('<BBhi', code, i)
                 for i in range(0, len(code), 8)]
        while True:
            steps += 1
            assert steps < 10000
            op, regs, off, imm = insns[pc]
            dst, src = regs & 0xf, regs >> 4
            pc += 1
            if op == B.LD_IMM64:
                r[dst] = ('map', imm)
                pc += 1
            elif op == B.EXIT:
                return r[0]
            elif op == B.CALL:
                r[0] = self._call(imm, r)
                r[1:6] = [None] * 5
            elif op in (B.LDX_W, B.LDX_DW):
                r[dst] = self._load(add(r[src], off), 4 if op == B.LDX_W
                                    else 8)
            elif op in (B.STX_W, B.STX_DW):
                self._store(add(r[dst], off), 4 if op == B.STX_W else 8,
                            r[src])
            elif op == B.ST_DW:
                self._store(add(r[dst], off), 8, imm)
            elif op in B.JMP_K.values():
                name = {v: k for k, v in B.JMP_K.items()}[op]
                if jump(name, r[dst], imm):
                    pc += off
            else:
                r[dst] = self._alu(op, r[dst], r[src], imm)

    def _call(self, fn, r):
        if fn == B.FN_KTIME_GET_NS:
            return self.now
        assert fn == B.FN_MAP_LOOKUP
        key = bytes(self._mem(r[2])[0][r[2][1]:r[2][1] + 4])
        if r[1] == ('map', TIDS_FD):
            if key not in self.tids:
                return 0
            self._stack[508:512] = self.tids[key]   # a value to point at
            return ('stack', 508)
        assert r[1] == ('map', STATE_FD)
        slot = struct.unpack('<I', key)[0]
        if (slot + 1) * bpf_tracer.SLOT_BYTES > len(self.state):
            return 0
        return ('state', slot * bpf_tracer.SLOT_BYTES)

    @staticmethod
    def _alu(op, a, b, imm):
        names = {v: k for k, v in B.ALU_K.items()}
        src = imm & M64
        if op not in names:
            names = {v: k for k, v in B.ALU_X.items()}
            src = b
        name = names[op]
        if name == '=':
            return src
        if name in ('+', '-') and isinstance(a, tuple):
            return add(a, src if name == '+' else -src)
        return {'+': lambda: a + src, '-': lambda: a - src,
                '|': lambda: a | src, '&': lambda: a & src,
                '<<': lambda: a << (src & 63),
                '>>': lambda: a >> (src & 63)}[name]() & M64


def add(ptr, n):
    if n >= 1 << 63:
        n -= 1 << 64
    return (ptr[0], ptr[1] + n)


def region_ok(ptr, size, length):
    return 0 <= ptr[1] and ptr[1] + size <= length


def jump(name, a, imm):
    if isinstance(a, tuple):        # a pointer: never 0
        return name == '!='
    k = imm & M64
    signed = a - (1 << 64) if a >= 1 << 63 else a
    return {'==': a == k, '!=': a != k, '<': a < k, '<=': a <= k,
            's>=': signed >= imm}[name]
