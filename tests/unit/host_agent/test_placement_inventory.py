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
"""The I/O inventory publisher against a fake Placement (no Nova).

The pure core (``wanted_inventories``, ``reserve_unclaimed``,
``plan_inventories``) is tested with tables; ``FakeInventoryPlacement`` extends
the trait tests' fake with child providers, resource classes, inventories and
usages (it can fake a concurrent writer, allocations made meanwhile, missing
providers and broken connections). One test goes through the real keystoneauth1
Session/Adapter with requests_mock answering, one through io-host-agent's
``main()``.
"""

import json
import logging
import os
import subprocess
import sys
import types
import urllib.parse

from keystoneauth1 import exceptions as ks_exc
from oslo_config import cfg
import pytest
import requests_mock

from iosched.contract import payload
from iosched.contract import payload_sections
from iosched.host_agent.conf import io_inventory as io_inventory_conf
from iosched.host_agent.conf import placement as placement_conf
from iosched.host_agent import placement_base
from iosched.host_agent import placement_inventory as pi
from iosched.host_agent import placement_sizing as ps
from tests import fixtures
from tests.unit.host_agent.test_placement_trait import Clock
from tests.unit.host_agent.test_placement_trait import FakePlacement
from tests.unit.host_agent.test_placement_trait import Resp

RP = 'rp-uuid-1'
CHILD = 'host1:iosched'
INV = ps.inventory


def ours(caplog):
    """The records of the module under test (a background thread of an
    earlier test, e.g. a publisher or a listener, may log meanwhile; and
    an earlier test may have left the logger at INFO, so each test clears
    caplog before the block it checks).
    """
    return [r for r in caplog.records if r.name == pi.__name__]


def report(pcpus=4, supported=True, mechanism='slice', max_per_pcpu=3,
           dl_bw_limit=0.0, dl_bw_foreign=0.0, capacity_iops=0.0,
           io_vcpus=0):
    return payload.HostReport(
        host='host1', ts=1.0, seq=1, report_interval=1.0, pcpus=pcpus,
        io_vcpus=io_vcpus,
        lsvm=payload_sections.LsvmState(
            supported=supported, mechanism=mechanism,
            max_per_pcpu=max_per_pcpu, dl_bw_limit=dl_bw_limit,
            dl_bw_foreign=dl_bw_foreign),
        disk=payload_sections.DiskState(capacity_iops=capacity_iops))


class FakeInventoryPlacement(FakePlacement):
    """The trait fake plus providers with parents, inventories, usages."""

    def __init__(self, providers=None):
        super().__init__(providers=providers)
        self.parents = {}          # uuid -> parent uuid
        self.inventories = {u: {} for u in self.providers.values()}
        self.usages = {}           # uuid -> {class: used}
        self.classes = {'VCPU', 'MEMORY_MB', 'DISK_GB'}
        self.allocate_meanwhile = None   # (class, used) set before a PUT

    def add_provider(self, name, uuid, parent=None):
        with self.lock:
            self._add(name, uuid, parent)

    def _add(self, name, uuid, parent):     # with self.lock held
        self.providers[name] = uuid
        self.traits[uuid] = set()
        self.generation[uuid] = 1
        self.inventories[uuid] = {}
        if parent:
            self.parents[uuid] = parent

    def post(self, url, microversion=None, **kw):
        return self._serve('post', url, microversion, kw)

    def child_uuid(self, compute='host1'):
        return self.providers.get(pi.child_name(compute))

    def _route(self, method, url, body):
        if method == 'get' and url.startswith('/resource_providers?name='):
            name = urllib.parse.unquote(url.split('=', 1)[1])
            if name not in self.providers:
                return Resp(200, {'resource_providers': []})
            uuid = self.providers[name]
            return Resp(200, {'resource_providers': [{
                'uuid': uuid, 'name': name, 'generation':
                    self.generation[uuid],
                'parent_provider_uuid': self.parents.get(uuid)}]})
        if method == 'post' and url == '/resource_providers':
            if body['name'] in self.providers:
                return Resp(409, {'errors': [{'detail': 'name exists'}]})
            if body['parent_provider_uuid'] not in self.generation:
                return Resp(400, {'errors': [{'detail': 'no parent'}]})
            uuid = 'child-%d' % len(self.providers)
            self._add(body['name'], uuid, body['parent_provider_uuid'])
            return Resp(200, {'uuid': uuid, 'name': body['name']})
        if method == 'put' and url.startswith('/resource_classes/'):
            name = url.rsplit('/', 1)[1]
            created = name not in self.classes
            self.classes.add(name)
            return Resp(201 if created else 204)
        if '/inventories' in url or '/usages' in url:
            return self._inventories(method, url.split('/')[2], url, body)
        return super()._route(method, url, body)

    def _inventories(self, method, uuid, url, body):
        if uuid not in self.inventories:
            return Resp(404)
        if url.endswith('/usages'):
            return Resp(200, {'usages': dict(self.usages.get(uuid, {})),
                              'resource_provider_generation':
                                  self.generation[uuid]})
        if method == 'get':
            return Resp(200, {'inventories': json.loads(json.dumps(
                self.inventories[uuid])), 'resource_provider_generation':
                self.generation[uuid]})
        if self.allocate_meanwhile:
            rc, used = self.allocate_meanwhile
            self.allocate_meanwhile = None
            self.usages.setdefault(uuid, {})[rc] = used
            self.generation[uuid] += 1
        if self.conflicts:
            self.conflicts -= 1
            self.generation[uuid] += 1
            return Resp(409, {'errors': [{'code':
                                          'placement.concurrent_update'}]})
        if body['resource_provider_generation'] != self.generation[uuid]:
            return Resp(409, {'errors': [{'code':
                                          'placement.concurrent_update'}]})
        new = body['inventories']
        for rc, used in self.usages.get(uuid, {}).items():
            if used and rc not in new:
                return Resp(409, {'errors': [{'code':
                                              'placement.inventory.inuse'}]})
        for rc, inv in new.items():
            if rc not in self.classes:
                return Resp(400, {'errors': [{'detail': 'unknown %s' % rc}]})
            if inv['total'] < 1 or inv['reserved'] > inv['total']:
                return Resp(400, {'errors': [{'detail': 'bad %s' % rc}]})
        self.inventories[uuid] = json.loads(json.dumps(new))
        self.generation[uuid] += 1
        return Resp(200)


