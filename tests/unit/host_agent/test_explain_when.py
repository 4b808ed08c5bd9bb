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
"""``explain_format.when``: a time as a date, an agent-clock figure, or,
from a damaged journal, a number that is not a date (never a crash).
"""

import pytest

from iosched.host_agent.cmd import explain_format


@pytest.mark.parametrize('ts, wall, want', [
    (12.5, None, 't=12.500 s on the agent clock'),
    (12.5, 1.8e9, '2027-01-15 08:00:00 UTC'),
    (None, None, 't=0.000 s on the agent clock'),
    (1.0, 1e20, 'wall=1e+20 (not a date)'),    # past gmtime (hypothesis)
    (1.0, float('inf'), 'wall=inf (not a date)'),
    (1.0, 1e300, 'wall=1e+300 (not a date)'),
])
def test_when(ts, wall, want):
    assert explain_format.when(ts, wall) == want
