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
"""What the SLO loop reads and how its releases are written: windowed
latency percentiles, SLOs from QoS specs, back to the original iotune.
"""

import json

import pytest

from iosched.cinder_qos import translate
from iosched.contract import knob_kinds
from iosched.contract import payload_check
from iosched.contract import payload_sections
from iosched.contract import slo as slo_mod
from iosched.host_agent.actuators import driver as driver_act
from iosched.host_agent.collectors import disk as disk_col
from iosched.host_agent import model
from iosched.host_agent import volume_slo
from tests.unit.host_agent import test_actuator as ta


class HistDriver(object):
    def __init__(self):
        self.samples = []

    def disk_samples(self, inst):
        return [self.samples.pop(0)]


def sample(ts, reqs, busy_ns, hist):
    return model.DiskSample(instance_uuid='u', target='vda', ts=ts,
                            rd_reqs=reqs, wr_reqs=0, rd_bytes=reqs * 4096,
                            wr_bytes=0, total_time_ns=busy_ns,
                            latency_hist=hist)


def test_collector_window_figures_from_two_cumulative_samples():
    n = len(slo_mod.LATENCY_HIST_BOUNDS_NS) + 1
    h0, h1 = [0] * n, [0] * n
    h0[3], h1[3], h1[20] = 7, 7 + 99, 1   # 1 request far slower
    drv = HistDriver()
    drv.samples = [sample(10.0, 100, 10**9, tuple(h0)),
                   sample(12.0, 200, 10**9 + 4 * 10**8, tuple(h1))]
    col = disk_col.DiskCollector(None)
    inst = model.InstanceInfo(uuid='u', name='u')
    assert col.collect(drv, [inst]) == ()
    (r,) = col.collect(drv, [inst])
    assert r.reqs == 100 and r.iops == pytest.approx(50)
    assert r.mean_latency_ms == pytest.approx(4.0)
    assert r.outstanding == pytest.approx(0.2)        # 0.4 s / 2 s
    bound = slo_mod.LATENCY_HIST_BOUNDS_NS
    assert bound[2] / 1e6 < r.latency_pcts_ms['p50'] <= bound[3] / 1e6
    assert r.latency_pcts_ms['max'] == pytest.approx(bound[20] / 1e6)
    assert r.latency_ms('p50') == r.latency_pcts_ms['p50']
    assert r.latency_ms('mean') == pytest.approx(4.0)
    # 4 KiB requests count as one 16 KiB op each
    assert r.ref_ops_per_s() == pytest.approx(50)


def test_a_counter_reset_gives_no_percentiles():
    n = len(slo_mod.LATENCY_HIST_BOUNDS_NS) + 1
    drv = HistDriver()
    drv.samples = [sample(1.0, 10, 10**7, tuple([5] * n)),
                   sample(2.0, 20, 2 * 10**7, tuple([0] * n))]
    col = disk_col.DiskCollector(None)
    inst = model.InstanceInfo(uuid='u', name='u')
    col.collect(drv, [inst])
    (r,) = col.collect(drv, [inst])
    assert r.latency_pcts_ms == {}


SPECS = translate.translate(slo_mod.parse('120iops,60ms,p99,qd=8'))


def test_disk_slo_from_translated_specs():
    got = volume_slo.slo_of(SPECS)
    assert got == slo_mod.SLO(min_iops=120.0, latency_ms=60.0,
                              latency_stat='p99', ref_io_bytes=16384,
                              window_s=1.0, tolerance=0.05, expected_qd=8,
                              slo_class='latency')
    assert volume_slo.slo_of({'total_iops_sec': '100'}) is None
    with pytest.raises(slo_mod.SLOError):
        volume_slo.slo_of({'iosched:min_iops': '-1',
                           'iosched:latency_ms': '5'})


def _inst(serial, qos=None):
    return model.InstanceInfo(uuid='u', name='u', disks=(
        model.DiskInfo('vda', serial=serial, qos=qos or {}),))


def test_resolver_reads_the_file_and_keeps_the_last_good_one(tmp_path):
    path = tmp_path / 'qos.json'
    path.write_text(json.dumps({'vol-1': SPECS}))
    res = volume_slo.Resolver(str(path))
    (inst,) = res.attach([_inst('vol-1')])
    assert inst.disks[0].slo.min_iops == 120.0
    assert inst.disks[0].qos['total_iops_sec'] == SPECS['total_iops_sec']
    (other,) = res.attach([_inst('vol-2')])
    assert other.disks[0].slo is None
    path.write_text('{not json')
    (again,) = res.attach([_inst('vol-1')])
    assert again.disks[0].slo.min_iops == 120.0
    path.write_text(json.dumps(['a list']))
    (still,) = res.attach([_inst('vol-1')])
    assert still.disks[0].slo is not None


