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

Reading is ``journal_read``'s (one validating loader for the agent and
``iosched-explain``): a line that is not a valid entry is skipped with a
WARNING naming it, and every valid entry around it still counts.

Faults of the file itself: a journal that can be read but not written
(a read-only filesystem, wrong permissions) is loaded and ``write_error``
says why: the agent then restores what the journal holds and stops
instead of acting unjournaled. An entry that cannot be appended (a full
disk) raises ``JournalWriteError`` from ``record`` (so the knob is not
written); from ``forget``, ``clear`` and ``rebase`` it is logged once and
kept in ``write_error``, so that a stop on a full disk still restores
every knob (the next start restores the same originals again, which is
harmless). Entries are appended with one ``write(2)`` on an ``O_APPEND``
descriptor and fsync'd: nothing sits in a buffer to fail later.

One agent per journal: ``journal_lock`` (the daemon takes it at start).
"""

import errno
import json
import os
import time

from oslo_log import log as logging

from iosched.host_agent.actuators import journal_read

LOG = logging.getLogger(__name__)

# The reader's names, for the callers that know them from here.
JournalError = journal_read.JournalError
HeldKnob = journal_read.HeldKnob
read_held = journal_read.read_held
_from_json = journal_read.from_json
# Problems logged one by one at start; the rest are counted.
_MAX_PROBLEMS_LOGGED = 10


class JournalWriteError(OSError):
    """The journal cannot take an entry: the agent must not write the
    knob it describes (it would act unjournaled).
    """


def _jsonable(value):
    if isinstance(value, tuple):
        return list(value)
    return value


class Journal(object):
    """Original values of changed knobs; persisted when ``path`` is set."""

    def __init__(self, path=None, clock=time.time):
        self.path = path or None
        self._clock = clock
        self._originals = {}   # (kind, uuid, target) -> before
        self._fd = None
        # Why entries cannot be written (an OSError), or None.
        self.write_error = None
        # Lines skipped at load (each 'PATH line N: problem').
        self.problems = ()
        if self.path:
            self._originals = self._load(self.path)
            self._open(self.path)

    def _open(self, path):
        try:
            directory = os.path.dirname(path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND |
                               os.O_CREAT | os.O_CLOEXEC, 0o600)
            if (os.fstat(self._fd).st_size and
                    not self._ends_with_newline(path)):
                # Terminate a torn last line so the next entry stands alone.
                os.write(self._fd, b'\n')
        except OSError as e:
            self._fail(e, 'cannot open the journal %s for writing' % path)
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    @staticmethod
    def _ends_with_newline(path):
        with open(path, 'rb') as fh:
            fh.seek(-1, os.SEEK_END)
            return fh.read(1) == b'\n'

    def _load(self, path):
        try:
            got = journal_read.replay(path)
        except FileNotFoundError:
            return {}
        # Any other OSError (unreadable) stops the start: the agent cannot
        # know what a previous run left changed.
        self.problems = got.problems
        for problem in got.problems[:_MAX_PROBLEMS_LOGGED]:
            LOG.warning('%s: ignored; the valid entries around it are '
                        'restored', problem)
        if len(got.problems) > _MAX_PROBLEMS_LOGGED:
            LOG.warning('journal %(p)s: %(n)d more lines that are not '
                        'entries, ignored', {
                            'p': path,
                            'n': len(got.problems) - _MAX_PROBLEMS_LOGGED})
        return journal_read.originals(got.entries)

    def _fail(self, error, what):
        if self.write_error is None:
            LOG.error('%(what)s: %(err)s', {'what': what, 'err': error})
        self.write_error = error

    @property
    def writable(self):
        """Whether entries can be appended (always, in memory)."""
        return self.path is None or (self._fd is not None and
                                     self.write_error is None)

    def _append(self, entry):
        if self.path is None:
            return
        if self._fd is None:
            raise JournalWriteError(
                errno.EBADF, 'the journal %s is not open for writing: %s'
                % (self.path, self.write_error))
        data = (json.dumps(entry, sort_keys=True) + '\n').encode('utf-8')
        try:
            written = os.write(self._fd, data)
            if written != len(data):
                # A short write on a full disk: end the torn line.
                os.write(self._fd, b'\n')
                raise OSError(errno.ENOSPC, 'short write (%d of %d bytes)'
                              % (written, len(data)))
            os.fsync(self._fd)
        except OSError as e:
            self._fail(e, 'cannot append to the journal %s' % self.path)
            raise JournalWriteError(e.errno, 'cannot append to the journal '
                                    '%s: %s' % (self.path, e.strerror or e))

    def _append_after(self, entry):
        """Append an entry that records what already happened (a restore,
        a forget): a failure is kept in ``write_error``, not raised, so
        that every other knob is still restored.
        """
        try:
            self._append(entry)
        except JournalWriteError:
            pass

    def pending(self):
        """Knobs whose original value is not restored: key -> before."""
        return dict(self._originals)

    def record(self, change):
        """Journal ``change`` before it is made; ``JournalWriteError``
        when it cannot be (the caller must not make it).
        """
        key = (change.kind, change.instance_uuid, change.target)
        if self.path is not None:      # else in memory only (no file)
            self._append({
                'op': 'change', 'kind': change.kind,
                'uuid': change.instance_uuid, 'target': change.target,
                'before': _jsonable(change.before),
                'after': _jsonable(change.after), 'rule': change.rule,
                'reason': change.reason, 'ts': change.ts,
                'wall': round(self._clock(), 3)})
        self._originals.setdefault(key, change.before)

    def rebase(self, key, value):
        """The knob's original is now ``value`` (what Nova would have set
        after a change the agent applies for it: a retype, an extend);
        restoring writes that, not the value before. No-op for a knob the
        journal does not hold.
        """
        if key in self._originals:
            self._originals[key] = value
            self._append_after({'op': 'rebase', 'kind': key[0],
                                'uuid': key[1], 'target': key[2],
                                'before': _jsonable(value),
                                'wall': round(self._clock(), 3)})

    def forget(self, key):
        """The knob is gone (VM deleted) or back at its original value."""
        if self._originals.pop(key, None) is not None or self.path:
            self._append_after({'op': 'forget', 'kind': key[0],
                                'uuid': key[1], 'target': key[2]})

    def clear(self):
        self._originals.clear()
        self._append_after({'op': 'clear'})

    def close(self):
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
