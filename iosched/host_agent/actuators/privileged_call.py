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
"""How the knob writers call a privileged entrypoint: through the privsep
daemon, started first if needed, with every failure (the daemon did not
start, died, or the call raised) as one ``LinuxKnobError`` naming the call.
"""

from iosched.host_agent import linux
from iosched.host_agent import paths
from iosched.host_agent import privsep


def call(name, func, *args):
    """``func(*args)`` in the daemon; LinuxKnobError when it failed."""
    try:
        privsep.ensure_started()
        return func(*args)
    except (linux.LinuxKnobError, paths.UnsafePath):
        raise
    except Exception as e:
        # The daemon did not start, died, or refused the call.
        raise linux.LinuxKnobError('privileged %s%r failed: %s: %s' % (
            name, args, type(e).__name__, e))