def publisher(fake, compute='host1', **kw):
    kw.setdefault('retry_initial', 2.0)
    kw.setdefault('retry_max', 300.0)
    return pi.InventoryPublisher(lambda: pi.PlacementInventories(fake),
                                 compute, **kw)


# -- the pure core -----------------------------------------------------------

D = ps.Options()


@pytest.mark.parametrize('rep, options, wanted, warned', [
    # slice: 4 pCPUs x 3 x 500; capacity unknown: no SLO class
    (report(), D, {ps.IO_VCPU: INV(4), ps.LSVM_BW: INV(6000)}, []),
    (report(mechanism='weight', max_per_pcpu=2, capacity_iops=1234.5),
     ps.Options(slo_capacity_fraction=0.8, lsvm_vcpu_share=0.25),
     {ps.IO_VCPU: INV(4), ps.LSVM_BW: INV(4 * 2 * 250),
      ps.SLO_IOPS: INV(987)}, []),
    # deadline: dl_bw_limit 0.95 x 4 CPUs -> 3800 (not 3799), foreign
    # 0.1501 -> 151 reserved, plus the configured 49
    (report(mechanism='deadline', dl_bw_limit=3.8, dl_bw_foreign=0.1501),
     ps.Options(reserved_lsvm_bw=49),
     {ps.IO_VCPU: INV(4), ps.LSVM_BW: INV(3800, 200)}, []),
    (report(mechanism='deadline', dl_bw_limit=0.95),
     D, {ps.IO_VCPU: INV(4), ps.LSVM_BW: INV(950)}, []),
    # no LSVM support: no LSVM class, whatever the mechanism
    (report(supported=False, mechanism='deadline', dl_bw_limit=3.0,
            capacity_iops=100.0),
     D, {ps.IO_VCPU: INV(4), ps.SLO_IOPS: INV(100)}, []),
    (report(pcpus=3), ps.Options(max_io_vcpus_per_pcpu=1.5,
                                 reserved_io_vcpus=2),
     {ps.IO_VCPU: INV(4, 2), ps.LSVM_BW: INV(4500)}, []),
    # total below 1: left out, with a warning
    (report(), ps.Options(max_io_vcpus_per_pcpu=0.0),
     {ps.LSVM_BW: INV(6000)}, [ps.IO_VCPU + ' left out: total 0']),
    (report(mechanism='deadline', dl_bw_limit=0.0), D,
     {ps.IO_VCPU: INV(4)}, [ps.LSVM_BW + ' left out: total 0']),
    (report(capacity_iops=10.0), ps.Options(slo_capacity_fraction=0.05),
     {ps.IO_VCPU: INV(4), ps.LSVM_BW: INV(6000)},
     [ps.SLO_IOPS + ' left out: total 0']),
    # reserved above total: cut, with a warning
    (report(capacity_iops=500.0), ps.Options(reserved_slo_iops=800),
     {ps.IO_VCPU: INV(4), ps.LSVM_BW: INV(6000), ps.SLO_IOPS: INV(500, 500)},
     [ps.SLO_IOPS + ' reserved 800 cut to the total 500']),
    (report(mechanism='deadline', dl_bw_limit=1.0, dl_bw_foreign=1.2), D,
     {ps.IO_VCPU: INV(4), ps.LSVM_BW: INV(1000, 1000)},
     [ps.LSVM_BW + ' reserved 1200 cut to the total 1000']),
])
def test_wanted_inventories(rep, options, wanted, warned):
    got, warnings = ps.wanted_inventories(rep, options)
    assert got == wanted
    assert len(warnings) == len(warned)
    for warning, start in zip(warnings, warned):
        assert warning.startswith(start), warning
        assert ' (' in warning       # names what the total was made of


