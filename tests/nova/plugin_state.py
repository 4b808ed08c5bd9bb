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
"""Shared set-up of the tests that run the plugin inside Nova.

* ``PluginState``: the scheduler worker's state, fresh for one test: a
  ``iosched.nova_plugin.state.SchedulerState`` (``worker``) whose report store
  runs on a fake clock, installed with ``iosched.nova_plugin.state.use_state``
  for the test (the filters and weighers Nova loads meanwhile use it);
  ``store`` and ``clock`` for short.
* ``enable_plugin(test, *filters)``: nova.conf of nova-scheduler as
  docs/nova.md says (Nova's filters and ours available, Nova's default
  filters plus ``filters`` enabled, Nova's weighers and ours). Call it
  before the base class's setUp starts the scheduler, which loads its
  filters then.
* ``ignore_noload_warning()``: Nova 34's WarningsFixture turns SQLAlchemy
  deprecation warnings into errors, and with the SQLAlchemy 2.1 installed
  here (no upper constraints) burying a NoValidHost instance in cell0
  (``instance_get`` with ``noload()``) warns, so a server that finds no
  host would stay in BUILD instead of going to ERROR. Nova's fixture
  restores the filters at cleanup.
"""

import warnings

import fixtures
from sqlalchemy import exc as sqla_exc

from iosched.nova_plugin import state
from tests.unit.nova_plugin import reports


class PluginState(fixtures.Fixture):
    """A fresh SchedulerState, installed for the test; its store's clock
    is ``clock``, by default a fake one at ``start``.
    """

    def __init__(self, start=1000.0, clock=None):
        super().__init__()
        self.start = start
        self.clock = clock

    def _setUp(self):
        if self.clock is None:
            self.clock = reports.FakeClock(self.start)
        self.worker = state.SchedulerState(clock=self.clock)
        self.store = self.worker.store
        scope = state.use_state(self.worker)
        scope.__enter__()
        self.addCleanup(scope.__exit__, None, None, None)
        self.addCleanup(self.worker.stop)


NOVA_FILTERS = ['ComputeFilter', 'ComputeCapabilitiesFilter',
                'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
                'ServerGroupAffinityFilter']


def enable_plugin(test, *filters):
    """See the module docstring."""
    test.flags(available_filters=['nova.scheduler.filters.all_filters',
                                  'iosched.nova_plugin.filters.all_filters'],
               enabled_filters=NOVA_FILTERS + list(filters),
               weight_classes=['nova.scheduler.weights.all_weighers',
                               'iosched.nova_plugin.weighers.all_weighers'],
               group='filter_scheduler')


def ignore_noload_warning():
    """See the module docstring."""
    warnings.filterwarnings(
        'ignore', message=r'The noload\(\) option is deprecated',
        category=sqla_exc.SADeprecationWarning)


def agent_placement_conf(test, sections):
    """The agent's host-agent.conf as an operator writes it: ``sections``
    (``{'io_inventory': {'publish': 'true'}}``) and ``[placement]`` pointed
    at the harness's in-process Placement (``auth_type = admin_token``,
    token ``admin`` for its noauth2 middleware), parsed into a new
    ConfigOpts with the agent's Placement option groups registered.
    """
    import os

    from oslo_config import cfg

    from iosched.host_agent.conf import io_inventory as io_inventory_conf
    from iosched.host_agent.conf import placement as placement_conf

    path = os.path.join(test.useFixture(fixtures.TempDir()).path,
                        'host-agent.conf')
    lines = []
    for section, values in sections.items():
        lines.append('[%s]' % section)
        lines.extend('%s = %s' % kv for kv in values.items())
    lines += ['[placement]', 'auth_type = admin_token',
              'endpoint = %s' % test.placement.fixture.endpoint,
              'token = admin']
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    io_inventory_conf.register_opts(conf)
    conf([], default_config_files=[path])
    return conf
