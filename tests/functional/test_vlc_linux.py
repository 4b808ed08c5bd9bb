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
"""The stock mechanisms docs/slo_vlc_linux.md relies on, on the real
kernel: a loop device with direct I/O, each elevator (mq-deadline, kyber,
bfq) selected with a tunable and restored, BFQ group weights moving the
split between two cgroup v1 blkio groups in the weights' direction, and a
blk-throttle cap holding a group near its cap.

No timed assertions: directions and ratios with wide margins. Needs root,
fio, losetup and a cgroup v1 blkio hierarchy (bench/vlc_linux_env.py).
"""

import os
import subprocess

import pytest

from bench import vlc_linux_env as env
from tests import fixtures

TAG = 'iosched-vlc-test'
JIFFY_MS = 10          # one jiffy at HZ >= 100
REGION_MIB = 64


@pytest.fixture(scope='module')
def dev():
    why = env.missing()
    fixtures.require('VLC host pieces', not why, why)
    env.sweep(TAG)
    cm = env.loop_device('/var/tmp/%s-%d' % (TAG, os.getpid()),
                         4 * REGION_MIB)
    try:
        device = cm.__enter__()
    except (OSError, subprocess.CalledProcessError) as e:
        fixtures.require('loop device', False, str(e))
    try:
        yield device
    finally:
        cm.__exit__(None, None, None)


@pytest.fixture
def groups():
    with env.blkio_groups(('a', 'b'), '%s-%d' % (TAG, os.getpid())) as g:
        yield g


def _job(region, qd=8, seconds=2):
    return {'rw': 'randread', 'bs': '16k', 'qd': qd,
            'offset_mib': region * REGION_MIB, 'size_mib': REGION_MIB,
            'runtime': seconds, 'ramp': 0.5}


@pytest.mark.parametrize('name,tunables', [
    ('mq-deadline', {'read_expire': '10', 'fifo_batch': '1'}),
    ('kyber', {'read_lat_nsec': '500000'}),
    ('bfq', {'slice_idle': '0'}),
])
def test_elevator_and_tunables_take_and_are_restored(dev, name, tunables):
    fixtures.require(name, name in env.available_schedulers(dev),
                     'not offered by %s' % dev)
    before = env.current_scheduler(dev)
    with env.elevator(dev, name, tunables):
        assert env.current_scheduler(dev) == name
        for key, value in tunables.items():
            got = int(env.read_tunable(dev, key))
            # mq-deadline keeps its expiries in jiffies: 10 ms reads back
            # as 12 at HZ=250.
            slack = JIFFY_MS if key.endswith('_expire') else 0
            assert int(value) <= got <= int(value) + slack, (key, got)
    assert env.current_scheduler(dev) == before


def test_bfq_weights_move_the_split(dev, groups):
    fixtures.require('bfq', 'bfq' in env.available_schedulers(dev),
                     'not offered by %s' % dev)
    shares = []
    with env.elevator(dev, 'bfq'):
        for wa, wb in ((1000, 100), (100, 1000)):
            assert env.set_bfq_weight(groups['a'], wa) == wa
            assert env.set_bfq_weight(groups['b'], wb) == wb
            r = env.run_jobs(dev, [('a', groups['a'], _job(0)),
                                   ('b', groups['b'], _job(2))])
            shares.append(r['a']['mbps'] / (r['a']['mbps'] +
                                             r['b']['mbps']))
    # 10:1 weights give about 0.9 of the bytes to the heavy group here;
    # the margins only ask for the right direction.
    assert shares[0] > 0.6, shares
    assert shares[1] < 0.4, shares


def test_throttle_cap_holds_a_group(dev, groups):
    cap = 300
    with env.elevator(dev, 'none'):
        rule = env.set_throttle(groups['b'], dev, 'read_iops', cap)
        assert rule == '%s %d' % (env.majmin(dev), cap)
        try:
            r = env.run_jobs(dev, [('b', groups['b'], _job(2))])
        finally:
            env.clear_throttles(groups['b'], dev)
    assert r['b']['iops'] < 1.5 * cap, r['b']
    assert r['b']['iops'] > 0.3 * cap, r['b']
