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
"""One agent per journal: a lock beside the journal file, naming its PID.

Two agents on one journal would undo each other: the second "restores
the knobs left by a previous run" while the first is live. So the daemon
takes ``acquire(journal_path)`` before it opens the hypervisor: an
exclusive POSIX record lock (``fcntl.lockf``) on ``<journal>.lock``, whose
text is the holder's PID. A second agent gets ``JournalBusy`` naming that
PID. The kernel drops the lock when the holder exits, SIGKILL included,
so a crashed agent never blocks its successor; POSIX locks are not
inherited by forked children (the privsep daemon), so none outlives the
agent.

A lock file that cannot be created (a read-only filesystem) is no lock:
``acquire`` returns a ``Lock`` whose ``fd`` is None and says why in
``error``; the agent then finds the journal unwritable and stops after
restoring what it holds, so no two agents act.
"""

import errno
import fcntl
import os


class JournalBusy(RuntimeError):
    """Another live process holds the journal."""

    def __init__(self, path, pid):
        self.pid = pid
        super().__init__(
            'the journal %s is in use by another io-host-agent (PID %s, '
            'lock file %s.lock): one agent per journal; stop that one or '
            'give this one another [host_agent] journal_path'
            % (path, pid if pid else 'unknown', path))


class Lock(object):
    """A held lock (``fd``), or none and why (``error``)."""

    def __init__(self, path, fd=None, error=None):
        self.path = path
        self.fd = fd
        self.error = error

    def release(self):
        if self.fd is not None:
            os.close(self.fd)        # drops the POSIX lock
            self.fd = None


def _holder(fd):
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        text = os.read(fd, 32).decode('ascii', 'replace').strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def acquire(journal_path):
    """Lock ``journal_path`` for this process: a ``Lock``; ``JournalBusy``
    when another process holds it. No path (a journal in memory): no lock.
    """
    if not journal_path:
        return Lock(None)
    path = journal_path + '.lock'
    try:
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        return Lock(path, error=e)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EACCES, errno.EAGAIN):
            os.close(fd)
            return Lock(path, error=e)
        pid = _holder(fd)
        os.close(fd)
        raise JournalBusy(journal_path, pid)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, ('%d\n' % os.getpid()).encode('ascii'), 0)
    except OSError:
        pass          # the lock holds; only the PID in the message is lost
    return Lock(path, fd=fd)
