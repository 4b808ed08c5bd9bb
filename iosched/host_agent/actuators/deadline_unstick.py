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
"""Free the guests' SCHED_DEADLINE threads the kernel left throttled.

``Unsticker(proc_root).unstick()`` finds them
(``iosched.host_agent.linux.deadline_watchdog``: throttled at the same
deadline for a second and more) and returns each to SCHED_OTHER through
privsep, the way a restore does (a zero-bandwidth reservation first, then
the fair class: ``sched_deadline.set_fair``). It writes nothing else and
records nothing in the journal: the thread goes to its original class,
which is what the journal would restore. A freed thread is not given a
reservation again (``refuse``): measured, the kernel keeps its stale
throttle (the same negative runtime and past deadline) and a new
reservation freezes it again at once, so it stays in the fair class until
its guest restarts (new threads). The host knob set of the libvirt driver
owns one (``HostKnobs.unstick_deadline``).
"""

from oslo_log import log as logging

from iosched.contract import knob_kinds
from iosched.host_agent.drivers import base
from iosched.host_agent.linux import deadline_watchdog
import iosched.host_agent.linux.privileged
from iosched.host_agent import privsep

LOG = logging.getLogger(__name__)


class Unsticker(object):

    def __init__(self, proc_root):
        self.watchdog = deadline_watchdog.Watchdog(proc_root)
        self._first = True
        self.freed = set()     # tids set free: no reservation again

    def refuse(self, linux_writer, kind, instance_uuid, target, value):
        """DriverError when ``value`` would reserve a thread set free."""
        if value is None or kind not in (knob_kinds.VCPU_DEADLINE,
                                         knob_kinds.IO_DEADLINE):
            return
        if kind == knob_kinds.VCPU_DEADLINE:
            tids = [linux_writer._tid(instance_uuid, target)]
        else:
            tids = [t for _, t in linux_writer._io_tids(instance_uuid)]
        bad = sorted(set(tids) & self.freed)
        if bad:
            raise base.DriverError(
                'no SCHED_DEADLINE reservation for thread(s) %s of %s: the '
                'kernel left them throttled once and keeps that state, so a '
                'new reservation would freeze them again (docs/reliability.md'
                ' 4d); they stay in SCHED_OTHER until the guest restarts'
                % (', '.join(map(str, bad)), instance_uuid))

    def unstick(self):
        """The ``deadline_watchdog.Throttled`` threads set free (a list).
        The first call, at agent start, waits a second when it finds a
        throttled thread (it has no earlier scan to compare with).
        """
        first, self._first = self._first, False
        freed = []
        for t in self.watchdog.check(wait=first):
            try:
                privsep.ensure_started()
                iosched.host_agent.linux.privileged.set_fair(t.tid)
            except Exception as e:  # the thread exited, privsep refused
                LOG.warning('cannot free the stuck SCHED_DEADLINE thread '
                            '%d (%s) of pid %d: %s', t.tid, t.comm, t.pid,
                            e)
                continue
            LOG.warning('SCHED_DEADLINE thread %d (%s) of guest pid %d '
                        'stayed throttled for more than %.0f s (runtime '
                        '%d ns, deadline %d): the kernel never replenished '
                        'it, so nothing ran it; returned it to SCHED_OTHER '
                        '(no reservation again until the guest restarts)',
                        t.tid, t.comm, t.pid,
                        deadline_watchdog.STUCK_AFTER_NS / 1e9,
                        t.runtime_ns, t.deadline_ns)
            freed.append(t)
            self.freed.add(t.tid)
        return freed
