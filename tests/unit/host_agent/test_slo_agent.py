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
"""The whole agent with the slo policy on a simulated host: a volume
missing its SLO beside a noisy neighbour, the neighbour held back through
the journaled actuator, everything back to the static ceilings on stop.
"""

import json

from oslo_config import cfg
import pytest

from iosched.cinder_qos import translate
from iosched.contract import knob_kinds
from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.host_agent import assembly
from iosched.host_agent.conf import opts
from iosched.host_agent import model
from iosched.host_agent.policies import slo
from iosched.host_agent.policies import slo_window
from iosched.simdriver import driver as sim_driver
from iosched.simulator import host as sim_host
from iosched.simulator import spec as S

SLO = '500iops,20ms,p99,qd=4'


@pytest.fixture(autouse=True)
def _no_leaked_overrides():
    # oslo.config keeps overrides in the OptGroup objects the conf modules
    # share between ConfigOpts instances: clear what _agent() set, or it
    # shows through the global CONF in later tests.
    yield
    for name in ('journal_path', 'volume_qos_file'):
        cfg.CONF.clear_override(name, 'host_agent')


def _agent(tmp_path):
    conf = cfg.ConfigOpts()
    opts.register_all(conf)
    specs = translate.translate(slo_mod.parse(SLO))
    qos_file = tmp_path / 'qos.json'
    qos_file.write_text(json.dumps({'vol-db': specs}))
    conf([], default_config_files=[])
    conf.set_override('journal_path', str(tmp_path / 'journal.jsonl'),
                      'host_agent')
    conf.set_override('volume_qos_file', str(qos_file), 'host_agent')
    host = sim_host.SimHost(S.HostSpec(
        name='h', pcpus=2, disk=S.DiskSpec(service_us=1000, parallelism=4)),
        seed=7)
    drv = sim_driver.SimulatedDriver(host)
    for uuid, serial, wl in (
            ('db', 'vol-db', S.DiskClosedLoop(outstanding=4)),
            ('nb', 'vol-nb', S.DiskClosedLoop(outstanding=32,
                                              io_bytes=16384))):
        host.add_vm(S.VmSpec(uuid=uuid, name=uuid, vcpus=(wl,),
                             disks=('vda',)))
        drv.add_instance(model.InstanceInfo(
            uuid=uuid, name=uuid, disks=(model.DiskInfo('vda', serial),)))
    # What Nova applies at attach: the SLO volume's static ceiling.
    static = {k: float(v) for k, v in specs.items()
              if k in qos_keys.FRONTEND_KEYS}
    host.set_disk_iotune('db', 'vda', static)
    return _new_agent(conf, drv), host, static


def _new_agent(conf, drv):
    return assembly.build_agent(conf, drv, policies=[slo.SloPolicy(conf)])


def _run(ag, host, seconds):
    for _ in range(seconds):
        host.run_until(host.now_us + 1000000)
        ag.tick()


def test_neighbour_held_back_then_everything_restored_on_stop(tmp_path):
    ag, host, static = _agent(tmp_path)
    ag.start()
    _run(ag, host, 12)
    facts = ag.last_plan.facts['slo']
    (db,) = [v for v in facts.volumes if v.instance_uuid == 'db']
    assert db.slo is not None and db.slo.latency_stat == 'p99'
    assert db.stat == 'p99'        # judged on the histogram's p99
    # the neighbour holds a cap the agent set; the SLO volume its ceiling
    held = host.get_disk_iotune('nb', 'vda')
    assert 0 < held['total_iops_sec'] < 4000
    report = ag.last_report          # every 10 ticks by default
    assert report.disk.slo_volumes == 1 and report.disk.held_back == 1
    decisions = ag.actuator.decisions()
    rule = decisions[(knob_kinds.DISK_IOTUNE, 'nb', 'vda')].rule
    assert rule == slo.RULE_HOLD
    # the last windows meet the SLO
    assert db.verdict == slo_window.MET, db
    ag.shutdown()
    assert host.get_disk_iotune('nb', 'vda') == {}
    assert host.get_disk_iotune('db', 'vda') == static


def test_a_restart_after_a_crash_restores_from_the_journal(tmp_path):
    ag, host, static = _agent(tmp_path)
    ag.start()
    _run(ag, host, 6)
    assert host.get_disk_iotune('nb', 'vda')
    # the process dies without shutdown(); a new agent on the same journal
    ag.actuator.journal.close()
    ag2 = _new_agent(ag.conf, ag.driver)
    ag2.start()
    assert host.get_disk_iotune('nb', 'vda') == {}
    assert host.get_disk_iotune('db', 'vda') == static


def test_a_changed_qos_spec_is_applied_and_becomes_the_original(tmp_path):
    # An in-use retype (or an extend with per-GB keys) changes the limits
    # Nova would apply; Nova applies them only at attach, the agent now.
    ag, host, static = _agent(tmp_path)
    ag.start()
    _run(ag, host, 6)                     # the neighbour is held back
    gold = translate.translate(slo_mod.parse('800iops,20ms,p99,qd=4'))
    (tmp_path / 'qos.json').write_text(json.dumps({'vol-db': gold}))
    new_static = {k: int(v) for k, v in gold.items()
                  if k in qos_keys.FRONTEND_KEYS}
    _run(ag, host, 1)
    got = host.get_disk_iotune('db', 'vda')
    assert {k: int(v) for k, v in got.items()} == new_static
    assert ag.actuator.decisions()[
        (knob_kinds.DISK_IOTUNE, 'db', 'vda')].rule == 'slo.retune'
    ag.shutdown()
    got = host.get_disk_iotune('db', 'vda')
    assert {k: int(v) for k, v in got.items()} == new_static
    assert host.get_disk_iotune('nb', 'vda') == {}


def test_a_retype_while_the_agent_was_down_is_applied_at_first_sight(
        tmp_path):
    # The disk still has Nova's attach-time limits of the old type; the
    # volume's QoS (what the agent reads) is already the new one.
    ag, host, static = _agent(tmp_path)
    gold = translate.translate(slo_mod.parse('800iops,20ms,p99,qd=4'))
    (tmp_path / 'qos.json').write_text(json.dumps({'vol-db': gold}))
    new_static = {k: int(v) for k, v in gold.items()
                  if k in qos_keys.FRONTEND_KEYS}
    assert new_static != {k: int(v) for k, v in static.items()}
    ag.start()
    _run(ag, host, 1)
    got = host.get_disk_iotune('db', 'vda')
    assert {k: int(v) for k, v in got.items()} == new_static
    decision = ag.actuator.decisions()[
        (knob_kinds.DISK_IOTUNE, 'db', 'vda')]
    assert decision.rule == 'slo.retune'
    assert 'first sight' in decision.reason
    ag.shutdown()                     # the new limits are the original now
    got = host.get_disk_iotune('db', 'vda')
    assert {k: int(v) for k, v in got.items()} == new_static


def test_limits_that_already_match_are_not_written_at_first_sight(tmp_path):
    ag, host, static = _agent(tmp_path)
    ag.start()
    _run(ag, host, 1)
    assert (knob_kinds.DISK_IOTUNE, 'db', 'vda') not in \
        ag.actuator.decisions()
    assert host.get_disk_iotune('db', 'vda') == static
