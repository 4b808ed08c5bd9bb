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
"""Reading the change journal: one validating loader for the agent and
``iosched-explain``.

``replay(path)`` reads the file line by line and checks each entry (the
format is in ``journal``'s docstring); a line that is not an entry (a
write torn by a crash, a damaged sector, invalid UTF-8, JSON of the wrong
shape, an unknown op or knob kind) is skipped with a problem naming the
line, and every valid entry is kept: one bad line never hides the knobs
recorded around it. Two folds of the entries:

* ``originals(entries)``: what the agent restores, key -> the value the
  knob had before the agent first changed it (a ``rebase`` replaces it);
* ``held(entries)``: the same knobs with their current value and the rule
  and reason of their last change (``iosched-explain``).

``read_held(path)`` is the explain CLI's entry: it raises ``JournalError``
when no line at all is an entry (not the agent's journal).
"""

import dataclasses
import json
import math

from iosched.contract import knob_kinds

OPS = ('change', 'forget', 'clear', 'rebase')
_KEY_FIELDS = ('kind', 'uuid', 'target')


class JournalError(ValueError):
    """A file that is not a journal, or an entry of the wrong shape."""

    def __init__(self, path, lineno, problem):
        self.path = path
        self.lineno = lineno
        self.problem = problem
        super().__init__('%s line %d: %s' % (path, lineno, problem))


@dataclasses.dataclass(frozen=True)
class HeldKnob:
    """A knob the agent changed and has not restored, from the journal."""
    kind: str
    instance_uuid: str
    target: str
    original: object     # before the agent first touched it
    current: object      # the agent's last write
    rule: str            # of the last write
    reason: str          # of the last write ('' in old journals)
    ts: float            # of the last write (driver clock)
    first_ts: float      # of the first write
    changes: int         # writes since the original
    wall: object = None  # of the last write, epoch seconds (None: old)


@dataclasses.dataclass(frozen=True)
class Replay:
    """What ``replay`` read: the valid entries, in order, and one text per
    line skipped.
    """
    entries: tuple       # of dicts, checked
    problems: tuple      # of str, 'PATH line N: ...'
    lines: int           # non-blank lines read


def from_json(kind, value):
    """A journaled value in the form the knob writers take: pins travel
    as lists in JSON, drivers take tuples; deadline reservations and
    iotune dicts stay dicts.
    """
    if kind in knob_kinds.PIN_KINDS and isinstance(value, list):
        return tuple(value)
    return value


def _is_value(value, depth=0):
    # A knob value as JSON carries it, finite, not absurdly nested.
    if depth > 4:
        return False
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_value(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_value(v, depth + 1)
                   for k, v in value.items())
    return False


def check(entry):
    """None if ``entry`` is a journal entry, else what is wrong with it."""
    if not isinstance(entry, dict):
        return 'expected a JSON object, got %s' % _short(entry)
    op = entry.get('op')
    if op not in OPS:
        return "field 'op': got %s, accepted: %s" % (_short(op),
                                                     ' | '.join(OPS))
    if op == 'clear':
        return None
    for name in _KEY_FIELDS:
        if not isinstance(entry.get(name), str):
            return "field '%s': expected a string, got %s" % (
                name, _short(entry.get(name)))
    if entry['kind'] not in knob_kinds.KINDS:
        return "field 'kind': got %s, accepted: %s" % (
            _short(entry['kind']), ', '.join(knob_kinds.KINDS))
    needed = {'change': ('before', 'after'), 'rebase': ('before',),
              'forget': ()}[op]
    for name in needed:
        if name not in entry:
            return "field '%s': missing" % name
        if not _is_value(entry[name]):
            return "field '%s': not a knob value: %s" % (
                name, _short(entry[name]))
    for name in ('ts', 'wall'):
        value = entry.get(name, 0.0)
        if value is None and name == 'wall':
            continue
        if (not isinstance(value, (int, float)) or isinstance(value, bool)
                or not math.isfinite(value)):
            return "field '%s': expected a finite number, got %s" % (
                name, _short(value))
    for name in ('rule', 'reason'):
        if not isinstance(entry.get(name, ''), str):
            return "field '%s': expected a string, got %s" % (
                name, _short(entry.get(name)))
    return None


def _short(value, limit=60):
    text = repr(value)
    if len(text) > limit:
        return '%s... (%d characters)' % (text[:limit], len(text))
    return text


def parse(raw):
    """One line (bytes) -> (entry or None, problem or None)."""
    try:
        text = raw.decode('utf-8')
    except UnicodeDecodeError as e:
        return None, 'not UTF-8 text (%s)' % e.reason
    try:
        entry = json.loads(text)
    except RecursionError:
        return None, 'JSON nested too deeply'
    except ValueError:
        return None, 'not JSON (a write torn by a crash?)'
    problem = check(entry)
    return (None, problem) if problem else (entry, None)


def replay(path):
    """Read ``path`` (raises OSError when it cannot be read): ``Replay``."""
    entries, problems = [], []
    lines = 0
    with open(path, 'rb') as fh:
        for lineno, raw in enumerate(fh, 1):
            raw = raw.strip()
            if not raw:
                continue
            lines += 1
            entry, problem = parse(raw)
            if problem:
                problems.append('%s line %d: %s' % (path, lineno, problem))
            else:
                entries.append(entry)
    return Replay(tuple(entries), tuple(problems), lines)


def _key(entry):
    return (entry['kind'], entry['uuid'], entry['target'])


def originals(entries):
    """key -> original value of every knob the entries leave changed (in
    the order of their first change), as ``held`` folds them.
    """
    return {(h.kind, h.instance_uuid, h.target): h.original
            for h in held(entries)}


def held(entries):
    """The ``HeldKnob`` of every knob the entries leave changed."""
    out = {}
    for entry in entries:
        op = entry['op']
        if op == 'clear':
            out.clear()
            continue
        key = _key(entry)
        prev = out.get(key)
        if op == 'forget':
            out.pop(key, None)
            continue
        kind = entry['kind']
        if op == 'rebase':
            if prev is not None:
                out[key] = dataclasses.replace(
                    prev, original=from_json(kind, entry['before']))
            continue
        ts = float(entry.get('ts', 0.0))
        out[key] = HeldKnob(
            kind=kind, instance_uuid=entry['uuid'], target=entry['target'],
            original=(prev.original if prev else
                      from_json(kind, entry['before'])),
            current=from_json(kind, entry['after']),
            rule=entry.get('rule', ''), reason=entry.get('reason', ''),
            ts=ts, first_ts=prev.first_ts if prev else ts,
            changes=(prev.changes if prev else 0) + 1,
            wall=entry.get('wall'))
    return list(out.values())


def read_held(path):
    """Replay ``path`` read-only: (list of HeldKnob, list of warnings).

    Raises OSError when the file cannot be read and ``JournalError`` when
    no line is an entry (not the agent's journal); a line that is not an
    entry is skipped with a warning, as the agent skips it.
    """
    got = replay(path)
    if got.lines and not got.entries:
        first = got.problems[0].split(': ', 1)[1] if got.problems else ''
        raise JournalError(path, 1, '%s; no line is a journal entry: is '
                           'this the agent\'s journal file?' % first)
    warnings = ['%s: ignored, as the agent ignores it' % p
                for p in got.problems]
    return held(got.entries), warnings
