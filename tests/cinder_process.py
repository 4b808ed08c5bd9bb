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
"""Cinder's real API in a child process, for tests that cannot import Cinder.

Nova and Cinder cannot share an interpreter, so Nova's tests reach a real
Cinder API through ``python -m tests.cinder.server`` (see there). This
module does not import Cinder. ``cinder_server()`` is a context manager
that starts the server, waits for its JSON line (``timeout`` seconds; a
failure message carries the server's stderr), yields it as a
``CinderServer`` and stops the server on the way out (end of file on its
stdin, then SIGTERM, then SIGKILL). ``available()`` says whether Cinder
is installed, for ``tests.fixtures.require``. ``child_cinder`` is the
pytest fixture (module scope; import it into a test module): it skips
without Cinder, fails under CI=true, and yields the ``CinderServer``.
The server also stops on its own when its parent dies (stdin closes).
"""

import contextlib
import dataclasses
import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import time

import pytest

from tests import fixtures as iosched_fixtures

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class CinderServer:
    """Where the child's Cinder API answers (noauth: the token is
    ``user:project``, an admin).
    """

    endpoint: str           # http://127.0.0.1:PORT/v3/<project_id>
    root: str               # http://127.0.0.1:PORT/
    project_id: str
    user_id: str
    token: str
    pid: int

    def session(self):
        from keystoneauth1 import session as ks_session
        from keystoneauth1 import token_endpoint
        return ks_session.Session(
            auth=token_endpoint.Token(self.endpoint, self.token))

    def adapter(self, microversion=None):
        """A keystoneauth1 Adapter whose relative URLs are under
        ``endpoint``; answers are not raised.
        """
        from keystoneauth1 import adapter as ks_adapter
        return ks_adapter.Adapter(
            self.session(), service_type='volumev3',
            endpoint_override=self.endpoint,
            default_microversion=microversion, raise_exc=False)


def available():
    """``(ok, why)``: can ``tests.cinder.server`` import Cinder here?"""
    if importlib.util.find_spec('cinder') is None:
        return False, 'the cinder package is not installed'
    return True, ''


def _tail(path, limit=6000):
    with open(path, errors='replace') as f:
        text = f.read()
    return text[-limit:]


@contextlib.contextmanager
def cinder_server(timeout=120.0):
    """Run ``python -m tests.cinder.server``; yield a ``CinderServer``."""
    with tempfile.NamedTemporaryFile(prefix='iosched-cinder-server-',
                                     suffix='.log') as err:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.cinder.server'], cwd=REPO,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
        try:
            line = _first_line(proc, timeout)
            if not line:
                raise RuntimeError(
                    'Cinder server (pid %d) gave no JSON line in %.0f s '
                    '(exit %s); its stderr ends:\n%s'
                    % (proc.pid, timeout, proc.poll(), _tail(err.name)))
            yield CinderServer(pid=proc.pid, **json.loads(line))
        finally:
            _stop(proc)


def _first_line(proc, timeout):
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    buf = b''
    while b'\n' not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                return None         # the server exited
            buf += chunk
        elif proc.poll() is not None:
            return None
    return buf.split(b'\n', 1)[0].decode()


def _stop(proc):
    for step in (proc.stdin.close, proc.terminate, proc.kill):
        try:
            step()
            proc.wait(timeout=15)
            break
        except (OSError, subprocess.TimeoutExpired):
            continue
    proc.stdout.close()


@pytest.fixture(scope='module')
def child_cinder():
    """A ``CinderServer`` for one test module (see the module doc)."""
    ok, why = available()
    iosched_fixtures.require('Cinder', ok, why)
    with cinder_server() as server:
        yield server
