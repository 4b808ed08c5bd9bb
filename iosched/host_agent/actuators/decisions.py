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
"""The latest ``model.Decision`` of every knob: what explains its value.

Actuators note every action here, whatever came of it (written, already
set, failed, dry run). An action that repeats the held decision (same value,
rule, reason and outcome) is not a new decision: the held one, with its
``before`` and ``ts``, stays. The book is bounded: instances that are gone
are forgotten, and beyond ``maxlen`` knobs the least recently decided one
is dropped.
"""

import collections

from iosched.host_agent import model

MAXLEN = 10000
# ``before`` argument of ``note`` when the knob kept its value (a cached
# write): the held decision's ``before`` still explains it.
KEPT = object()


def policy_of(rule, default=''):
    """The policy whose rule it is: ``vslicer`` for ``vslicer.x``."""
    head, dot, _ = rule.partition('.')
    return head if dot and head else default


class DecisionBook(object):
    """Latest decision per knob key ``(kind, uuid, target)``."""

    def __init__(self, maxlen=MAXLEN):
        self.maxlen = maxlen
        self._latest = collections.OrderedDict()

    def note(self, action, policy, ts, before=KEPT, applied=True, error=''):
        """Record what came of ``action``; return (decision, is_new)."""
        held = self._latest.get(action.key)
        owner = policy_of(action.rule, policy)
        if held is not None and held.after == action.value and \
                held.rule == action.rule and held.reason == action.reason \
                and held.policy == owner and held.applied == applied \
                and held.error == error:
            # the same decision (``before`` aside: the held one still
            # explains it), checked without building it: most knobs keep
            # their decision from tick to tick
            return held, False
        if before is KEPT:
            before = held.before if held is not None else action.value
        decision = model.Decision(
            kind=action.kind, instance_uuid=action.instance_uuid,
            target=action.target, before=before, after=action.value,
            rule=action.rule, reason=action.reason, ts=ts,
            policy=owner, applied=applied, error=error)
        self._latest[action.key] = decision
        self._latest.move_to_end(action.key)
        while len(self._latest) > self.maxlen:
            self._latest.popitem(last=False)
        return decision, True

    def get(self, key):
        return self._latest.get(key)

    def forget(self, key):
        self._latest.pop(key, None)

    def forget_instances(self, uuids):
        gone = set(uuids)
        for key in [k for k in self._latest if k[1] in gone]:
            del self._latest[key]

    def latest(self):
        """key -> Decision, least recently decided first."""
        return dict(self._latest)

    def __len__(self):
        return len(self._latest)
