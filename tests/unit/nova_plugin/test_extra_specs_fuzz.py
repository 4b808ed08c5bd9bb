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

"""Fuzzing the ``iosched:*`` flavor extra specs (issue 15, bad input).

Readers of a flavor's extra specs: the Nova API validators (strict,
``iosched.contract.flavor.check``), the scheduler (``scoring.Request``,
then ``lsvm_rule`` and ``scoring``) and the host agent
(``model.InstanceInfo``, vSlicer's ``lsvm_mechanisms.latency_ms``, vTurbo),
the last two through ``flavor.read``. Properties: the strict reader raises
only ``InvalidExtraSpec`` (or ``ValueError`` outside the namespace) naming
the key, the value (shortened) and what is accepted; every value it accepts
means the same to the scheduler and to the agent; the tolerant readers
never raise on anything and never yield NaN, infinite or non-positive
bounds. (That every value, accepted or not, means the same to every reader:
tests/unit/contract/test_flavor.py.) Examples:
``IOSCHED_INPUT_FUZZ_EXAMPLES``.
"""

import math

from hypothesis import given
from hypothesis import strategies as st

from iosched.contract import flavor
from iosched.host_agent import model
from iosched.host_agent.policies import lsvm_mechanisms
from iosched.host_agent.policies import vturbo
from iosched.nova_plugin import lsvm_rule
from iosched.nova_plugin import scoring
from tests import fault_campaign
from tests.unit import input_fuzz as fz
from tests.unit.nova_plugin import reports

CAMPAIGN = fault_campaign.Campaign('flavor extra specs')
_tally = CAMPAIGN.fixture()

KEYS = tuple(flavor.BY_KEY)
# Near-miss spellings of every accepted value, and numbers that break
# parsers.
WORDS = (flavor.TRUE_SPELLINGS + flavor.FALSE_SPELLINGS
         + ('io', 'cpu', 'mixed', 'IO', ' Mixed ', 't', 'f', 'y', 'n',
            'TRUE ', 'On', 'oN', '\ttrue\n', 'yes!', 'disk'))
values = st.one_of(st.sampled_from(WORDS), fz.numbers_text, fz.junk_text,
                   st.integers(-10, 20000), st.booleans(), st.none(),
                   st.floats(allow_nan=True, allow_infinity=True))
keys = st.one_of(st.sampled_from(KEYS + ('iosched:turbo',)),
                 st.text(max_size=12).map(lambda t: 'iosched:' + t),
                 st.sampled_from(('hw:cpu_policy', 'iosched', 'IOSCHED:x',
                                  'iosched:latency_ms ', '')))


@fz.SETTINGS
@given(keys, values)
@CAMPAIGN.counted
def test_strict_check_accepts_or_names_key_value_and_accepted(key, value):
    try:
        flavor.check(key, value)
    except flavor.InvalidExtraSpec as e:
        assert (e.key, e.value) == (key, value)
        fz.check_message(str(e), ["'%s'" % key[:80]],
                         ('accepted: ', 'accepted keys: '))
    except ValueError as e:         # a key outside the namespace
        assert not flavor.in_namespace(key)
        fz.check_message(str(e), [key[:80]], ("'iosched:'",))


def _agent(specs):
    return model.InstanceInfo(uuid='u', name='d', vcpus=2, extra_specs=specs)


@fz.SETTINGS
@given(st.sampled_from(KEYS), values)
@CAMPAIGN.counted
def test_an_accepted_value_means_the_same_to_scheduler_and_agent(key,
                                                                 value):
    try:
        want = flavor.check(key, value)
    except flavor.InvalidExtraSpec:
        return
    # nova-api stores every value as a string
    specs = {key: str(value).lower() if isinstance(value, bool)
             else str(value)}
    request = scoring.Request.from_extra_specs(2, specs)
    inst = _agent(specs)
    if key == flavor.LATENCY_SENSITIVE:
        assert request.latency_sensitive is want
        assert inst.latency_sensitive is want
    elif key == flavor.LATENCY_MS:
        assert request.latency_ms == want
        assert inst.latency_ms == want
    elif key == flavor.TURBO:
        assert vturbo.is_turbo(inst) is want
    else:
        assert request.io_profile == want


@fz.SETTINGS
@given(st.dictionaries(keys, values, max_size=5), st.integers(-2, 64))
@CAMPAIGN.counted
def test_tolerant_readers_never_raise(specs, vcpus):
    specs = {k: v for k, v in specs.items()}
    for k in KEYS:      # nearly every example carries the three keys
        if k not in specs:
            specs[k] = None
    flavor.read(specs)
    request = scoring.Request.from_extra_specs(vcpus, specs)
    assert request.latency_ms is None or request.latency_ms > 0
    assert request.io_profile in flavor.IO_PROFILES + (None,)
    # the scheduler's LSVM rule over a host that has room
    report = reports.report(pcpus=4, lsvm=reports.lsvm(pcpus=4))
    ok, reason, _ = lsvm_rule.check(report, None, request)
    assert ok in (True, False) and isinstance(reason, str)
    assert math.isfinite(scoring.score(report, None, request))
    # the agent
    inst = _agent({k: str(v) for k, v in specs.items()})
    assert inst.latency_sensitive in (True, False)
    lat = inst.latency_ms
    assert lat is None or (math.isfinite(lat) and lat > 0), lat
    params = type('P', (), {'default_latency_ms': 2.0})()
    lat = lsvm_mechanisms.latency_ms(inst, params)
    assert math.isfinite(lat) and lat > 0
    assert vturbo.is_turbo(inst) in (True, False)
