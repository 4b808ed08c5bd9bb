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
"""Per-module figures of a fault campaign for ``tests/fault_tally.py``.

A campaign module makes one ``Campaign(name)``, installs its module
fixture (``_tally = CAMPAIGN.fixture()``) and wraps each property under
``@given`` with ``@CAMPAIGN.counted`` (or ``counted(failure=...)``): every
example is a case; an exception out of it is counted under ``escaped``
(an ``AssertionError`` under ``failure``: e.g. ``wrongly_stored`` where
the assertion is that nothing was stored); hypothesis' own control flow
(``assume``) is not. The fixture notes the figures once, at module
teardown; a campaign that counts in its own way adds to the attributes.
"""

import functools

import pytest

from tests import fault_tally


class Campaign(object):
    """The figures of one campaign module."""

    def __init__(self, name):
        self.name = name
        self.figures = dict.fromkeys(fault_tally.FIGURES, 0)

    def counted(self, fn=None, failure='escaped'):
        """Decorate one property (under ``@given``): count its examples."""
        if fn is None:
            return functools.partial(self.counted, failure=failure)

        @functools.wraps(fn)
        def case(*args, **kwargs):
            self.figures['cases'] += 1
            try:
                return fn(*args, **kwargs)
            except AssertionError:
                self.figures[failure] += 1
                raise
            except Exception as e:
                if not type(e).__module__.startswith('hypothesis'):
                    self.figures['escaped'] += 1
                raise
        return case

    def add(self, **figures):
        for k, v in figures.items():
            self.figures[k] += v

    def fixture(self):
        """A module-scoped autouse fixture noting the figures at teardown."""
        @pytest.fixture(scope='module', autouse=True)
        def _fault_tally():
            yield
            if self.figures['cases']:
                fault_tally.note(self.name, **self.figures)
        return _fault_tally