def test_an_unknown_mechanism_is_named():
    rep = types.SimpleNamespace(
        pcpus=2, disk=types.SimpleNamespace(capacity_iops=0),
        lsvm=types.SimpleNamespace(supported=True, mechanism='rt'))
    with pytest.raises(ValueError, match="'rt': accepted are deadline"):
        ps.wanted_inventories(rep, D)


@pytest.mark.parametrize('kw, text', [
    ({'max_io_vcpus_per_pcpu': -1.0}, 'max_io_vcpus_per_pcpu = -1.0'),
    ({'lsvm_vcpu_share': 0.0}, 'from 0.001 to 1'),
    ({'lsvm_vcpu_share': 1.5}, 'lsvm_vcpu_share = 1.5'),
    ({'slo_capacity_fraction': float('nan')}, 'slo_capacity_fraction'),
    ({'reserved_io_vcpus': -1}, 'an integer >= 0'),
    ({'reserved_lsvm_bw': 1.5}, 'milli-CPUs'),
    ({'reserved_slo_iops': True}, 'reserved_slo_iops = True'),
    ({'reserve_unclaimed_io_vcpus': 1}, 'accepted is true or false'),
])
def test_options_refuse_bad_values(kw, text):
    with pytest.raises(ValueError, match=r'\[io_inventory\]') as e:
        ps.Options(**kw)
    assert text in str(e.value)


A, B, C = ps.IO_VCPU, ps.LSVM_BW, ps.SLO_IOPS


def placed(inv, **extra):
    """An inventory as Placement answers it (field order its own)."""
    return dict(sorted(dict(inv, **extra).items()))


@pytest.mark.parametrize('current, usages, wanted, new, held', [
    ({}, {}, {A: INV(4)}, {A: INV(4)}, []),                   # first time
    ({A: placed(INV(4))}, {}, {A: INV(4)}, None, []),         # as wanted
    ({A: placed(INV(4))}, {}, {A: INV(8)}, {A: INV(8)}, []),  # grows
    ({A: placed(INV(4)), C: placed(INV(9))}, {C: 0}, {A: INV(4)},
     {A: INV(4)}, []),                                        # unused: gone
    ({A: placed(INV(4)), C: placed(INV(9))}, {C: 3}, {A: INV(4)},
     {A: INV(4), C: INV(9, 9)}, [C]),                         # in use: held
    ({A: placed(INV(4)), C: placed(INV(9, 9))}, {C: 3}, {A: INV(4)},
     None, [C]),                                              # still held
    ({A: placed(INV(4)), B: placed(INV(6000))}, {B: 500, A: 2}, {A: INV(2)},
     {A: INV(2), B: INV(6000, 6000)}, [B]),      # shrinks below its usage
    ({A: placed(INV(4), allocation_ratio=16.0)}, {}, {A: INV(4)},
     {A: INV(4)}, []),                           # someone changed a field
    ({A: placed(INV(4))}, {}, {}, {}, []),       # nothing left to offer
])
def test_plan_inventories(current, usages, wanted, new, held):
    assert ps.plan_inventories(current, usages, wanted) == (new, held)


