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
"""What the host looks like when a testbed trial does not finish: read-only.

``probe(pids, devices, domains)`` returns a JSON-able dict: every QEMU
thread's name, state and wait channel (``/proc/<pid>/task/*``), the
kernel stack of every task in D state (``/proc/*/stack``, root), the
dirty and writeback figures of ``/proc/meminfo``, each block device's
``stat`` and in-flight counts, the libvirt state of each domain and the
tail of each guest's console log (where the guest program's errors go:
a guest program that exited leaves its guest idle). The
VA bench (``bench/testbed_vaio.py --trial-timeout``) writes one per hang,
so a hang is diagnosed rather than only killed. Reads only; every read
that fails is recorded as its error.
"""

import glob
import os

PROC = '/proc'
SYS_BLOCK = '/sys/block'
MEMINFO_KEYS = ('Dirty', 'Writeback', 'WritebackTmp', 'NFS_Unstable',
                'MemFree', 'Cached')


def _read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return 'error: %s' % e


def _stat_state(text):
    """(comm, state) from a /proc/<pid>/stat line."""
    if text.startswith('error:') or ')' not in text:
        return None, None
    comm = text[text.index('(') + 1:text.rindex(')')]
    return comm, text[text.rindex(')') + 2:].split()[0]


def threads(pid, proc=PROC):
    """[{tid, name, state, wchan}] of one process's threads."""
    out = []
    for task in sorted(glob.glob(os.path.join(proc, str(pid), 'task', '*')),
                       key=lambda p: int(os.path.basename(p))):
        comm, state = _stat_state(_read(os.path.join(task, 'stat')))
        out.append({'tid': int(os.path.basename(task)), 'name': comm,
                    'state': state,
                    'wchan': _read(os.path.join(task, 'wchan')).strip()})
    return out


def d_state_stacks(proc=PROC):
    """[{pid, comm, stack}] of every task in uninterruptible sleep."""
    out = []
    for path in glob.glob(os.path.join(proc, '[0-9]*', 'task', '[0-9]*')):
        comm, state = _stat_state(_read(os.path.join(path, 'stat')))
        if state == 'D':
            out.append({'tid': int(os.path.basename(path)), 'comm': comm,
                        'stack': _read(os.path.join(path, 'stack'))
                        .strip().splitlines()})
    return sorted(out, key=lambda t: t['tid'])


def meminfo(proc=PROC):
    """The dirty / writeback lines of /proc/meminfo, kB."""
    out = {}
    for line in _read(os.path.join(proc, 'meminfo')).splitlines():
        key, _, rest = line.partition(':')
        if key in MEMINFO_KEYS:
            out[key + '_kb'] = int(rest.split()[0])
    return out


def device(name, sys_block=SYS_BLOCK):
    """A block device's stat fields and in-flight reads / writes."""
    base = os.path.join(sys_block, os.path.basename(name))
    return {'stat': _read(os.path.join(base, 'stat')).split(),
            'inflight': _read(os.path.join(base, 'inflight')).split(),
            'scheduler': _read(os.path.join(base, 'queue',
                                            'scheduler')).strip()}


def domain_states(domains):
    """name -> libvirt (state, reason) of each virDomain, or the error."""
    out = {}
    for name, dom in domains.items():
        try:
            out[name] = list(dom.state())
        except Exception as e:      # a hung domain: say so, go on
            out[name] = 'error: %s' % e
    return out


def console_tails(consoles, chars=2000):
    """name -> the last ``chars`` characters of its console log."""
    return {n: _read(p)[-chars:] for n, p in consoles.items()}


def probe(pids, devices=(), domains=None, consoles=None, proc=PROC,
          sys_block=SYS_BLOCK):
    """Everything above: ``pids`` {name: QEMU pid}, ``devices`` block
    device names, ``domains`` {name: virDomain}, ``consoles`` {name: path
    of its console log}.
    """
    return {'qemu_threads': {n: threads(p, proc) for n, p in pids.items()},
            'd_state': d_state_stacks(proc),
            'meminfo': meminfo(proc),
            'devices': {d: device(d, sys_block) for d in devices},
            'domains': domain_states(domains or {}),
            'consoles': console_tails(consoles or {})}
