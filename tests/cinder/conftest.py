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
"""pytest glue for the tests that run Cinder's own API (apart from Nova's).

The ``cinder_api`` fixture (session scope) runs Cinder's real v3 API in
this process the way Cinder's functional tests do
(``cinder.tests.functional.functional_helpers._FunctionalTestBase``):
the ``osapi_volume`` WSGI service from Cinder's ``api-paste.ini`` on
127.0.0.1 and a free port, ``auth_strategy=noauth``, an in-memory sqlite
database whose schema Cinder's own migrations create, and in-process
cinder-scheduler (FilterScheduler) and cinder-volume services with
Cinder's fake driver (``cinder.tests.fake_driver.FakeLoggingVolumeDriver``)
over oslo.messaging's ``fake:/`` transport. Everything runs on eventlet
green threads (Cinder monkey-patches at import), so a plain HTTP client in
the test process works: its socket calls yield to the server.

It yields a ``CinderAPI`` with:

* ``endpoint``: the v3 base URL including the project id,
  e.g. ``http://127.0.0.1:PORT/v3/<project_id>``;
* ``project_id``, ``user_id``, ``token`` (``user:project``: what Cinder's
  noauth middleware takes as ``X-Auth-Token``; the caller is an admin);
* ``session()``: a keystoneauth1 session with a ``token_endpoint.Token``
  plugin (token and endpoint fixed, no Keystone);
* ``adapter(microversion=None)``: a keystoneauth1 ``Adapter`` on that
  session whose relative URLs are under ``endpoint``
  (``adapter().get('/qos-specs').json()``);
* ``cinderclient(microversion='3.0')``: a python-cinderclient v3 client
  on the same session;
* ``connection()``: an openstacksdk ``Connection`` on that session. Its
  endpoint override is the server root (``root``, ``http://127.0.0.1:PORT/``):
  openstacksdk runs version discovery, which fails on ``endpoint`` (Cinder
  answers no version document under ``/v3/<project_id>``); from the root it
  finds v3 and uses project-less URLs (``/v3/types``), which Cinder accepts,
  taking the project from the noauth token;
* ``wait_volume(id, status)``: poll until a volume has ``status`` or an
  error status (returns the volume dict; callers assert the status).

``running_api()`` is that start-up as a context manager; the fixture and
``python -m tests.cinder.server`` (the same API in a process of its own,
for Nova's tests) both use it.

The whole session shares one database and project (quotas unlimited):
use unique names. Each test gets
the logging setup back as it found it (``_logging_restored``): a CLI run
in-process (cliff, openstackclient) sets the root logger to DEBUG with a
handler on the test's captured stderr, and the Cinder services of later
tests would then log DEBUG through Cinder's raising test handler (a
volume create answered 500) and to a closed file.

Cinder's ``TestCase._common_cleanup`` deletes every instance attribute,
including the test method pytest's unittest plugin keeps; the shim below
keeps it (shared/env/recipes.md section 1), for tests that subclass
Cinder's own test cases.
"""

import contextlib
import importlib
import logging
import os
import sys
import time
import uuid

import pytest

from tests import fixtures as iosched_fixtures


def _keep_test_method(modname):
    try:
        module = importlib.import_module(modname)
    except ImportError:
        return
    orig = module.TestCase._common_cleanup

    def _common_cleanup(self):
        keep = self.__dict__.get(self._testMethodName)
        orig(self)
        if keep is not None:
            self.__dict__[self._testMethodName] = keep

    module.TestCase._common_cleanup = _common_cleanup


_keep_test_method('cinder.tests.unit.test')


