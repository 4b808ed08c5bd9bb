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
"""Linux kernel knobs and counters: scheduler attributes and cgroups.

* ``sched``: ``sched_setattr``/``sched_getattr`` (EEVDF custom slices) and
  the per-thread procfs counters;
* ``cgroups``: probing v1/v2, libvirt's per-domain and per-vCPU cgroups,
  CPU weight and CPU bandwidth (cap), read side and write plans;
* ``privileged``: the only functions that change anything, run in the
  oslo.privsep daemon of ``iosched.host_agent.privsep``.

Every reader takes its root (``proc_root``, ``cgroup_root``) as an
argument, from ``[host_paths]``.
"""

import errno
import os


def read_available(fd, size=1 << 16):
    """Everything a non-blocking ``fd`` holds now, as bytes (b'' if none)."""
    chunks = []
    while True:
        try:
            data = os.read(fd, size)
        except BlockingIOError:
            break
        except OSError as e:
            if e.errno == errno.EAGAIN:
                break
            raise
        if not data:
            break
        chunks.append(data)
    return b''.join(chunks)


def pid_alive(pid):
    """Whether process ``pid`` exists (another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class LinuxKnobError(Exception):
    """A kernel interface refused or lacked something; the message says
    which thread or file, which value, and why.

    ``errno`` is the OS error number when there was one. The arguments are
    plain (message, errno) so the exception survives the privsep channel,
    which rebuilds exceptions as ``cls(*args)``.
    """

    def __init__(self, message, errno=None):
        super().__init__(message, errno)
        self.message = message
        self.errno = errno

    def __str__(self):
        return self.message
