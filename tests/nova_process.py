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
"""Nova's real compute API in a child process (``tests/nova/server.py``).

The counterpart of ``tests/cinder_process.py`` (whose start-up, read and
stop helpers it shares): ``nova_server()`` is a context manager that runs
``python -m tests.nova.server``, waits for its JSON line, yields a
``NovaServer`` and stops the server on the way out. ``child_nova`` is the
pytest fixture (module scope): it skips without Nova, fails under CI=true.
This module does not import Nova.
"""

import contextlib
import dataclasses
import importlib.util
import json
import subprocess
import sys
import tempfile

import pytest

from tests import cinder_process
from tests import fixtures as iosched_fixtures


@dataclasses.dataclass(frozen=True)
class NovaServer:
    """Where the child's Nova API answers. The token ``user:project`` of
    ``user_id`` ``admin`` is an admin; ``token_for`` makes others.
    """

    endpoint: str           # http://127.0.0.1:PORT/v2.1
    root: str               # http://127.0.0.1:PORT/
    project_id: str
    user_id: str
    token: str
    validator_namespaces: tuple
    pid: int

    def token_for(self, user, roles=None):
        token = '%s:%s' % (user, self.project_id)
        return token + (':' + ','.join(roles) if roles is not None else '')

    def adapter(self, microversion=None, token=None):
        """A keystoneauth1 Adapter whose relative URLs are under
        ``endpoint``; answers are not raised.
        """
        from keystoneauth1 import adapter as ks_adapter
        from keystoneauth1 import session as ks_session
        from keystoneauth1 import token_endpoint
        session = ks_session.Session(auth=token_endpoint.Token(
            self.endpoint, token or self.token))
        return ks_adapter.Adapter(
            session, service_type='compute', endpoint_override=self.endpoint,
            default_microversion=microversion, raise_exc=False)


def available():
    """``(ok, why)``: can ``tests.nova.server`` import Nova here?"""
    if importlib.util.find_spec('nova') is None:
        return False, 'the nova package is not installed'
    return True, ''


@contextlib.contextmanager
def nova_server(timeout=120.0):
    """Run ``python -m tests.nova.server``; yield a ``NovaServer``."""
    with tempfile.NamedTemporaryFile(prefix='iosched-nova-server-',
                                     suffix='.log') as err:
        proc = subprocess.Popen(
            [sys.executable, '-m', 'tests.nova.server'],
            cwd=cinder_process.REPO, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=err)
        try:
            line = cinder_process._first_line(proc, timeout)
            if not line:
                raise RuntimeError(
                    'Nova server (pid %d) gave no JSON line in %.0f s '
                    '(exit %s); its stderr ends:\n%s'
                    % (proc.pid, timeout, proc.poll(),
                       cinder_process._tail(err.name)))
            info = json.loads(line)
            info['validator_namespaces'] = tuple(
                info['validator_namespaces'])
            yield NovaServer(pid=proc.pid, **info)
        finally:
            cinder_process._stop(proc)


@pytest.fixture(scope='module')
def child_nova():
    """A ``NovaServer`` for one test module (see the module doc)."""
    ok, why = available()
    iosched_fixtures.require('Nova', ok, why)
    with nova_server() as server:
        yield server
