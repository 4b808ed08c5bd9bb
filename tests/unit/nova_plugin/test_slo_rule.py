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
"""Table tests of iosched.nova_plugin.slo_rule; every number is computed by
hand.
"""

import math

from oslo_config import cfg
import pytest

from iosched.nova_plugin import conf as iosched_conf
from iosched.nova_plugin import slo_rule

V = slo_rule.VolumeRef


@pytest.mark.parametrize('capacity, reserved, pending, request_iops, '
                         'fraction, passes, words', [
    # 600 + 0 + 400 = 1000 <= 1.0 x 1000
    (1000.0, 600.0, 0.0, 400.0, 1.0, True, '= 1000.0 IOPS'),
    # 600 + 0 + 401 = 1001 > 1000
    (1000.0, 600.0, 0.0, 401.0, 1.0, False, 'exceed'),
    # 600 + 100 + 400 = 1100 > 1000: pending placements count
    (1000.0, 600.0, 100.0, 400.0, 1.0, False, 'pending 100.0'),
    # 600 + 0 + 400 = 1000 > 0.8 x 1000 = 800
    (1000.0, 600.0, 0.0, 400.0, 0.8, False, 'limit 0.80 x capacity 1000.0'),
    # 200 + 0 + 400 = 600 <= 800
    (1000.0, 200.0, 0.0, 400.0, 0.8, True, 'fit'),
    # no SLO volume: passes even on a full or unknown disk
    (1000.0, 5000.0, 0.0, 0.0, 1.0, True, 'no SLO volume'),
    (0.0, 0.0, 0.0, 0.0, 1.0, True, 'no SLO volume'),
    # capacity unknown: the caller's policy decides
    (0.0, 0.0, 0.0, 120.0, 1.0, None, 'capacity unknown'),
    # fraction 0 admits no SLO floor
    (1000.0, 0.0, 0.0, 1.0, 0.0, False, 'exceed'),
    # float floors that add up to the limit on paper: 0.1 + 0.2 = 0.3
    (0.3, 0.1, 0.0, 0.2, 1.0, True, 'fit'),
    # bandwidth SLOs: 40MB/s at 16 KiB = 2441.40625 IOPS, twice = 4882.8125
    (4882.8125, 2441.40625, 0.0, 2441.40625, 1.0, True, 'fit'),
], ids=['at-limit', 'over', 'pending', 'fraction-over', 'fraction-fits',
        'not-slo-full', 'not-slo-unknown', 'unknown', 'fraction-zero',
        'float-sum', 'bandwidth'])
def test_admit(capacity, reserved, pending, request_iops, fraction, passes,
               words):
    got, reason = slo_rule.admit(capacity, reserved, pending, request_iops,
                                 fraction)
    assert got is passes
    assert words in reason


@pytest.mark.parametrize('args', [
    (-1.0, 0.0, 0.0, 1.0, 1.0),
    (1.0, math.nan, 0.0, 1.0, 1.0),
    (1.0, 0.0, math.inf, 1.0, 1.0),
    (1.0, 0.0, 0.0, '5', 1.0),
    (1.0, 0.0, 0.0, 1.0, None),
    (1.0, 0.0, 0.0, True, 1.0),
], ids=['negative', 'nan', 'inf', 'text', 'none', 'bool'])
def test_admit_rejects_bad_numbers(args):
    with pytest.raises(slo_rule.SloSpecError, match='accepted: a finite'):
        slo_rule.admit(*args)


@pytest.mark.parametrize('consumer, specs, want', [
    ('front-end', {'iosched:min_iops': '120'}, 120.0),
    ('both', {'iosched:min_iops': '2441.40625'}, 2441.40625),
    (' front-end ', {'iosched:min_iops': ' 500 '}, 500.0),
    # back-end specs never reach the host: the agent cannot count them
    ('back-end', {'iosched:min_iops': '120'}, 0.0),
    (None, {'iosched:min_iops': '120'}, 0.0),
    # not an SLO spec
    ('front-end', {'total_iops_sec': '400'}, 0.0),
    ('front-end', {'iosched:min_iops': ''}, 0.0),
    ('front-end', None, 0.0),
    ('front-end', {'iosched:min_iops': '0'}, 0.0),
], ids=['front-end', 'both', 'padded', 'back-end', 'no-consumer', 'no-key',
        'empty', 'no-specs', 'zero'])
