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
"""The verdict lines and ranges the testbed benches write
(bench/target_verdict.py).
"""

import pytest

from bench import target_verdict as tv


@pytest.mark.parametrize('met,figure,reason,want', [
    (True, '0.4', 'unused', 'target x <= 0.5: met (0.4)'),
    (False, '0.7', 'because', 'target x <= 0.5: NOT met (measured: 0.7; '
                               'because)'),
    (False, '0.7', '', 'target x <= 0.5: NOT met (measured: 0.7)'),
    (None, False, 'because', 'target x <= 0.5: not judged (not recorded)'),
    (None, 'p99 not recorded', '', 'target x <= 0.5: not judged (p99 not '
                                   'recorded)'),
])
def test_line(met, figure, reason, want):
    assert tv.line('x <= 0.5', met, figure, reason) == want


@pytest.mark.parametrize('values,fmt,want', [
    ([0.44, 0.33, None, 0.4], '%.2f', '0.33-0.44'),
    ([2.0, 2.0], '%.1f', '2.0'),
    ([None], '%.1f', 'not recorded'),
    ([], '%.1f', 'not recorded'),
])
def test_span(values, fmt, want):
    assert tv.span(values, fmt) == want


def test_listed():
    assert tv.listed([0.5, None, 1]) == '0.5, -, 1'
