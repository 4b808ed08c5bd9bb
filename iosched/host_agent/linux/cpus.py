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
"""CPU lists of sysfs and cgroups ("0-3,6"), and the host's online CPUs.

Read only; every path below the configurable ``sys_root``.
"""

import os
import re

from iosched.host_agent import linux
from iosched.host_agent import paths


# sysfs/cgroup CPU lists: "0-3,6\n", "" when empty.
def parse_cpu_list(text):
    """'0-3,6' -> (0, 1, 2, 3, 6); '' -> ()."""
    cpus = set()
    text = text.strip()
    if not text:
        return ()
    for part in text.split(','):
        m = re.fullmatch(r'\s*(\d+)\s*(?:-\s*(\d+)\s*)?', part)
        if m is None:
            raise ValueError('CPU list %r: %r is not N or N-M' % (text, part))
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError('CPU list %r: range %r is reversed'
                             % (text, part))
        cpus.update(range(lo, hi + 1))
    return tuple(sorted(cpus))


def online_cpus(sys_root='/sys'):
    """The online CPUs, from <sys_root>/devices/system/cpu/online."""
    path = paths.safe_join(sys_root, 'devices', 'system', 'cpu', 'online')
    try:
        with open(path) as fh:
            return parse_cpu_list(fh.read())
    except (OSError, ValueError) as e:
        raise linux.LinuxKnobError('cannot read the online CPUs from %s: %s'
                                   % (path, e), getattr(e, 'errno', None))


def check_cpus(cpus, sys_root='/sys'):
    """``cpus`` as a sorted tuple if it is a non-empty set of online CPU
    ids, else LinuxKnobError saying what is accepted.
    """
    online = online_cpus(sys_root)
    if (not isinstance(cpus, (list, tuple)) or not cpus
            or any(isinstance(c, bool) or not isinstance(c, int)
                   for c in cpus)
            or not set(cpus) <= set(online)):
        raise linux.LinuxKnobError(
            'CPUs %r: accepted a non-empty list of online CPU ids %s'
            % (cpus, list(online)))
    return tuple(sorted(set(cpus)))


def set_affinity(tid, cpus, sys_root='/sys'):
    """sched_setaffinity(tid, cpus) after ``check_cpus``."""
    cpus = check_cpus(cpus, sys_root)
    try:
        os.sched_setaffinity(tid, cpus)
    except OSError as e:
        raise linux.LinuxKnobError('cannot set the CPU affinity of tid %s to '
                                   '%s: %s' % (tid, list(cpus), e.strerror),
                                   e.errno)
