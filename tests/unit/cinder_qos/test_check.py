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

"""Table tests of iosched.cinder_qos.translate.check() (QEMU
throttle_is_valid).
"""

import pytest

from iosched.cinder_qos import translate

SLO = {'iosched:min_iops': '120', 'iosched:latency_ms': '60'}

# name, specs, expected problems (substrings, one per problem, in any order)
CASES = [
    ('empty', {}, []),
    ('total_only', {'total_iops_sec': '400', 'total_bytes_sec': '10'}, []),
    ('read_write_only', {'read_iops_sec': '4', 'write_iops_sec': '5',
                         'read_bytes_sec_max': '9', 'read_bytes_sec': '9'},
     []),
    ('mixed_iops', {'total_iops_sec': '400', 'read_iops_sec': '100'},
     ['total_iops_sec and read_/write_iops_sec cannot be used']),
    ('mixed_bytes', {'total_bytes_sec': '400', 'write_bytes_sec': '100'},
     ['total_bytes_sec and read_/write_bytes_sec cannot be used']),
    ('mixed_max_only', {'total_iops_sec': '4', 'total_iops_sec_max': '5',
                        'read_iops_sec_max': '9', 'write_iops_sec': '3'},
     ['total_iops_sec and read_/write_iops_sec cannot',
      'total_iops_sec_max and read_/write_iops_sec_max cannot',
      'read_iops_sec_max needs read_iops_sec']),
    ('mixed_kinds_ok', {'total_iops_sec': '400', 'read_bytes_sec': '100'},
     []),
    ('max_without_avg', {'total_iops_sec_max': '400'},
     ['total_iops_sec_max needs total_iops_sec to be set']),
    ('max_below_avg', {'total_iops_sec': '400', 'total_iops_sec_max': '300'},
     ['total_iops_sec_max 300 is lower than total_iops_sec 400']),
    ('max_equal_avg', {'total_iops_sec': '400', 'total_iops_sec_max': '400'},
     []),
    ('zero_means_unset', {'total_iops_sec': '0', 'total_iops_sec_max': '9'},
     ['total_iops_sec_max needs total_iops_sec']),
    ('size_without_iops', {'size_iops_sec': '4096', 'total_bytes_sec': '1'},
     ['size_iops_sec needs total_iops_sec, read_iops_sec or write_iops_sec']),
    ('size_with_read_iops', {'size_iops_sec': '4096', 'read_iops_sec': '1'},
     []),
    ('not_integer', {'total_iops_sec': '1.5'},
     ["total_iops_sec '1.5': not a whole number"]),
    ('negative', {'total_iops_sec': '-1'}, ["total_iops_sec '-1'"]),
    ('above_qemu_max', {'total_iops_sec': str(10 ** 15 + 1)},
     ["above QEMU's limit"]),
    ('at_qemu_max', {'total_iops_sec': str(10 ** 15)}, []),
    ('typo_key', {'totl_iops_sec': '5'},
     ["totl_iops_sec: Nova ignores it: not one of the 13 front-end keys "
      "nor iosched:*; did you mean 'total_iops_sec'?"]),
    ('max_length_not_passed', {'total_iops_sec': '5',
                               'total_iops_sec_max': '9',
                               'total_iops_sec_max_length': '2'},
     ['total_iops_sec_max_length: Nova ignores it']),
    ('iosched_typo', dict(SLO, **{'iosched:latency': '5'}),
     ["iosched:latency: not an iosched key; the agent ignores it; "
      "did you mean 'iosched:latency_ms'?"]),
    ('consumer_unknown', {'consumer': 'frontend'},
     ["consumer 'frontend': unknown; accepted: front-end, back-end, both"]),
    ('consumer_back_end', {'consumer': 'back-end', 'total_iops_sec': '5'},
     ["consumer 'back-end': Nova never sees total_iops_sec"]),
    ('both_allows_vendor_keys', {'consumer': 'both', 'vendor:tier': 'gold'},
     []),
    ('cinder_per_gb_counts_as_avg',
     {'total_iops_sec_per_gb': '10', 'total_iops_sec_max': '5000',
      'size_iops_sec': '4096'}, []),
    ('cinder_per_gb_mixed',
     {'read_iops_sec_per_gb': '10', 'total_iops_sec': '5000'},
     ['total_iops_sec and read_/write_iops_sec cannot']),
    ('slo_consistent', dict(SLO, total_iops_sec='400',
                            size_iops_sec='16384'), []),
    ('slo_cap_below_b', dict(SLO, total_iops_sec='100'),
     ['total_iops_sec 100 is below iosched:min_iops 120']),
    ('slo_cap_below_little', dict(SLO, total_iops_sec='130',
                                  **{'iosched:expected_qd': '8'}),
     ["total_iops_sec 130 is below N/L = 133.3 (Little's law"]),
    ('slo_cap_at_little', dict(SLO, total_iops_sec='134',
                               **{'iosched:expected_qd': '8'}), []),
    ('slo_size_mismatch', dict(SLO, total_iops_sec='400',
                               size_iops_sec='4096'),
     ['size_iops_sec 4096 differs from iosched:ref_io_bytes 16384']),
    ('slo_bad', {'iosched:min_iops': '0', 'iosched:latency_ms': '10'},
     ['QoS spec: throughput 0 IOPS: must be greater than 0']),
    ('slo_missing_latency', {'iosched:min_iops': '5'},
     ['QoS spec lacks iosched:latency_ms']),
]


@pytest.mark.parametrize('specs,want', [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_check(specs, want):
    problems = translate.check(specs)
    assert len(problems) == len(want), problems
    for needle in want:
        assert any(needle in p for p in problems), (needle, problems)
