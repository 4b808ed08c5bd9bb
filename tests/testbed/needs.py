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
"""What the real-guest tests need (libvirt, QEMU, the build tools, root),
and the rule that they fail, not skip, in CI when something is missing.
"""

import os
import shutil

from tests import fixtures

TOOLS = ('qemu-system-x86_64', 'virsh', 'gcc', 'apt-get', 'depmod',
         'modprobe')


def missing():
    """What this machine lacks to build and boot testbed guests."""
    why = []
    try:
        import libvirt  # noqa: F401
    except ImportError:
        why.append('python module libvirt (pip install libvirt-python)')
    why.extend(t for t in TOOLS if not shutil.which(t))
    if not os.path.exists('/bin/busybox'):
        why.append('/bin/busybox (busybox-static)')
    if os.geteuid() != 0:
        why.append('root')
    return why


def require_testbed():
    """Skip locally, fail under CI=true, when ``missing()`` names anything."""
    why = missing()
    fixtures.require('libvirt', not why, 'missing: ' + ', '.join(why))


def start_testbed(prefix):
    """``require_testbed()``, libvirtd up, and a Testbed for ``prefix``:
    ``(testbed, started)``, ``started`` True when this call started
    libvirtd (the caller stops it at the end).
    """
    from iosched.testbed import daemons
    from iosched.testbed import testbed as testbed_mod
    require_testbed()
    try:
        started = daemons.ensure_libvirtd()
    except RuntimeError as e:
        fixtures.require('libvirt', False, str(e))
    return testbed_mod.Testbed(prefix=prefix), started
