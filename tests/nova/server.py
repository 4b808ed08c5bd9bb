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
"""Nova's real compute API as a process of its own, on a real TCP port.

``python -m tests.nova.server`` sets up what Nova's functional tests set
up (``nova.test.TestCase``: ConfFixture, the API and cell databases made
by Nova's own migrations in sqlite, cell mappings, the default flavors,
the real policy) and serves Nova's ``osapi_compute`` WSGI app, loaded
from the wheel's ``api-paste.ini`` by ``nova.api.wsgi.Loader`` as
``nova.tests.fixtures.OSAPIFixture`` loads it, with eventlet's WSGI server
on 127.0.0.1 and a free port. Keystone is replaced the way that fixture
replaces it (keystonemiddleware's auth_token passes requests through,
``NovaKeystoneContext._create_context`` is patched) except that the
caller comes from the ``X-Auth-Token`` header, ``user:project[:roles]``
(roles comma-separated; the default is ``reader,member`` plus ``admin``
for the user ``admin``, who is also ``is_admin``). No token or a
malformed one is 401.

Nova's extra-spec validators are the installed ones, so the
``nova.api.extra_spec_validators`` entry point ``iosched``
(``iosched.nova_plugin.validators``) judges ``iosched:*`` keys at microversion
2.86 and later. When ready the process prints one JSON line on stdout::

    {"endpoint": "http://127.0.0.1:PORT/v2.1", "root":
    "http://127.0.0.1:PORT/",
     "project_id": ..., "user_id": "admin", "token": "admin:<project>",
     "validator_namespaces": [...]}

and serves until SIGTERM, SIGINT or end of file on stdin. Its temporary
files live in a directory it removes on the way out; everything else it
writes goes to stderr. ``tests/nova_process.py`` starts it for tests.
"""

import json
import os
import signal
import sys
import uuid

from tests import child_server

PROJECT_ID = uuid.uuid4().hex
USER_ID = 'admin'


def _context_from_token(env, **kwargs):
    """A RequestContext from ``X-Auth-Token: user:project[:roles]``."""
    from nova import context

    parts = env.get('HTTP_X_AUTH_TOKEN', '').split(':')
    if len(parts) not in (2, 3) or not all(parts[:2]):
        return context.RequestContext(user_id=None, project_id=None)
    user_id, project_id = parts[:2]
    if len(parts) == 3:
        roles = [r for r in parts[2].split(',') if r]
    else:
        roles = ['reader', 'member'] + (['admin'] if user_id == 'admin'
                                        else [])
    return context.RequestContext(user_id, project_id,
                                  is_admin='admin' in roles, roles=roles,
                                  **kwargs)


def _harness_class():
    import fixtures
    from nova import test

    class Harness(test.TestCase):
        """Nova's functional test base, driven by hand (not as a test)."""

        def setUp(self):
            super().setUp()
            # the wheel puts api-paste.ini under <sys.prefix>/etc/nova
            self.flags(api_paste_config=os.path.join(
                sys.prefix, 'etc', 'nova', 'api-paste.ini'), group='wsgi')
            self.useFixture(fixtures.MockPatch(
                'keystonemiddleware.auth_token.filter_factory',
                return_value=lambda app: app))
            self.useFixture(fixtures.MonkeyPatch(
                'nova.api.auth.NovaKeystoneContext._create_context',
                _context_from_token))

        def runTest(self):
            pass

    return Harness


def _serve(out, stop):
    from nova import monkey_patch
    monkey_patch.patch()

    import eventlet
    from eventlet import wsgi as eventlet_wsgi
    from nova.api.openstack import wsgi_app
    from nova.api.validation.extra_specs import validators
    from nova.api import wsgi
    import nova.conf
    from nova import objects
    from oslo_log import log as logging

    objects.register_all()
    harness = _harness_class()()
    harness.setUp()
    try:
        app = wsgi.Loader().load_app('osapi_compute')
        wsgi_app._setup_service(nova.conf.CONF.host, 'osapi_compute')
        sock = eventlet.listen(('127.0.0.1', 0))
        port = sock.getsockname()[1]
        access = logging.getLogger('tests.nova.server.access')
        server = eventlet.spawn(eventlet_wsgi.server, sock, app, log=access,
                                log_output=True, debug=False)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda signum, frame: stop.append(signum))
        root = 'http://127.0.0.1:%d/' % port
        out.write(json.dumps({
            'endpoint': root + 'v2.1', 'root': root,
            'project_id': PROJECT_ID, 'user_id': USER_ID,
            'token': '%s:%s' % (USER_ID, PROJECT_ID),
            'validator_namespaces': sorted(validators.NAMESPACES)}) + '\n')
        out.flush()
        child_server.wait(stop)
        server.kill()
        sock.close()
    finally:
        harness.doCleanups()


def main():
    return child_server.main(_serve, 'iosched-nova-')


if __name__ == '__main__':
    sys.exit(main())
