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
"""Two policies' actions on one live iotune: the tighter cap wins.

The SLO policy and I-Balancer both cap disks with live iotune. When both
act on the same disk in one tick, the agent keeps one action: the cap
with fewer 16 KiB operations per second (total_iops_sec x size_iops_sec /
16 KiB), whose rule it keeps; its reason names both policies' rules and
reasons, so the explanation says why the other cap did not apply. A cap
beats a release (``knob_kinds.ORIGINAL``): one policy letting go must not undo
the other's cap. Other kinds: the later action wins (the agent's order).
"""

import collections

from iosched.contract import knob_kinds
from iosched.contract import slo
from iosched.host_agent import model

INF = float('inf')


def ref_ops(value):
    """A live iotune dict's total_iops_sec in 16 KiB operations (inf when
    it sets none).
    """
    try:
        iops = int(value.get('total_iops_sec') or 0)
        size = int(value.get('size_iops_sec') or 0) or slo.DEFAULT_REF_IO_BYTES
    except (AttributeError, TypeError, ValueError):
        return INF
    if iops <= 0:
        return INF
    return iops * max(size, 1) / float(slo.DEFAULT_REF_IO_BYTES)


def combine(earlier, later):
    """The action the agent applies when ``earlier`` and ``later`` act on
    the same knob (same key).
    """
    if later.kind != knob_kinds.DISK_IOTUNE or earlier.rule == later.rule:
        return later
    a_orig = earlier.value == knob_kinds.ORIGINAL
    b_orig = later.value == knob_kinds.ORIGINAL
    if a_orig and b_orig:
        return later
    if a_orig or b_orig:
        win, lose = (later, earlier) if a_orig else (earlier, later)
        why = 'releases it'
    else:
        a, b = ref_ops(earlier.value), ref_ops(later.value)
        win, lose = (earlier, later) if a <= b else (later, earlier)
        why = 'caps at %s' % _fmt(ref_ops(lose.value))
    # The composition first: a report keeps only a reason's head.
    return model.Action(
        kind=win.kind, instance_uuid=win.instance_uuid, target=win.target,
        value=win.value, rule=win.rule,
        reason='[tighter of two: %s caps at %s; %s %s] %s || %s: %s' % (
            win.rule, _fmt(ref_ops(win.value)), lose.rule, why, win.reason,
            lose.rule, lose.reason))


def _fmt(x):
    return 'no limit' if x == INF else '%.0f ops/s (16 KiB)' % x


def merge_plans(plans):
    """Later policies override earlier actions on the same knob, but
    of two iotune caps the tighter wins (``combine``).
    """
    by_key = collections.OrderedDict()
    notes = []
    facts = {}
    for plan in plans:
        for action in plan.actions:
            key = action.key
            prev = by_key.get(key)
            # Two caps on one iotune (slo, ibalancer): the tighter wins.
            by_key[key] = (action if prev is None
                           or action.kind != knob_kinds.DISK_IOTUNE
                           else combine(prev, action))
        notes.extend(plan.notes)
        facts.update(plan.facts)
    return model.Plan(policy='+'.join(p.policy for p in plans),
                      actions=tuple(by_key.values()), notes=tuple(notes),
                      facts=facts)
