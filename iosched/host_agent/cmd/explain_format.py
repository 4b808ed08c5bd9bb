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
"""Text and JSON-ready forms of what ``iosched-explain`` explains.

A journal knob (``journal.HeldKnob``) and a report decision
(``payload_sections.DecisionEntry``) become plain dicts (JSON-ready: lists,
not tuples); ``render`` prints them for operators, one block per knob, then
what each rule named means.
"""

import json
import textwrap
import time

from iosched.host_agent import model

# Timestamps at or above this are seconds since the epoch; below, the
# agent's clock (the libvirt driver's is monotonic, seconds since boot).
EPOCH_MIN = 1e9


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def when(ts, wall=None):
    """A human form of a time: UTC wall clock if known, else agent clock."""
    t = wall if wall is not None else ts
    if t is not None and t >= EPOCH_MIN:
        try:
            return time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(t))
        except (OverflowError, OSError, ValueError):
            # a wall clock past what gmtime takes (a damaged journal):
            # shown as a number, never a crash of explain
            return 'wall=%r (not a date)' % (t,)
    return 't=%.3f s on the agent clock' % (ts or 0.0)


def from_held(h):
    """A journal.HeldKnob as a dict."""
    return {'instance_uuid': h.instance_uuid, 'kind': h.kind,
            'target': h.target, 'original': _plain(h.original),
            'current': _plain(h.current), 'rule': h.rule,
            'reason': h.reason, 'ts': h.ts, 'first_ts': h.first_ts,
            'wall': h.wall, 'changes': h.changes,
            'when': when(h.ts, h.wall)}


def from_entry(d):
    """A payload_sections.DecisionEntry as a dict."""
    status = (model.DECISION_FAILED if d.error else
              model.DECISION_APPLIED if d.applied else model.DECISION_DRY_RUN)
    return {'instance_uuid': d.instance_uuid, 'kind': d.kind,
            'target': d.target, 'before': _plain(d.before),
            'after': _plain(d.after), 'rule': d.rule, 'reason': d.reason,
            'ts': d.ts, 'applied': d.applied, 'error': d.error,
            'status': status, 'when': when(d.ts)}


def sort_key(item):
    target = item['target']
    return (item['instance_uuid'], item['kind'],
            (0, int(target), '') if target.isdigit() else (1, 0, target))


def target_label(kind, target):
    if target == '':
        return 'whole instance'
    if kind.startswith('vcpu_'):
        return 'vCPU %s' % target
    if kind.startswith('disk_'):
        return 'disk %s' % target
    return target


def _value(v):
    return json.dumps(v, sort_keys=True)


def _values(item):
    if 'original' in item:
        return '%s -> %s  (original -> set by the agent; %d change%s)' % (
            _value(item['original']), _value(item['current']),
            item['changes'], '' if item['changes'] == 1 else 's')
    status = {model.DECISION_APPLIED: 'applied',
              model.DECISION_DRY_RUN: 'dry run, not written',
              model.DECISION_FAILED: 'NOT applied: %s' % item['error'],
              }[item['status']]
    if (item['status'] == model.DECISION_APPLIED and
            item['before'] == item['after']):
        status = 'already set, nothing written'
    return '%s -> %s  (before -> chosen; %s)' % (
        _value(item['before']), _value(item['after']), status)


def _field(name, text, indent=11, width=79):
    lines = textwrap.wrap(text, width - indent) or ['']
    pad = ' ' * indent
    return '  %-*s%s\n' % (indent - 2, name + ':', lines[0]) + ''.join(
        pad + line + '\n' for line in lines[1:])


def render(heading, items, args, describe):
    """The text report: heading, a block per knob, the rules legend."""
    parts = [heading + '\n']
    if not items:
        filters = ' '.join(['--instance %s' % u for u in args.instance] +
                           ['--kind %s' % k for k in args.kind])
        parts.append('nothing to explain%s\n' % (
            ' matching ' + filters if filters else ''))
        return ''.join(parts)
    for item in items:
        parts.append('\ninstance %s  %s  %s\n' % (
            item['instance_uuid'], item['kind'],
            target_label(item['kind'], item['target'])))
        parts.append(_field('value', _values(item)))
        parts.append(_field('rule', item['rule']))
        parts.append(_field('reason', item['reason'] or '(none recorded)'))
        parts.append(_field('when', item['when']))
    parts.append('\nrules:\n')
    parts.append(rules_table({r: describe(r) for r in
                              {i['rule'] for i in items}}))
    return ''.join(parts)


def rules_table(descriptions):
    """``rule  description`` lines, wrapped under the description column;
    a rule without a description is printed alone.
    """
    out = []
    for rule, text in sorted(descriptions.items()):
        if not text:
            out.append('  %s\n' % rule)
            continue
        lines = textwrap.wrap(text, 79 - 6)
        out.append('  %s\n' % rule + ''.join(
            '      %s\n' % line for line in lines))
    return ''.join(out)
