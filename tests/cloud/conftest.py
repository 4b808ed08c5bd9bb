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
"""The one-machine cloud for the tests of tests/cloud: ``iosched-cloud
up`` once per session (the first test that asks for it), ``down`` at the
end, which must leave nothing behind.

The session holds the testbed lock (``/tmp/iosched-testbed.lock``, which
the testbed benchmarks take with flock) while its cloud is up: ``up``
refuses to start beside libvirt domains it did not create (found when a
benchmark's guests were up during a local run).
"""

import fcntl
import subprocess
import time

import pytest

from tests.cloud import client

TESTBED_LOCK = '/tmp/iosched-testbed.lock'


@pytest.fixture(scope='session')
def cloud():
    client.require_components()
    with open(TESTBED_LOCK, 'a') as lock:
        waited = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)     # a benchmark's guests go first
        print('testbed lock taken after %.0f s'
              % (time.monotonic() - waited))
        yield from _cloud()


def _cloud():
    t0 = time.monotonic()
    cli = client.CLI
    res = subprocess.run(cli + ['up'], capture_output=True, text=True,
                         timeout=2400)
    print(res.stdout)
    if res.returncode:
        # leave nothing of a half-built cloud behind, then fail
        subprocess.run(cli + ['down'], capture_output=True, timeout=1200)
        pytest.fail('iosched-cloud up failed:\n%s\n%s' % (
            res.stdout[-4000:], res.stderr[-4000:]))
    print('cloud up in %.0f s' % (time.monotonic() - t0))
    yield client.LAYOUT
    res = subprocess.run(cli + ['down'], capture_output=True, text=True,
                         timeout=1200)
    print(res.stdout)
    assert res.returncode == 0, 'iosched-cloud down: %s%s' % (
        res.stdout[-3000:], res.stderr[-3000:])
    assert 'nothing left behind' in res.stdout
