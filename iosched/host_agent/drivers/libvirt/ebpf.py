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
"""The few eBPF pieces the tracer needs, over the raw syscalls (ctypes):
an instruction encoder, maps (hash, mmap-able array), program load, and a
program attached to a tracepoint through a perf event.

No bcc, no libbpf, no compiler: the programs are a few dozen instructions
written with the encoder (``bpf_tracer``), loaded as
``BPF_PROG_TYPE_TRACEPOINT`` (the context is the event's record, laid out
as ``events/<system>/<event>/format`` says). Linux >= 5.5 (mmap-able
arrays), root.
"""

import ctypes
import ctypes.util
import errno
import mmap
import os
import struct

_libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)
_libc.syscall.restype = ctypes.c_long

NR_BPF = 321                 # x86_64
NR_PERF_EVENT_OPEN = 298
MAP_CREATE, MAP_LOOKUP, MAP_UPDATE, MAP_DELETE, PROG_LOAD = 0, 1, 2, 3, 5
MAP_HASH, MAP_ARRAY = 1, 2
F_MMAPABLE = 1 << 10
PROG_TRACEPOINT = 5
PERF_TYPE_TRACEPOINT = 2
PERF_FLAG_FD_CLOEXEC = 8
PERF_EVENT_IOC_ENABLE = 0x2400
PERF_EVENT_IOC_SET_BPF = 0x40042408
FN_MAP_LOOKUP, FN_KTIME_GET_NS = 1, 5

# -- the instruction encoder (include/uapi/linux/bpf.h) ---------------------
LDX_W, LDX_DW, STX_W, STX_DW, ST_DW = 0x61, 0x79, 0x63, 0x7b, 0x7a
ALU_K = {'+': 0x07, '-': 0x17, '|': 0x47, '&': 0x57, '<<': 0x67, '>>': 0x77,
         '=': 0xb7}
ALU_X = {'+': 0x0f, '-': 0x1f, '|': 0x4f, '>>': 0x7f, '=': 0xbf}
JMP_K = {'==': 0x15, '!=': 0x55, '<': 0xa5, '<=': 0xb5, 's>=': 0x75}
CALL, EXIT, LD_IMM64, PSEUDO_MAP_FD = 0x85, 0x95, 0x18, 1


def insn(op, dst=0, src=0, off=0, imm=0):
    return struct.pack('<BBhi', op, (src << 4) | dst, off, imm)


def alu(dst, op, imm):          # dst <op>= imm (64-bit)
    return insn(ALU_K[op], dst, imm=imm)


def alu_reg(dst, op, src):      # dst <op>= src (64-bit)
    return insn(ALU_X[op], dst, src)


def load(dst, src, off, size=8):
    return insn(LDX_DW if size == 8 else LDX_W, dst, src, off)


def store(dst, off, src, size=8):
    return insn(STX_DW if size == 8 else STX_W, dst, src, off)


def store_imm(dst, off, imm):   # *(u64 *)(dst + off) = imm
    return insn(ST_DW, dst, off=off, imm=imm)


def jump(dst, op, imm, off):    # if dst <op> imm: skip ``off`` insns
    return insn(JMP_K[op], dst, off=off, imm=imm)


def call(fn):
    return insn(CALL, imm=fn)


def exit_():
    return insn(EXIT)


def load_map(dst, map_fd):      # two instructions
    return (insn(LD_IMM64, dst, PSEUDO_MAP_FD, imm=map_fd)
            + insn(0, imm=0))


# -- syscalls ---------------------------------------------------------------
class BpfError(OSError):
    pass


def _bpf(cmd, attr):
    buf = ctypes.create_string_buffer(bytes(attr), 128)
    fd = _libc.syscall(NR_BPF, cmd, buf, 128)
    if fd < 0:
        e = ctypes.get_errno()
        raise BpfError(e, 'bpf(%d): %s' % (cmd, os.strerror(e)))
    return fd


def map_create(kind, key_size, value_size, entries, flags=0):
    return _bpf(MAP_CREATE, struct.pack('<IIIII', kind, key_size,
                                        value_size, entries, flags))


def _elem(cmd, fd, key, value=None, flags=0):
    k = ctypes.create_string_buffer(key, len(key))
    v = (ctypes.create_string_buffer(value, len(value))
         if value is not None else None)
    attr = struct.pack('<IIQQQ', fd, 0, ctypes.addressof(k),
                       ctypes.addressof(v) if v is not None else 0, flags)
    return _bpf(cmd, attr)


def map_update(fd, key, value):
    _elem(MAP_UPDATE, fd, key, value)


def map_delete(fd, key):
    try:
        _elem(MAP_DELETE, fd, key)
    except BpfError as e:
        if e.errno != errno.ENOENT:
            raise


def map_mmap(fd, size):
    """The values of an mmap-able array (``F_MMAPABLE``), read/write."""
    return mmap.mmap(fd, size, mmap.MAP_SHARED,
                     mmap.PROT_READ | mmap.PROT_WRITE)


def prog_load(code, license=b'Dual BSD/GPL', log_size=65536):
    """Load a tracepoint program; the verifier's log in the error."""
    prog = ctypes.create_string_buffer(code, len(code))
    lic = ctypes.create_string_buffer(license)
    log = ctypes.create_string_buffer(log_size)
    attr = struct.pack('<IIQQIIQ', PROG_TRACEPOINT, len(code) // 8,
                       ctypes.addressof(prog), ctypes.addressof(lic), 1,
                       log_size, ctypes.addressof(log))
    try:
        return _bpf(PROG_LOAD, attr)
    except BpfError as e:
        raise BpfError(e.errno, '%s: %s' % (e.strerror, log.value.decode(
            'ascii', 'replace')[-2000:]))


def attach_tracepoint(prog_fd, tracepoint_id):
    """Run ``prog_fd`` at every hit of the tracepoint, on every CPU (the
    program hangs off the event, not the perf event's CPU); the returned
    perf event fd keeps it attached until closed.
    """
    attr = struct.pack('<IIQQQQQI', PERF_TYPE_TRACEPOINT, 112, tracepoint_id,
                       1, 0, 0, 0, 1).ljust(112, b'\0')
    buf = ctypes.create_string_buffer(attr, 112)
    fd = _libc.syscall(NR_PERF_EVENT_OPEN, buf, -1, 0, -1,
                       PERF_FLAG_FD_CLOEXEC)
    if fd < 0:
        e = ctypes.get_errno()
        raise BpfError(e, 'perf_event_open: %s' % os.strerror(e))
    try:
        for req, arg in ((PERF_EVENT_IOC_SET_BPF, prog_fd),
                         (PERF_EVENT_IOC_ENABLE, 0)):
            if _libc.ioctl(fd, ctypes.c_ulong(req), ctypes.c_int(arg)) < 0:
                e = ctypes.get_errno()
                raise BpfError(e, 'ioctl %#x: %s' % (req, os.strerror(e)))
    except BpfError:
        os.close(fd)
        raise
    return fd
