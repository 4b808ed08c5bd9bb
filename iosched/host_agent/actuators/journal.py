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
"""The change journal: every knob the agent changed, with its first value.

The agent never leaves a VM throttled or pinned by a decision it can no
longer explain: each write is appended here (JSON lines, fsync'd) *before*
the knob is written, with the value it had before the agent first touched
it. ``restore`` writes those original values back (on stop) and, since the
file survives a crash, the next start restores them before its first tick.

File format, one JSON object per line::

    {"op": "change", "kind": "vcpu_slice", "uuid": "...", "target": "0",
     "before": 3000, "after": 1000, "rule": "vslicer.lsvm_microslice",
     "reason": "LSVM: L=2ms, ...", "ts": 12.0, "wall": 1717000000.5}
    {"op": "forget", "kind": ..., "uuid": ..., "target": ...}
    {"op": "clear"}

The original value of a knob is the ``before`` of its first ``change``
after the last ``clear`` (or ``forget`` of that knob). ``ts`` is the
driver's clock (the libvirt driver's is monotonic: seconds since boot);
``wall`` is seconds since the epoch, for humans. ``reason`` (the inputs
that led to the change) and ``wall`` are absent from journals written
before they existed; readers take them as '' and None.

``read_held(path)`` replays a journal read-only (``iosched-explain``): the
knobs the agent holds changed, each with its original and current value
and the rule and reason of its last change.
"""

import dataclasses
import json
import os
import time

from oslo_log import log as logging

from iosched.contract import knob_kinds

LOG = logging.getLogger(__name__)


def _jsonable(value):
    if isinstance(value, tuple):
        return list(value)
    return value


def _from_json(kind, value):
    # Pins travel as lists in JSON; drivers take tuples. Deadline
    # reservations ({'runtime_us', ...}) and iotune dicts stay dicts.
    if kind in knob_kinds.PIN_KINDS and isinstance(value, list):
        return tuple(value)
    return value


class JournalError(ValueError):
    """A file that is not a journal, or an entry of the wrong shape."""

    def __init__(self, path, lineno, problem):
        self.path = path
        self.lineno = lineno
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


_KEY_FIELDS = ('kind', 'uuid', 'target')
_OPS = ('change', 'forget', 'clear')


def _checked(path, lineno, entry):
    """The entry, or JournalError naming what is wrong with it."""
    if not isinstance(entry, dict):
        raise JournalError(path, lineno, 'expected a JSON object, got %r'
                           % (entry,))
    op = entry.get('op')
    if op not in _OPS:
        raise JournalError(path, lineno, "field 'op': got %r, accepted: %s"
                           % (op, ' | '.join(_OPS)))
    if op == 'clear':
        return entry
    for name in _KEY_FIELDS:
        if not isinstance(entry.get(name), str):
            raise JournalError(path, lineno, "field '%s': expected a "
                               'string, got %r' % (name, entry.get(name)))
    if op == 'change':
        for name in ('before', 'after'):
            if name not in entry:
                raise JournalError(path, lineno, "field '%s': missing"
                                   % name)
        for name in ('ts', 'wall'):
            value = entry.get(name, 0.0)
            if not isinstance(value, (int, float)) or isinstance(value,
                                                                 bool):
                raise JournalError(path, lineno, "field '%s': expected a "
                                   'number, got %r' % (name, value))
    return entry


