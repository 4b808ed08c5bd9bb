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
"""An SLO volume's life, recorded: create -> attach -> enforcement ->
retype -> re-tuned, with Cinder's real API and real guests.

    .venv/bin/python bench/slo_lifecycle.py      # root, ~2 min

* Cinder's real v3 API in a child process (``tests.cinder.server``:
  noauth, sqlite, fake volume driver);
* the admin creates two SLO volume types with ``iosched-slo type create``
  and a volume of the first;
* a TCG guest gets that volume as its disk (``<serial>`` = the volume id),
  on a shared device of 16 MiB/s beside a noisy neighbour without an SLO
  (``iosched.testbed.shared_disk``); "attach" applies what Cinder's
  ``os-initialize_connection`` returns, as Nova's libvirt driver does;
* the agent runs with ``policies = slo``, ``[volume_slo] from_cinder``
  and ``[cinder] auth_type = admin_token`` (no Keystone here): it reads the
  SLO from Cinder, holds the neighbour back when the volume misses;
* the admin retypes the volume (``os-retype``); the agent re-tunes the
  attached disk at its next Cinder read (``cache_ttl`` 2 s here). Cinder
  accepts the retype only because this harness attaches with
  ``os-initialize_connection`` alone and the volume stays ``available``:
  a real Cinder refuses to retype a volume in use whose front-end QoS
  would change (``tests/cloud/test_cloud_slo.py``); what is shown is the
  agent's answer to a QoS change under an attached disk (as after an
  edited QoS spec or a per-GB extend).

Prints a transcript (what each step did and what it measured); the one in
docs/slo.md is from this script.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))))

from bench import testbed_common as tc  # noqa: E402

PREFIX = 'iosched-lc-'
CAPACITY_BPS = 16 * 2**20
GOLD = '150iops,10ms'
BRONZE = '100iops,50ms,class=throughput'


def say(msg):
    print(msg, flush=True)


def _slo(args, srv):
    env = dict(os.environ, OS_AUTH_TYPE='admin_token', OS_TOKEN=srv.token,
               OS_ENDPOINT=srv.root,
               OS_BLOCK_STORAGE_ENDPOINT_OVERRIDE=srv.root,
               OS_BLOCK_STORAGE_API_VERSION='3')
    cmd = [os.path.join(os.path.dirname(sys.executable), 'iosched-slo')]
    out = subprocess.run(cmd + args, env=env, capture_output=True, text=True)
    say('$ iosched-slo %s\n%s%s' % (' '.join(args), out.stdout, out.stderr))
    return out


def _iotune(g):
    from iosched.contract import qos_keys
    got = g.domain.blockIoTune('vda', 1)
    return {k: int(v) for k, v in got.items()
            if v and k in qos_keys.FRONTEND_KEYS}


def _means(g, seconds):
    t0 = time.monotonic()
    time.sleep(seconds)
    return [r.mean_us / 1000 for r in g.disk_reports(since=t0)
            if r.mean_us is not None]


def main():
    from iosched.contract import qos_attach
    from iosched.host_agent import conf as agent_conf
    from iosched.host_agent.drivers.libvirt import threads
    from iosched.testbed import daemons
    from iosched.testbed import shared_disk
    from iosched.testbed import spec as spec_mod
    from iosched.testbed import testbed as testbed_mod
    from tests import cinder_process

    with cinder_process.cinder_server() as srv:
        say('Cinder API (real, child process %d) at %s' % (srv.pid,
                                                            srv.endpoint))
        for name, text in (('gold', GOLD), ('bronze', BRONZE)):
            if _slo(['type', 'create', name, text, '-f', 'json'],
                    srv).returncode:
                return 1
        api = srv.adapter()
        vol = api.post('/volumes', json={'volume': {
            'size': 1, 'name': 'db-data', 'volume_type': 'gold'}}).json()
        vol_id = vol['volume']['id']
        for _ in range(100):
            status = api.get('/volumes/%s' % vol_id).json()['volume'][
                'status']
            if status == 'available':
                break
            time.sleep(0.2)
        say('volume %s (type gold): %s' % (vol_id, status))
        conn = api.post('/volumes/%s/action' % vol_id, json={
            'os-initialize_connection': {'connector': {
                'host': 'compute-1', 'initiator': 'iqn.2026-11.test:c1',
                'ip': '127.0.0.1', 'platform': 'x86_64', 'os_type': 'linux',
                'multipath': False}}}).json()
        at_attach = conn['connection_info']['data']['qos_specs']

        started = daemons.ensure_libvirtd()
        tb = testbed_mod.Testbed(prefix=PREFIX)
        disk = shared_disk.SharedDisk(tb.workdir, PREFIX + 'disk', [64, 64])
        work = tempfile.mkdtemp(prefix='iosched-lc-')
        try:
            tb.down()
            disk.create()
            disk.set_capacity(read_bps=CAPACITY_BPS)
            specs = [
                spec_mod.GuestSpec('db', 'disk', volume_id=vol_id,
                                   disk_dev=disk.loop,
                                   disk_offset=disk.regions[0][0],
                                   opts={'bs': '16384', 'rate': '158',
                                         'qd': '8', 'arrival': 'fixed'}),
                spec_mod.GuestSpec('noisy', 'disk', disk_dev=disk.loop,
                                   disk_offset=disk.regions[1][0],
                                   opts={'bs': '65536', 'qd': '8'})]
            guests = {g.name: g for g in tb.up(specs)}
            for g in guests.values():
                disk.attach(threads.qemu_pid(tc.RUN_DIR, g.domain_name))
            db, noisy = guests['db'], guests['noisy']
            db.domain.setBlockIoTune('vda', qos_attach.iotune(at_attach), 1)
            say('attach: Nova would apply %s; the disk has %s'
                % (qos_attach.iotune(at_attach), _iotune(db)))
            before = _means(db, 6)
            say('no agent: db mean latency per 1-s window (ms): %s'
                % [round(x, 1) for x in before])

            conf_path = os.path.join(work, 'agent.conf')
            with open(conf_path, 'w') as fh:
                fh.write('[host_agent]\npolicies = slo\njournal_path =\n'
                         'disk_capacity_iops = %d\n[volume_slo]\n'
                         'from_cinder = true\ncache_ttl = 2\n[cinder]\n'
                         'auth_type = admin_token\nendpoint = %s\n'
                         'token = %s\nendpoint_override = %s\n'
                         % (CAPACITY_BPS // 16384, srv.endpoint, srv.token,
                            srv.endpoint))
            conf = agent_conf.CONF     # with privsep's options
            conf(['--config-file', conf_path], project='iosched',
                 default_config_files=[])
            ticks = []

            def on_tick(agent):
                facts = agent.last_plan.facts.get('slo')
                v = [x for x in (facts.volumes if facts else ())
                     if x.instance_uuid == db.uuid]
                ticks.append((v[0] if v else None, _iotune(noisy),
                              _iotune(db)))
            with tc.AgentThread(conf, PREFIX, on_tick=on_tick) as at:
                at.wait_ticks(8)
                during = _means(db, 6)
                v = ticks[-1][0]
                say('agent: read from Cinder: %s' % (
                    v.slo if v is not None else None))
                say('agent: db %s (Ind %+.2f); neighbour held at %s'
                    % (v.verdict, v.ind or 0, ticks[-1][1]))
                say('agent: db mean latency per 1-s window (ms): %s'
                    % [round(x, 1) for x in during])
                resp = api.post('/volumes/%s/action' % vol_id, json={
                    'os-retype': {'new_type': 'bronze',
                                  'migration_policy': 'never'}})
                say('retype in use -> bronze: HTTP %d' % resp.status_code)
                t0 = time.monotonic()
                while time.monotonic() - t0 < 20:
                    got = _iotune(db)
                    if got != qos_attach.iotune(at_attach):
                        break
                    time.sleep(0.2)
                say('re-tuned after %.1f s: the disk has %s' % (
                    time.monotonic() - t0, _iotune(db)))
                at.wait_ticks(2)
                v = ticks[-1][0]
                say('agent: now defends %s' % (v.slo if v else None))
            say('agent stopped: restored %d knobs; the disk keeps %s, the '
                'neighbour has %s' % (at.restored, _iotune(db),
                                      _iotune(noisy)))
            say('before: median %.1f ms; with the agent: median %.1f ms'
                % (statistics.median(before), statistics.median(during)))
        finally:
            tc.shutdown(tb, started)
            disk.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