@pytest.mark.parametrize('inventories, io_vcpus, usage, reserved, warned', [
    ({A: INV(4), B: INV(6000)}, 0, 0, 0, ''),          # nothing measured
    ({A: INV(4)}, 2, 2, 0, ''),                         # all claimed
    ({A: INV(4)}, 2, 0, 2, ''),                         # unclaimed VMs
    ({A: INV(8, 1)}, 6, 2, 5, ''),                      # + configured 1
    ({A: INV(4)}, 0, 4, 0, ''),                         # claimed but idle
    ({A: INV(4, 1)}, 2, 4, 1, ''),                      # idle: never < 0
    ({A: INV(4, 1)}, 6, 0, 4,
     A + ' reserved 7 cut to the total 4 (reserved 1 + 6 unclaimed: 6 '
     'measured I/O vCPUs - 0 allocated): nothing of it is left'),
    ({A: INV(4, 4)}, 2, 0, 4, ''),       # configured alone full: warned
    ({A: INV(4, 1)}, None, 0, 1, ''),                   # option off
])
def test_reserve_unclaimed(inventories, io_vcpus, usage, reserved, warned):
    got, warnings = ps.reserve_unclaimed(inventories, io_vcpus, usage)
    assert got == dict(inventories, **{A: dict(inventories[A],
                                               reserved=reserved)})
    assert [w[:len(warned)] for w in warnings] == ([warned] if warned
                                                   else [])
    assert inventories[A]['reserved'] <= reserved   # the input: unchanged


def test_reserve_unclaimed_without_the_class():
    assert ps.reserve_unclaimed({B: INV(6000)}, 2, 0) == ({B: INV(6000)},
                                                           ())


def test_describe_change():
    assert ps.describe_change(
        {A: INV(4), B: INV(6000), C: INV(9)},
        {A: INV(8), B: INV(6000), C: INV(9, 9)}) == [
        'CUSTOM_IOSCHED_IO_VCPU total 4->8 reserved 0->0',
        'CUSTOM_IOSCHED_SLO_IOPS total 9->9 reserved 0->9']
    assert ps.describe_change({A: INV(4)}, {B: INV(1, 1)}) == [
        'CUSTOM_IOSCHED_IO_VCPU removed',
        'CUSTOM_IOSCHED_LSVM_BW total 1 reserved 1 (new)']


# -- one attempt (set_inventories) ------------------------------------------

def test_creates_the_child_the_classes_and_the_inventories():
    fake = FakeInventoryPlacement()
    wanted, _ = ps.wanted_inventories(report(capacity_iops=100.0), D)
    out = pi.set_inventories(pi.PlacementInventories(fake), 'host1', wanted)
    child = fake.child_uuid()
    assert out.changed and out.held == [] and out.before == {}
    assert fake.parents[child] == RP
    assert fake.inventories[child] == wanted
    assert fake.inventories[RP] == {}           # the compute node: untouched
    assert {A, B, C} <= fake.classes
    assert fake.microversions == {'1.26'}
    assert [c for c in fake.calls if c[0] != 'get'] == [
        ('post', '/resource_providers'),
        ('put', '/resource_classes/' + A),
        ('put', '/resource_classes/' + B),
        ('put', '/resource_classes/' + C),
        ('put', '/resource_providers/%s/inventories' % child)]
    fake.calls.clear()                           # again: read only
    out = pi.set_inventories(pi.PlacementInventories(fake), 'host1', wanted)
    assert not out.changed
    assert [c[0] for c in fake.calls] == ['get'] * 3


def test_conflicts_are_re_read_and_endless_ones_give_up():
    fake = FakeInventoryPlacement()
    api = pi.PlacementInventories(fake)
    fake.conflicts = 2
    assert pi.set_inventories(api, 'host1', {A: INV(4)}).changed
    assert fake.inventories[fake.child_uuid()] == {A: INV(4)}
    fake.conflicts = 100
    with pytest.raises(placement_base.GenerationConflict):
        pi.set_inventories(api, 'host1', {A: INV(5)}, max_conflicts=3)
    assert fake.conflicts == 97


def test_allocations_made_meanwhile_hold_the_class():
    fake = FakeInventoryPlacement()
    api = pi.PlacementInventories(fake)
    pi.set_inventories(api, 'host1', {A: INV(4), C: INV(900)})
    fake.allocate_meanwhile = (C, 100)     # a boot lands between read & PUT
    out = pi.set_inventories(api, 'host1', {A: INV(4)})
    assert out.changed and out.held == [C]
    assert fake.inventories[fake.child_uuid()] == {A: INV(4),
                                                   C: INV(900, 900)}
    fake.usages[fake.child_uuid()][C] = 0  # the server is gone
    out = pi.set_inventories(api, 'host1', {A: INV(4)})
    assert out.changed and out.held == []
    assert fake.inventories[fake.child_uuid()] == {A: INV(4)}


