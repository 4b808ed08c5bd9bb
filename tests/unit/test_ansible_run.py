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
"""tests/ansible_run.py: the PLAY RECAP of ansible-playbook read back."""

import pytest

from tests import ansible_run

RECAP = """\
PLAY RECAP *********************************************************************
controller                 : ok=10   changed=5    unreachable=0    failed=0    skipped=2    rescued=0    ignored=0
node1                      : ok=32   changed=0    unreachable=0    failed=1    skipped=9    rescued=1    ignored=0
"""  # noqa: E501


@pytest.mark.parametrize('text, want', [
    (RECAP, {'controller': {'ok': 10, 'changed': 5, 'failed': 0},
             'node1': {'ok': 32, 'changed': 0, 'failed': 1}}),
    ('PLAY RECAP ***\n', {}),
    ('TASK [x : ok=1 changed=2] ***\n', {}),
])
def test_recap(text, want):
    assert ansible_run.recap(text) == want
