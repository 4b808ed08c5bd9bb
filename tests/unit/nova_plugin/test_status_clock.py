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
"""``iosched-status`` says when the schedulers refuse a host's reports for
their timestamp (issue 27: the agent's clock, not a replay): the store's
``future`` and ``too_old`` rules applied to the time a report arrived.
Table-driven; no broker.
"""

import pytest

from iosched.nova_plugin.cmd import placement_sources as status_sources
from iosched.nova_plugin.cmd import status
from iosched.nova_plugin.cmd import status_clock
from tests.unit.nova_plugin import reports
from tests.unit.nova_plugin import test_endpoint

T0 = 1.8e9


# (report interval, seconds the agent's clock is behind, [iosched]
# overrides, what the note says or None)
@pytest.mark.parametrize('interval, behind, overrides, says', [
    (10.0, 0.0, {}, None),
    (10.0, 329.0, {}, None),                  # within TTL 30 s + skew 300 s
    (10.0, 331.0, {}, 'too_old'),
    (10.0, 3600.0, {}, 'stamped 3600 s before it arrived'),
    (3600.0, 3600.0, {}, None),               # a long interval's own TTL
    (10.0, 61.0, {'report_max_age': 60.0}, 'too_old'),
    (10.0, -301.0, {}, 'future'),
    (10.0, -299.0, {}, None),
])
def test_clock_problem(interval, behind, overrides, says):
    conf = test_endpoint._conf(**overrides)
    report = reports.report(ts=T0 - behind, report_interval=interval)
    got = status_clock.clock_problem(report, T0, conf)
    if says is None:
        assert got is None
    else:
        assert says in got and 'NTP' in got


@pytest.mark.parametrize('option', ['report_ttl_intervals',
                                    'report_max_clock_skew',
                                    'report_max_age'])
def test_a_bad_clock_rule_in_the_config_is_bad_input(tmp_path, option):
    """Found by make bench-faults: ``report_ttl_intervals = abc`` escaped
    as a traceback after the listening, when the clock rules were read.
    """
    path = tmp_path / 'nova.conf'
    path.write_text('[iosched]\n%s = abc\n' % option)
    with pytest.raises(status_sources.BadInput) as caught:
        status.load_conf([str(path)])
    assert option in str(caught.value)