@pytest.mark.parametrize('setup, error, text', [
    (lambda f: f.providers.clear(), placement_base.ProviderNotFound,
     "no resource provider named 'host1' in Placement (has nova-compute "
     "started on this host? [io_inventory] provider_name"),
    (lambda f: f.add_provider(CHILD, 'old-child', 'old-parent'),
     placement_base.PlacementError,
     "'host1:iosched' (old-child) is not a child of the compute node "
     "'host1' (rp-uuid-1) but of old-parent"),
    (lambda f: setattr(f, 'fail', 503), placement_base.PlacementError,
     'HTTP 503'),
])
def test_errors_name_the_problem(setup, error, text):
    fake = FakeInventoryPlacement()
    setup(fake)
    with pytest.raises(error) as e:
        pi.set_inventories(pi.PlacementInventories(fake), 'host1',
                           {A: INV(1)})
    assert text in str(e.value)


def test_a_child_created_meanwhile_is_used():
    fake = FakeInventoryPlacement()
    api = pi.PlacementInventories(fake)
    real_find = api.find_provider
    seen = []

    def racing_find(name):
        if name == CHILD and not seen:
            seen.append(name)               # another agent creates it now
            fake.add_provider(CHILD, 'their-child', RP)
            return None
        return real_find(name)

    api.find_provider = racing_find
    assert api.ensure_child('host1') == 'their-child'


# -- the publisher ------------------------------------------------------------

def test_sync_waits_for_the_compute_node_then_publishes(caplog):
    fake = FakeInventoryPlacement(providers={})
    clock = Clock()
    pub = publisher(fake, clock=clock)
    assert pub.sync() is False and fake.calls == []     # no report yet
    pub.report_host_io(report(capacity_iops=100.0))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=pi.__name__):
        assert pub.sync() is False
    assert pub.state.failures == 1
    [warning] = [r.getMessage() for r in ours(caplog)
                 if r.levelno == logging.WARNING]
    assert warning.startswith(
        "I/O inventory: could not set the inventories of resource provider "
        "'host1:iosched': ProviderNotFound: no resource provider named "
        "'host1'")
    assert warning.endswith('retrying in 2 s')
    assert pub._delay() == 2.0
    fake.add_provider('host1', RP)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=pi.__name__):
        assert pub.sync() is True
    infos = [r.getMessage() for r in ours(caplog)
             if r.levelno == logging.INFO]
    assert infos[-1] == (
        "I/O inventory: resource provider 'host1:iosched': "
        'CUSTOM_IOSCHED_IO_VCPU total 4 reserved 0 (new); '
        'CUSTOM_IOSCHED_LSVM_BW total 6000 reserved 0 (new); '
        'CUSTOM_IOSCHED_SLO_IOPS total 100 reserved 0 (new)')
    assert pub._delay() == 300.0
    assert pub.state.changes == 1


def test_warnings_of_the_sizing_are_logged_once_per_change(caplog):
    pub = publisher(FakeInventoryPlacement(),
                    options=ps.Options(reserved_io_vcpus=10))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=pi.__name__):
        for _ in range(3):                       # three ticks, same report
            pub.report_host_io(report())
        pub.report_host_io(report(pcpus=8))      # a change: warned again
    warnings = [r.getMessage() for r in ours(caplog)]
    assert warnings == [
        "I/O inventory of 'host1:iosched': CUSTOM_IOSCHED_IO_VCPU reserved "
        '10 cut to the total 4 (4 pCPUs x max_io_vcpus_per_pcpu 1): '
        'nothing of it is left to allocate',
        "I/O inventory of 'host1:iosched': CUSTOM_IOSCHED_IO_VCPU reserved "
        '10 cut to the total 8 (8 pCPUs x max_io_vcpus_per_pcpu 1): '
        'nothing of it is left to allocate']


