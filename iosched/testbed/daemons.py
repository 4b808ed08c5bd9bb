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
"""Start and stop libvirtd/virtlogd without systemd.

``ensure_libvirtd()`` starts the daemons only when ``virsh -c qemu:///system
list`` fails, and remembers what it started; ``stop_libvirtd()`` stops only
those, by their pidfiles (/run/libvirtd.pid, /run/virtlogd.pid).
"""

import os
import signal
import subprocess
import time

URI = 'qemu:///system'
DAEMONS = (('virtlogd', '/usr/sbin/virtlogd', '/run/virtlogd.pid'),
           ('libvirtd', '/usr/sbin/libvirtd', '/run/libvirtd.pid'))
_started = []                   # [(name, pid)] started by this process


def libvirtd_ready():
    """True when ``virsh -c qemu:///system list`` answers."""
    try:
        return subprocess.run(['virsh', '-c', URI, 'list'],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _pid(pidfile):
    try:
        with open(pidfile) as fh:
            pid = int(fh.read().strip())
        os.kill(pid, 0)
        return pid
    except (OSError, ValueError):
        return None


def ensure_libvirtd(timeout=30.0, fix_kvm_perms=True):
    """Start virtlogd and libvirtd if libvirtd does not answer; returns True
    when this call started something. Raises RuntimeError if not ready.
    With ``fix_kvm_perms`` (default) it also applies ``set_kvm_perms()``
    when ``kvm_caps_thrash()``: without it every define/start/undefine
    re-probes QEMU (4 s idle, ~1 min on a busy 2-core host).
    """
    if fix_kvm_perms and kvm_caps_thrash():
        set_kvm_perms()
    if libvirtd_ready():
        return False
    os.makedirs('/run/libvirt', exist_ok=True)
    started = False
    for name, binary, pidfile in DAEMONS:
        if _pid(pidfile) is not None:
            continue
        if not os.access(binary, os.X_OK):
            raise RuntimeError('%s missing (install libvirt-daemon-system)'
                               % binary)
        subprocess.run([binary, '-d'], check=True, timeout=30)
        deadline = time.monotonic() + 10
        while _pid(pidfile) is None and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = _pid(pidfile)
        if pid is None:
            raise RuntimeError('%s -d wrote no pidfile %s' % (binary, pidfile))
        _started.append((name, pid))
        started = True
    deadline = time.monotonic() + timeout
    while not libvirtd_ready():
        if time.monotonic() > deadline:
            raise RuntimeError('libvirtd not ready after %.0f s' % timeout)
        time.sleep(0.2)
    return started


def stop_libvirtd(timeout=15.0):
    """Stop the daemons ``ensure_libvirtd`` started in this process (and
    only those: each pidfile must still name the pid it started).
    """
    stopped = []
    for name, pid in reversed(list(_started)):
        pidfile = dict((n, p) for n, _, p in DAEMONS)[name]
        if _pid(pidfile) != pid:
            _started.remove((name, pid))
            continue
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except OSError:
                break
            time.sleep(0.05)
        _started.remove((name, pid))
        stopped.append(name)
    return stopped


def kvm_caps_thrash():
    """True when libvirt 9.0 re-probes QEMU (~4 s) on every domain start:
    /dev/kvm exists but the QEMU user's group (kvm) cannot open it, while
    libvirt's root-run capability probe could ("KVM was enabled when
    probing ..., but it is not available now"). TCG guests still work.
    """
    import grp
    try:
        st = os.stat('/dev/kvm')
        kvm_gid = grp.getgrnam('kvm').gr_gid
    except (OSError, KeyError):
        return False
    return not (st.st_gid == kvm_gid and st.st_mode & 0o060 == 0o060)


def set_kvm_perms():
    """Opt-in: give /dev/kvm Debian's udev default (root:kvm 0660), which
    this udev-less sandbox lacks, so the capability cache stays valid.
    Guests still run under TCG (``type='qemu'``).
    """
    import grp
    os.chown('/dev/kvm', 0, grp.getgrnam('kvm').gr_gid)
    os.chmod('/dev/kvm', 0o660)
