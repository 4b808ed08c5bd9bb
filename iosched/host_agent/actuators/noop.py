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
"""Dry run: log the plan, write nothing (``[host_agent] actuator = noop``).

Each action is still explained: its ``model.Decision`` has
``applied=False`` and no ``before`` (nothing was read).
"""

from oslo_log import log as logging

from iosched.host_agent.actuators import base
from iosched.host_agent.actuators import decisions as decisions_mod

LOG = logging.getLogger(__name__)


class NoopActuator(base.Actuator):
    name = 'noop'

    def __init__(self, knobs=None, journal=None):
        self.book = decisions_mod.DecisionBook()

    def apply(self, plan, ts):
        for action in plan.actions:
            _, new = self.book.note(action, plan.policy, ts, before=None,
                                    applied=False)
            if new:
                LOG.info('dry run: would set %(k)s %(u)s/%(t)s = %(v)s '
                         '(%(rule)s: %(reason)s)',
                         {'k': action.kind, 'u': action.instance_uuid,
                          't': action.target, 'v': action.value,
                          'rule': action.rule, 'reason': action.reason})
        return []

    def restore_all(self):
        return 0

    def forget_instances(self, uuids):
        self.book.forget_instances(uuids)

    def decisions(self):
        return self.book.latest()