def test_a_held_class_is_a_warning_and_rechecks_are_read_only(caplog):
    fake = FakeInventoryPlacement()
    pub = publisher(fake)
    pub.want_from_report(report(capacity_iops=100.0))
    assert pub.sync()
    fake.usages[fake.child_uuid()] = {C: 50}
    pub.want_from_report(report(capacity_iops=0.0))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=pi.__name__):
        assert pub.sync()
    [warning] = [r.getMessage() for r in ours(caplog)]
    assert ('CUSTOM_IOSCHED_SLO_IOPS of resource provider '
            "'host1:iosched' is no longer offered but servers still use "
            'it: kept with reserved = total (100)') in warning
    assert pub.state.confirmed == pub.state.wanted   # settled: no busy loop
    n = len(fake.writes())
    caplog.clear()
    assert pub.sync() and pub.sync()
    assert len(fake.writes()) == n and ours(caplog) == []


def test_unclaimed_io_vcpus_are_reserved_and_settle(caplog):
    fake = FakeInventoryPlacement()
    pub = publisher(fake, options=ps.Options(reserved_io_vcpus=1))
    pub.want_from_report(report(pcpus=8))
    assert pub.sync()
    child = fake.child_uuid()
    assert fake.inventories[child][A] == INV(8, 1)
    n = len(fake.writes())
    # an unclaimed 2-vCPU VM turns I/O-bound: a change, synced at once
    assert pub.want_from_report(report(pcpus=8, io_vcpus=2)) == ps.Wanted(
        {A: INV(8, 1), B: INV(8 * 3 * 500)}, 2)
    assert pub._delay() == 0
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=pi.__name__):
        assert pub.sync()
    assert fake.inventories[child][A] == INV(8, 3)
    assert [r.getMessage() for r in ours(caplog)] == [
        "I/O inventory: resource provider 'host1:iosched': "
        'CUSTOM_IOSCHED_IO_VCPU total 8->8 reserved 1->3 '
        '(CUSTOM_IOSCHED_IO_VCPU reserved 3 = 1 configured + max(0, 2 '
        'measured I/O vCPUs - 0 allocated))']
    # settled: the same measurement and usage write nothing, whether the
    # report repeats or a recheck comes
    caplog.clear()
    assert pub.want_from_report(report(pcpus=8, io_vcpus=2)) is not None
    assert pub.sync() and pub.sync()
    assert len(fake.writes()) == n + 1 and ours(caplog) == []
    # a 2-vCPU server claiming its slots boots and turns I/O-bound: the
    # measurement grows by what the usage grew, the reserve stays
    fake.usages[child] = {A: 2}
    pub.want_from_report(report(pcpus=8, io_vcpus=4))
    assert pub.sync() and pub.last_outcome.changed is False
    assert len(fake.writes()) == n + 1
    # the unclaimed VM is deleted: the reserve is the configured one again
    pub.want_from_report(report(pcpus=8, io_vcpus=2))
    assert pub.sync() and fake.inventories[child][A] == INV(8, 1)
    # more unclaimed than the total: cut, with a warning once
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=pi.__name__):
        pub.want_from_report(report(pcpus=8, io_vcpus=12))
        assert pub.sync() and pub.sync()
    assert fake.inventories[child][A] == INV(8, 8)
    assert [r.getMessage() for r in ours(caplog)] == [
        "I/O inventory of 'host1:iosched': CUSTOM_IOSCHED_IO_VCPU reserved "
        '11 cut to the total 8 (reserved 1 + 10 unclaimed: 12 measured I/O '
        'vCPUs - 2 allocated): nothing of it is left to allocate']


def test_reserve_unclaimed_io_vcpus_off_reads_no_usages():
    fake = FakeInventoryPlacement()
    pub = publisher(fake, options=ps.Options(
        reserve_unclaimed_io_vcpus=False))
    assert pub.want_from_report(report(io_vcpus=3)).io_vcpus is None
    assert pub.sync()
    assert fake.inventories[fake.child_uuid()][A] == INV(4)
    fake.calls.clear()
    pub.want_from_report(report(io_vcpus=4))      # no change: not wanted
    assert pub.sync()
    assert [c[0] for c in fake.calls] == ['get'] * 3
    assert not any(c[1].endswith('/usages') for c in fake.calls)


@pytest.mark.parametrize('break_it', [
    lambda f: setattr(f, 'raise_exc', ks_exc.ConnectFailure('refused')),
    lambda f: setattr(f, 'raise_exc', ks_exc.Unauthorized('bad password')),
    lambda f: setattr(f, 'fail', 500),
])
def test_sync_never_raises(break_it):
    fake = FakeInventoryPlacement()
    break_it(fake)
    pub = publisher(fake)
    pub.want_from_report(report())
    assert pub.sync() is False
    assert pub.state.failures == 1 and pub.state.confirmed is None


