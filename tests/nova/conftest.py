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
"""pytest glue for the tests that import Nova (run apart from Cinder's).

* ``nova.test.TestCase._clear_attrs`` deletes every instance attribute,
  including the test method pytest's unittest plugin stores and deletes
  later; keep it (shared/env/recipes.md section 1).
* The nova wheel installs ``api-paste.ini`` under ``<sys.prefix>/etc/nova``,
  not where ``ConfFixture`` looks; point ``[wsgi] api_paste_config`` there
  (needed by functional tests that start the API).
* Objects are registered once per session. ``nova.conf.CONF`` is *not*
  parsed here: ``nova.test.TestCase`` registers CLI options and parses it
  itself (its ``ConfFixture``), and a parse done before that makes it fail
  with ``ArgsAlreadyParsedError``.
"""

import importlib
import os
import sys

import pytest


def _keep_test_method(modname):
    try:
        module = importlib.import_module(modname)
    except ImportError:
        return
    orig = module.TestCase._clear_attrs

    def _clear_attrs(self):
        keep = self.__dict__.get(self._testMethodName)
        orig(self)
        if keep is not None:
            self.__dict__[self._testMethodName] = keep

    module.TestCase._clear_attrs = _clear_attrs


def _api_paste_from_prefix():
    try:
        from nova.tests.fixtures import conf as conf_fixture
    except ImportError:
        return
    orig = conf_fixture.ConfFixture.setUp

    def setUp(fx):
        orig(fx)
        fx.conf.set_default(
            'api_paste_config',
            os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini'),
            group='wsgi')

    conf_fixture.ConfFixture.setUp = setUp


_keep_test_method('nova.test')
_api_paste_from_prefix()


@pytest.fixture(scope='session', autouse=True)
def nova_session():
    """Register Nova's versioned objects, once."""
    from nova import objects

    objects.register_all()
    yield
