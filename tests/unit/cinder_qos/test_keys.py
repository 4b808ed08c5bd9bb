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

"""Tests of iosched.contract.qos_keys (the check against Nova is in
tests/nova).
"""

import itertools
import os
import subprocess
import sys

from iosched.contract import qos_keys


def test_frontend_keys_are_the_13_iotune_keys():
    assert len(qos_keys.FRONTEND_KEYS) == 13
    assert len(set(qos_keys.FRONTEND_KEYS)) == 13
    want = {'%s_%s_sec%s' % combo for combo in itertools.product(
        ('total', 'read', 'write'), ('bytes', 'iops'), ('', '_max'))}
    want.add('size_iops_sec')
    assert set(qos_keys.FRONTEND_KEYS) == want


def test_consumers():
    assert qos_keys.CONSUMERS == ('front-end', 'back-end', 'both')
    assert qos_keys.FRONTEND_CONSUMER in qos_keys.CONSUMERS


def test_iosched_keys_are_namespaced_and_disjoint():
    assert len(set(qos_keys.IOSCHED_KEYS)) == len(qos_keys.IOSCHED_KEYS)
    assert all(qos_keys.is_iosched_key(k) for k in qos_keys.IOSCHED_KEYS)
    assert not set(qos_keys.IOSCHED_KEYS) & set(qos_keys.FRONTEND_KEYS)
    assert not any(qos_keys.is_iosched_key(k) for k in qos_keys.FRONTEND_KEYS)
    assert set(qos_keys.REQUIRED_IOSCHED_KEYS) <= set(qos_keys.IOSCHED_KEYS)


def test_iosched_key_names():
    assert set(qos_keys.IOSCHED_KEYS) == {
        'iosched:min_iops', 'iosched:min_bytes_sec', 'iosched:latency_ms',
        'iosched:latency_stat', 'iosched:ref_io_bytes', 'iosched:class',
        'iosched:expected_qd', 'iosched:window_s', 'iosched:tolerance'}


def test_keys_fit_cinder_limits():
    # Cinder rejects QoS spec keys and values longer than 255 characters.
    assert all(len(k) <= 255 for k in qos_keys.IOSCHED_KEYS)


def test_package_imports_neither_nova_nor_host_agent():
    # Blueprint section 3: cinder_qos imports no nova and no host_agent.
    code = ('import sys\n'
            'import iosched.cinder_qos.cmd.slo, iosched.cinder_qos.conf\n'
            'import iosched.contract.qos_keys\n'
            'import iosched.contract.slo, iosched.cinder_qos.translate\n'
            'import iosched.contract.slo_units\n'
            'bad = sorted(m for m in sys.modules\n'
            '             if m.split(".")[0] == "nova"\n'
            '             or m.startswith("iosched.host_agent"))\n'
            'assert not bad, bad\n')
    subprocess.run([sys.executable, '-c', code], check=True,
                   cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                       os.path.dirname(os.path.abspath(__file__))))))