class CinderAPI(object):
    """Where the in-process Cinder API answers, and clients for it."""

    def __init__(self, base_url, project_id, user_id):
        self.base_url = base_url            # http://127.0.0.1:PORT/v3
        self.root = base_url[:-len('v3')]   # http://127.0.0.1:PORT/
        self.project_id = project_id
        self.user_id = user_id
        self.endpoint = '%s/%s' % (base_url, project_id)
        self.token = '%s:%s' % (user_id, project_id)

    def session(self):
        from keystoneauth1 import session as ks_session
        from keystoneauth1 import token_endpoint
        return ks_session.Session(
            auth=token_endpoint.Token(self.endpoint, self.token))

    def adapter(self, microversion=None):
        from keystoneauth1 import adapter as ks_adapter
        return ks_adapter.Adapter(
            self.session(), service_type='volumev3',
            endpoint_override=self.endpoint,
            default_microversion=microversion, raise_exc=False)

    def cinderclient(self, microversion='3.0'):
        from cinderclient import client as cc
        return cc.Client(microversion, session=self.session(),
                         endpoint_override=self.endpoint)

    def connection(self):
        from openstack import connection
        return connection.Connection(
            session=self.session(), block_storage_endpoint_override=self.root,
            block_storage_api_version='3')

    def wait_volume(self, volume_id, status, timeout=60):
        api = self.adapter()
        deadline = time.monotonic() + timeout
        while True:
            vol = api.get('/volumes/%s' % volume_id).json()['volume']
            if vol['status'] == status or time.monotonic() > deadline:
                return vol
            if vol['status'] in ('error', 'error_extending'):
                return vol
            time.sleep(0.2)


def _harness_class():
    from cinder import service
    from cinder.tests.functional import functional_helpers
    from oslo_service import wsgi as oslo_wsgi

    class Harness(functional_helpers._FunctionalTestBase):
        """Cinder's functional base, driven by hand (not as a test)."""

        def _start_api_service(self):
            # The wheel puts api-paste.ini under <sys.prefix>/etc/cinder,
            # not beside the package where the base looks.
            paste = os.path.join(sys.prefix, 'etc', 'cinder',
                                 'api-paste.ini')
            oslo_wsgi.register_opts(functional_helpers.CONF)
            functional_helpers.CONF.set_override('api_paste_config', paste)
            self.addCleanup(functional_helpers.CONF.clear_override,
                            'api_paste_config')
            self.osapi = service.WSGIService('osapi_volume')
            self.osapi.start()
            self.auth_url = 'http://%s:%s/v3' % (self.osapi.host,
                                                 self.osapi.port)

        def runTest(self):
            pass

    return Harness


def _loggers():
    named = [lg for lg in logging.Logger.manager.loggerDict.values()
             if isinstance(lg, logging.Logger)]
    return [logging.getLogger()] + named


@pytest.fixture(autouse=True)
def _logging_restored(request):
    """Undo what a test did to logging levels and handlers."""
    if 'cinder_api' in request.fixturenames:
        request.getfixturevalue('cinder_api')   # its logging is kept
    saved = {lg: (lg.level, list(lg.handlers)) for lg in _loggers()}
    yield
    for lg in _loggers():
        level, handlers = saved.get(lg, (logging.NOTSET, []))
        lg.setLevel(level)
        lg.handlers[:] = handlers


@contextlib.contextmanager
def running_api(harness_cls=None):
    """Start Cinder (API, scheduler, volume), lift one project's quotas,
    yield its ``CinderAPI``, stop it all on the way out. Shared by the
    ``cinder_api`` fixture and ``python -m tests.cinder.server``.
    """
    harness = (harness_cls or _harness_class())()
    harness.setUp()
    try:
        api = CinderAPI(harness.auth_url, uuid.uuid4().hex, 'iosched-admin')
        # One project for the whole session: no quota may run out.
        resp = api.adapter().put(
            '/os-quota-sets/%s' % api.project_id,
            json={'quota_set': {'volumes': -1, 'snapshots': -1,
                                'gigabytes': -1}})
        if resp.status_code != 200:
            raise RuntimeError('quota update answered %s: %s'
                               % (resp.status_code, resp.text))
        yield api
    finally:
        harness.doCleanups()


@pytest.fixture(scope='session')
def cinder_api():
    """Cinder's real v3 API over HTTP on 127.0.0.1 (see module doc)."""
    try:
        harness_cls = _harness_class()
        ok, why = True, ''
    except ImportError as e:
        ok, why = False, 'cannot import cinder: %s' % e
    iosched_fixtures.require('Cinder', ok, why)
    with running_api(harness_cls) as api:
        yield api