def test_resolver_bad_slo_means_no_slo_and_driver_qos_is_used():
    res = volume_slo.Resolver('')
    (inst,) = res.attach([_inst('v', {'iosched:min_iops': 'lots',
                                      'iosched:latency_ms': '5'})])
    assert inst.disks[0].slo is None
    (good,) = res.attach([_inst('v', SPECS)])
    assert good.disks[0].slo.latency_stat == 'p99'


def test_original_value_action_restores_and_retires_the_journal_entry():
    io = knob_kinds.DISK_IOTUNE
    drv = ta.DictKnobs({(io, 'u1', 'vda'): {'total_iops_sec': 500}})
    drv.knobs = lambda: (io,)
    act = driver_act.DriverActuator(drv)
    act.apply(ta.plan(ta.act(io, 'u1', 'vda', {'total_iops_sec': 50})), 1.0)
    assert drv.values[(io, 'u1', 'vda')] == {'total_iops_sec': 50}
    act.apply(ta.plan(ta.act(io, 'u1', 'vda', knob_kinds.ORIGINAL)), 2.0)
    assert drv.values[(io, 'u1', 'vda')] == {'total_iops_sec': 500}
    assert act.journal.pending() == {}
    # again: nothing to restore, nothing written
    writes = len(drv.writes)
    act.apply(ta.plan(ta.act(io, 'u1', 'vda', knob_kinds.ORIGINAL)), 3.0)
    assert len(drv.writes) == writes
    # and a later cap is journaled afresh
    act.apply(ta.plan(ta.act(io, 'u1', 'vda', {'total_iops_sec': 60})), 4.0)
    assert act.journal.pending() == {(io, 'u1', 'vda'):
                                     {'total_iops_sec': 500}}


def test_report_disk_slo_fields_round_trip_and_default_for_1_3():
    d = payload_sections.DiskState(capacity_iops=1000.0, slo_volumes=3,
                                   slo_met=2, slo_missed=1, held_back=1)
    data = {'capacity_iops': 1000.0, 'reserved_iops': 0.0,
            'latency_p50_ms': 0.0, 'latency_p99_ms': 0.0, 'slo_volumes': 3,
            'slo_met': 2, 'slo_missed': 1, 'held_back': 1}
    assert payload_sections.DiskState.from_dict(data, 'disk.') == d
    for k in ('slo_volumes', 'slo_met', 'slo_missed', 'held_back'):
        del data[k]
    got = payload_sections.DiskState.from_dict(data, 'disk.')
    assert got.slo_volumes == 0
    with pytest.raises(payload_check.PayloadError, match='disk.held_back'):
        payload_sections.DiskState.from_dict(dict(data, held_back=-1),
                                             'disk.')


def test_rebase_of_a_held_knob_survives_a_crash(tmp_path):
    from iosched.host_agent.actuators import journal as journal_mod
    io = knob_kinds.DISK_IOTUNE
    path = str(tmp_path / 'j.jsonl')
    drv = ta.DictKnobs({(io, 'u1', 'vda'): {'total_iops_sec': 500}})
    drv.knobs = lambda: (io,)
    act = driver_act.DriverActuator(drv, journal_mod.Journal(path))
    act.apply(ta.plan(ta.act(io, 'u1', 'vda', {'total_iops_sec': 50})), 1.0)
    # held by a policy: only the original changes, the cap stays
    act.rebase(ta.act(io, 'u1', 'vda', {'total_iops_sec': 800}), 't', 2.0)
    assert drv.values[(io, 'u1', 'vda')] == {'total_iops_sec': 50}
    act.journal.close()
    again = driver_act.DriverActuator(drv, journal_mod.Journal(path))
    assert again.recover() == 1
    assert drv.values[(io, 'u1', 'vda')] == {'total_iops_sec': 800}


def test_rebase_of_a_free_knob_writes_it():
    io = knob_kinds.DISK_IOTUNE
    drv = ta.DictKnobs({(io, 'u1', 'vda'): {'total_iops_sec': 500}})
    drv.knobs = lambda: (io,)
    act = driver_act.DriverActuator(drv)
    assert act.rebase(ta.act(io, 'u1', 'vda', {'total_iops_sec': 800}),
                      't', 1.0)
    assert drv.values[(io, 'u1', 'vda')] == {'total_iops_sec': 800}
    assert act.journal.pending() == {}