@pytest.mark.parametrize('bad', [
    None, object(), types.SimpleNamespace(pcpus=4, lsvm=None),
    types.SimpleNamespace(pcpus=4, disk=None, lsvm=types.SimpleNamespace(
        supported=True, mechanism='rt'))])
def test_a_malformed_report_does_not_raise(bad):
    pub = publisher(FakeInventoryPlacement())
    pub.report_host_io(bad)
    assert pub.state.wanted is None


def test_the_real_agent_on_a_simulated_host_wants_inventories():
    sim, driver = fixtures.sim_host_with_vms()
    fake = FakeInventoryPlacement(providers={'compute-1': RP})
    pub = publisher(fake, compute='compute-1')
    agent = fixtures.make_agent(driver, reporter=placement_base.
                                with_publisher(None, pub))
    fixtures.run_ticks(sim, agent, 2)
    rep = agent.last_report
    assert pub.state.wanted == ps.Wanted(
        ps.wanted_inventories(rep, D)[0], rep.io_vcpus)
    assert pub.state.wanted.inventories[A] == INV(rep.pcpus)
    assert fake.calls == []                               # no HTTP on tick
    assert pub.sync()
    assert fake.inventories[fake.child_uuid('compute-1')] == dict(
        pub.state.wanted.inventories,
        **{A: INV(rep.pcpus, min(rep.pcpus, rep.io_vcpus))})


# -- configuration -----------------------------------------------------------

def _conf(tmp_path, **opts):
    """A conf from a file (set_override would leak into other tests: the
    groups' copies share their options' state).
    """
    groups = {}
    for k, v in opts.items():
        group, name = k.split('__')
        groups.setdefault(group, []).append('%s = %s' % (name, v))
    path = tmp_path / 'agent.conf'
    path.write_text(''.join('[%s]\n%s\n' % (g, '\n'.join(lines))
                            for g, lines in groups.items()))
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    io_inventory_conf.register_opts(conf)
    conf([], default_config_files=[str(path)])
    return conf


def test_start_from_conf_is_off_by_default(tmp_path):
    assert pi.start_from_conf(_conf(tmp_path), 'host1') is None


@pytest.mark.parametrize('opts, name', [
    ({}, 'compute-7'),
    ({'lsvm_trait__provider_name': 'c7.example.org'}, 'c7.example.org'),
    ({'lsvm_trait__provider_name': 'c7.example.org',
      'io_inventory__provider_name': 'c7.other'}, 'c7.other'),
])
def test_start_from_conf_names_the_compute_node(tmp_path, opts, name):
    conf = _conf(tmp_path, io_inventory__publish=True,
                 io_inventory__reserved_slo_iops=7,
                 io_inventory__reserve_unclaimed_io_vcpus='false',
                 io_inventory__recheck_interval=42.0, **opts)
    pub = pi.start_from_conf(conf, 'compute-7')
    pub.stop()
    assert pub.provider_name == name and pub.child_name == name + ':iosched'
    assert pub.options == ps.Options(reserved_slo_iops=7,
                                     reserve_unclaimed_io_vcpus=False)
    assert pub.recheck_interval == 42.0


def test_bad_option_values_are_refused_when_read(tmp_path):
    path = tmp_path / 'agent.conf'
    path.write_text('[io_inventory]\nlsvm_vcpu_share = 2\n')
    conf = cfg.ConfigOpts()
    io_inventory_conf.register_opts(conf)
    conf([], default_config_files=[str(path)])
    with pytest.raises(cfg.ConfigFileValueError):
        conf.io_inventory.lsvm_vcpu_share


# -- the real keystoneauth1 path, requests_mock answering
# ----------------------

ENDPOINT = 'http://placement.example.org/placement'


