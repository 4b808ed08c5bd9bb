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
"""The agent's SCHED_DEADLINE watchdog: when and from where it runs.

``unstick(actuator)`` asks the actuator to free the guests' deadline
threads the kernel left throttled (``DriverActuator.unstick_deadline``:
``linux.deadline_watchdog`` finds them, ``actuators.deadline_unstick``
frees them); never raises. ``start(actuator, stop)`` runs it every
``INTERVAL_S`` in a daemon thread until the ``stop`` event: the control
loop cannot be the one to do it, since a tick may be the call that waits
on the QEMU a stuck thread froze (docs/reliability.md §4d). The agent also
calls ``unstick`` once at start, before the journal restore.
"""

import threading

from oslo_log import log as logging

LOG = logging.getLogger(__name__)
# A scan of the guests' threads in /proc takes ~4 ms on the testbed.
INTERVAL_S = 0.5


def unstick(actuator):
    """The threads set free ([] when the actuator has no watchdog)."""
    call = getattr(actuator, 'unstick_deadline', None)
    if call is None:
        return []
    try:
        return call()
    except Exception:  # a watchdog must not stop the loop
        LOG.exception('the SCHED_DEADLINE watchdog failed')
        return []


def start(actuator, stop):
    """The watchdog thread (None when the actuator has no watchdog)."""
    if getattr(actuator, 'unstick_deadline', None) is None:
        return None

    def watch():
        while not stop.wait(INTERVAL_S):
            unstick(actuator)

    thread = threading.Thread(target=watch, name='deadline-watchdog',
                              daemon=True)
    thread.start()
    return thread
