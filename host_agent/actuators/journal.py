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
     "ts": 12.0}
    {"op": "forget", "kind": ..., "uuid": ..., "target": ...}
    {"op": "clear"}

The original value of a knob is the ``before`` of its first ``change``
after the last ``clear`` (or ``forget`` of that knob).
"""

import json
import os

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def _jsonable(value):
    if isinstance(value, tuple):
        return list(value)
    return value


def _from_json(kind, value):
    # Pins travel as lists in JSON; drivers take tuples.
    if kind == 'vcpu_pin' and isinstance(value, list):
        return tuple(value)
    return value


class Journal(object):
    """Original values of changed knobs; persisted when ``path`` is set."""

    def __init__(self, path=None):
        self.path = path or None
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
                      'rule': change.rule, 'ts': change.ts})

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