def read_held(path):
    """Replay ``path``: (list of HeldKnob, list of warnings).

    Raises OSError when the file cannot be read, and JournalError when a
    line is an entry of the wrong shape or no line is an entry at all.
    Unreadable lines (a write torn by a crash) are skipped, as the agent
    skips them, with a warning.
    """
    held = {}
    warnings = []
    lines = entries = 0
    with open(path, encoding='utf-8') as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            lines += 1
            try:
                entry = json.loads(line)
            except ValueError:
                warnings.append('%s line %d is not JSON (a write torn by a '
                                'crash?): ignored, as the agent does'
                                % (path, lineno))
                continue
            entry = _checked(path, lineno, entry)
            entries += 1
            if entry['op'] == 'clear':
                held.clear()
                continue
            key = (entry['kind'], entry['uuid'], entry['target'])
            if entry['op'] == 'forget':
                held.pop(key, None)
                continue
            kind = entry['kind']
            prev = held.get(key)
            ts = float(entry.get('ts', 0.0))
            held[key] = HeldKnob(
                kind=kind, instance_uuid=entry['uuid'],
                target=entry['target'],
                original=(prev.original if prev else
                          _from_json(kind, entry['before'])),
                current=_from_json(kind, entry['after']),
                rule=str(entry.get('rule', '')),
                reason=str(entry.get('reason', '')), ts=ts,
                first_ts=prev.first_ts if prev else ts,
                changes=(prev.changes if prev else 0) + 1,
                wall=entry.get('wall'))
    if lines and not entries:
        raise JournalError(path, 1, 'no line is a journal entry: is this '
                           'the agent\'s journal file?')
    return list(held.values()), warnings


class Journal(object):
    """Original values of changed knobs; persisted when ``path`` is set."""

    def __init__(self, path=None, clock=time.time):
        self.path = path or None
        self._clock = clock
        self._originals = {}   # (kind, uuid, target) -> before
        self._fh = None
        if self.path:
            self._originals = self._load(self.path)
            directory = os.path.dirname(self.path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            self._fh = open(self.path, 'a', encoding='utf-8')
            if self._fh.tell() and not self._ends_with_newline(self.path):
                # Terminate a torn last line so the next entry stands alone.
                self._fh.write('\n')

    @staticmethod
    def _ends_with_newline(path):
        with open(path, 'rb') as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b'\n'

    @staticmethod
    def _load(path):
        originals = {}
        if not os.path.exists(path):
            return originals
        with open(path, encoding='utf-8') as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    entry = json.loads(line)
                except ValueError:
                    # A torn last line after a crash: the write it describes
                    # did not happen (we journal before writing).
                    LOG.warning('journal %(p)s line %(n)d unreadable, '
                                'ignored', {'p': path, 'n': lineno})
                    continue
                op = entry.get('op')
                if op == 'clear':
                    originals.clear()
                    continue
                key = (entry['kind'], entry['uuid'], entry['target'])
                if op == 'change':
                    originals.setdefault(
                        key, _from_json(entry['kind'], entry['before']))
                elif op == 'forget':
                    originals.pop(key, None)
                elif op == 'rebase' and key in originals:
                    originals[key] = _from_json(entry['kind'],
                                                entry['before'])
        return originals

    def _append(self, entry):
        if self._fh is None:
            return
        self._fh.write(json.dumps(entry, sort_keys=True) + '\n')
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def pending(self):
        """Knobs whose original value is not restored: key -> before."""
        return dict(self._originals)

    def record(self, change):
        key = (change.kind, change.instance_uuid, change.target)
        self._originals.setdefault(key, change.before)
        self._append({'op': 'change', 'kind': change.kind,
                      'uuid': change.instance_uuid, 'target': change.target,
                      'before': _jsonable(change.before),
                      'after': _jsonable(change.after),
                      'rule': change.rule, 'reason': change.reason,
                      'ts': change.ts, 'wall': round(self._clock(), 3)})

    def rebase(self, key, value):
        """The knob's original is now ``value`` (what Nova would have set
        after a change the agent applies for it: a retype, an extend);
        restoring writes that, not the value before. No-op for a knob the
        journal does not hold.
        """
        if key in self._originals:
            self._originals[key] = value
            self._append({'op': 'rebase', 'kind': key[0], 'uuid': key[1],
                          'target': key[2], 'before': _jsonable(value),
                          'wall': round(self._clock(), 3)})

    def forget(self, key):
        """The knob is gone (VM deleted) or back at its original value."""
        if self._originals.pop(key, None) is not None or self._fh:
            self._append({'op': 'forget', 'kind': key[0], 'uuid': key[1],
                          'target': key[2]})

    def clear(self):
        self._originals.clear()
        self._append({'op': 'clear'})

    def close(self):
        if self._fh is not None:
            self._fh.close()
            self._fh = None
