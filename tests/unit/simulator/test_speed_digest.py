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
"""The speed work keeps results: the 32-VM host of ``bench/sim_host32.py``
gives the digests main's code gave before issue 29's inlining (commit
2072ed9), on both kernel models, plain and with every knob turned.
"""

import pytest

from bench import sim_host32

# (kernel, knobs turned at 1 s) -> digest after 2 simulated s, recorded
# on the pre-inlining code; a change that moves any result fails here.
DIGESTS = {
    (None, False):
        '8a496bc39ae222cac2357d41505fd54a484f3ab0641743e0459eb676e0eca86f',
    ('linux-6.18-hz250', False):
        '92927fda03cef88f193f5501683378c1fbd6441101f41dcb5a9750c35f7595af',
    (None, True):
        'ebadea6b0a0774a2589c5743dd8bb8b8a155e33e7ba31dcc64904f0792e24a73',
    ('linux-6.18-hz250', True):
        '4e8d5dadc6e594727ad40d7b6c2f2b290d32d6f18fab7b8f6024a73b8bfdb190',
}


@pytest.mark.parametrize('kernel,knobs', sorted(
    DIGESTS, key=lambda k: (k[0] or '', k[1])))
def test_digest_unchanged(kernel, knobs):
    sim = sim_host32.build(kernel=kernel)
    if knobs:
        sim.run_until(1_000_000)
        sim_host32.apply_knobs(sim)
    sim.run_until(2_000_000)
    assert sim_host32.digest(sim) == DIGESTS[(kernel, knobs)]


def test_digest_sees_a_change():
    # the digest covers the results: another seed gives another one
    sim = sim_host32.build(seed=sim_host32.SEED + 1)
    sim.run_until(2_000_000)
    assert sim_host32.digest(sim) != DIGESTS[(None, False)]


def test_host_shape():
    vms = sim_host32.vm_specs()
    assert len(vms) == 32
    assert sum(len(vm.vcpus) for vm, _ in vms) == 40