def test_min_iops_from_qos(consumer, specs, want):
    assert slo_rule.min_iops_from_qos(consumer, specs) == want


@pytest.mark.parametrize('value', ['fast', '-5', 'nan', 'inf'])
def test_min_iops_from_qos_rejects_bad_values(value):
    with pytest.raises(slo_rule.SloSpecError) as e:
        slo_rule.min_iops_from_qos('front-end', {'iosched:min_iops': value},
                                   name='volume type gold')
    assert 'volume type gold' in str(e.value)
    assert 'iosched:min_iops' in str(e.value)
    assert 'accepted: a finite number >= 0' in str(e.value)


@pytest.mark.parametrize('bdm, want', [
    # not a volume: image or local disks, swap, ephemeral
    (dict(destination_type='local', source_type='image'), None),
    (dict(destination_type=None, source_type='blank'), None),
    # an explicit type wins (API 2.67+), even over a volume id
    (dict(destination_type='volume', source_type='image',
          volume_type='slo-gold'), V('type', 'slo-gold')),
    (dict(destination_type='volume', source_type='volume', volume_id='v1',
          volume_type='t1'), V('type', 't1')),
    # an existing volume, or one already created (cell mappings)
    (dict(destination_type='volume', source_type='volume', volume_id='v1'),
     V('volume', 'v1')),
    (dict(destination_type='volume', source_type='image', volume_id='v2'),
     V('volume', 'v2')),
    # a new volume from a snapshot: the source volume's type
    (dict(destination_type='volume', source_type='snapshot',
          snapshot_id='s1'), V('snapshot', 's1')),
    # a new volume without a type: Cinder's default type
    (dict(destination_type='volume', source_type='image'), V('default')),
    (dict(destination_type='volume', source_type='blank',
          volume_type=' '), V('default')),
], ids=['local', 'no-destination', 'type', 'type-over-volume', 'volume',
        'created', 'snapshot', 'default-image', 'default-blank'])
def test_volume_ref(bdm, want):
    assert slo_rule.volume_ref(**bdm) == want


@pytest.mark.parametrize('bdm', [
    dict(destination_type='volume', source_type='volume'),
    dict(destination_type='volume', source_type='snapshot'),
    dict(destination_type='volume', source_type=None),
], ids=['volume-without-id', 'snapshot-without-id', 'no-source'])
def test_volume_ref_rejects_unreadable_mappings(bdm):
    with pytest.raises(slo_rule.SloSpecError, match='accepted sources'):
        slo_rule.volume_ref(**bdm)


def test_slo_options_defaults_bounds_and_help():
    conf = cfg.ConfigOpts()
    iosched_conf.register_opts(conf)
    conf([], default_config_files=[])
    g = conf.iosched
    assert (g.slo_capacity_fraction, g.slo_lookup_failure_policy,
            g.slo_cache_seconds, g.slo_cache_max_entries) == (
        1.0, 'pass', 60, 1000)
    for name, bad in (('slo_capacity_fraction', 1.5),
                      ('slo_capacity_fraction', -0.1),
                      ('slo_lookup_failure_policy', 'ignore'),
                      ('slo_cache_seconds', -1),
                      ('slo_cache_max_entries', 0)):
        with pytest.raises(ValueError):
            conf.set_override(name, bad, group='iosched')
    (_, opts) = iosched_conf.list_opts()[0]
    for opt in opts:
        if opt.name.startswith('slo_'):
            assert 'Possible values:' in opt.help, opt.name
            assert 'Related options:' in opt.help, opt.name