def test_real_keystoneauth_adapter_from_conf(tmp_path):
    path = tmp_path / 'agent.conf'
    path.write_text('[io_inventory]\npublish = true\n'
                    '[placement]\nauth_type = admin_token\n'
                    'endpoint = %s\ntoken = secret-token\n' % ENDPOINT)
    conf = cfg.ConfigOpts()
    placement_conf.register_opts(conf)
    io_inventory_conf.register_opts(conf)
    conf([], default_config_files=[str(path)])
    rps = ENDPOINT + '/resource_providers'
    with requests_mock.Mocker() as m:
        m.get(rps + '?name=host1', complete_qs=True, json={
            'resource_providers': [{'uuid': RP, 'name': 'host1'}]})
        m.get(rps + '?name=host1%3Aiosched', complete_qs=True,
              json={'resource_providers': []})
        m.post(rps, json={'uuid': 'child-1', 'name': CHILD})
        m.get(rps + '/child-1/inventories', json={
            'inventories': {}, 'resource_provider_generation': 0})
        m.get(rps + '/child-1/usages', json={
            'usages': {}, 'resource_provider_generation': 0})
        m.put(ENDPOINT + '/resource_classes/' + A, status_code=201)
        m.put(rps + '/child-1/inventories', json={})
        pub = pi.InventoryPublisher(
            lambda: pi.PlacementInventories(pi.placement_adapter(conf)),
            'host1', options=ps.Options(max_io_vcpus_per_pcpu=0.5))
        pub.want_from_report(report(supported=False, io_vcpus=1))
        assert pub.sync(), pub.state.last_error
        history = m.request_history
    assert [(r.method, urllib.parse.urlparse(r.url).path)
            for r in history] == [
        ('GET', '/placement/resource_providers'),
        ('GET', '/placement/resource_providers'),
        ('POST', '/placement/resource_providers'),
        ('GET', '/placement/resource_providers/child-1/inventories'),
        ('GET', '/placement/resource_providers/child-1/usages'),
        ('PUT', '/placement/resource_classes/' + A),
        ('PUT', '/placement/resource_providers/child-1/inventories')]
    for r in history:
        assert r.headers['OpenStack-API-Version'] == 'placement 1.26'
        assert r.headers['X-Auth-Token'] == 'secret-token'
    assert history[2].json() == {'name': CHILD, 'parent_provider_uuid': RP}
    assert history[-1].json() == {
        'inventories': {A: INV(2, 1)}, 'resource_provider_generation': 0}


# -- io-host-agent's main() wiring, in a subprocess (it parses global CONF) --

MAIN_SCRIPT = '''
import json, sys
from iosched.host_agent import agent as agent_mod
from iosched.host_agent.cmd import agent as cmd
from iosched.host_agent import placement_inventory as pi
from iosched.host_agent import placement_trait as pt
from tests import fixtures
from tests.unit.host_agent.test_placement_inventory import (
    FakeInventoryPlacement)

sim, driver = fixtures.sim_host_with_vms()
fixtures.use_driver_in_main(driver)
fake = FakeInventoryPlacement(providers={'compute-1': 'rp-1'})
pt.placement_adapter = lambda conf: fake
pi.placement_adapter = lambda conf: fake
seen = {}

def run(agent):
    fixtures.run_ticks(sim, agent, 2)
    publishers = agent.reporter.reporters[:-1]
    seen['settled'] = [p.wait_settled(60) for p in publishers]
    seen['reporters'] = [type(r).__name__ for r in agent.reporter.reporters]
    seen['publishers'] = publishers

agent_mod.Agent.run = run
rc = cmd.main(['--config-file', sys.argv[1]])
child = fake.child_uuid('compute-1')
print(json.dumps({'rc': rc, 'settled': seen['settled'],
                  'reporters': seen['reporters'],
                  'alive': [p._thread.is_alive() for p in seen['publishers']],
                  'parent': fake.parents.get(child),
                  'classes': sorted(fake.inventories.get(child, {})),
                  'traits': sorted(fake.traits['rp-1'])}))
'''


@pytest.mark.parametrize('trait, reporters, traits', [
    ('true', ['TraitPublisher', 'InventoryPublisher', 'ReportAPI'],
     ['CUSTOM_IOSCHED_LSVM']),
    ('false', ['InventoryPublisher', 'ReportAPI'], []),
])
def test_io_host_agent_main_publishes_and_stops_both(tmp_path, trait,
                                                     reporters, traits):
    path = tmp_path / 'host-agent.conf'
    path.write_text(
        '[host_agent]\njournal_path = %s\n[reporter]\ntransport_url = '
        'fake:/\n[lsvm_trait]\npublish = %s\n[io_inventory]\npublish = '
        'true\n' % (tmp_path / 'journal.jsonl', trait))
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run(
        [sys.executable, '-c', MAIN_SCRIPT, str(path)], cwd=root,
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=root))
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {'rc': 0, 'settled': [True] * (len(reporters) - 1),
                      'reporters': reporters,
                      'alive': [False] * (len(reporters) - 1),
                      'parent': 'rp-1', 'classes': [A, B, C],
                      'traits': traits}
