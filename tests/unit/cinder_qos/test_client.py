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

"""iosched.cinder_qos.client: plan() and SloAdmin over an in-memory Cinder."""

import io
import json

import pytest

from iosched.cinder_qos import client
from iosched.cinder_qos.cmd import slo as cmd


class FakeApi:
    """Cinder's QoS spec / type / association semantics, in memory."""

    def __init__(self, fail=None):
        self._specs, self._types, self.assoc, self.vols = {}, {}, {}, {}
        self.fail, self.n, self.listed = fail or set(), 0, {}

    def _id(self):
        self.n += 1
        return 'id-%d' % self.n

    def _check(self, op):
        if op in self.fail:
            raise client.AdminError('Cinder: %s failed' % op)

    def qos_specs(self):
        return [dict(v, specs=dict(v['specs'])) for v in self._specs.values()]

    def create_qos_spec(self, name, consumer, specs):
        self._check('create_qos_spec')
        i = self._id()
        self._specs[i] = {'id': i, 'name': name, 'consumer': consumer,
                         'specs': dict(specs)}
        return dict(self._specs[i])

    def set_qos_keys(self, spec_id, specs):
        self._check('set_qos_keys')
        self._specs[spec_id]['specs'].update(specs)

    def unset_qos_keys(self, spec_id, names):
        for k in names:
            self._specs[spec_id]['specs'].pop(k)

    def delete_qos_spec(self, spec_id):
        if any(s == spec_id for s in self.assoc.values()):
            raise client.AdminError('Cinder: QoS spec in use')
        del self._specs[spec_id]

    def associations(self, spec_id):
        return [{'id': t, 'name': self._types[t]['name'],
                 'association_type': 'volume_type'}
                for t, s in self.assoc.items() if s == spec_id]

    def associate(self, spec_id, type_id):
        self._check('associate')
        self.assoc[type_id] = spec_id

    def types(self):
        return [dict(t) for t in self._types.values()]

    def create_type(self, name, description):
        self._check('create_type')
        i = self._id()
        self._types[i] = {'id': i, 'name': name, 'description': description}
        return dict(self._types[i])

    def delete_type(self, type_id):
        if self.vols.get(type_id):
            raise client.AdminError('Cinder: Target volume type is still in '
                                    'use.')
        del self._types[type_id]
        self.assoc.pop(type_id, None)

    def volumes_of_type(self, type_id, type_name):
        return self.listed.get(type_id)


GOLD = '500iops,10ms,p99'


@pytest.mark.parametrize('name,slo,kw,err', [
    ('gold', '500iops', {}, 'latency'),
    ('gold', '-5iops,10ms', {}, 'throughput'),
    ('gold', '0iops,10ms', {}, 'throughput'),
    ('gold', '500iops,10parsecs', {}, '10parsecs'),
    ('gold', '500iops,10ms', {'min_latency_ms': 20},
     'latency 10ms is below 20ms, what the back end measured'),
    ('gold', '500iops,10ms', {'min_latency_ms': 0}, '--min-latency-ms 0'),
    ('gold', '500iops,10ms', {'headroom': 0.5}, 'headroom'),
    ('', '500iops,10ms', {}, 'type name'),
])
def test_plan_refuses(name, slo, kw, err):
    with pytest.raises(client.InputError) as e:
        client.plan(name, slo, **kw)
    assert err in str(e.value)
    assert e.value.code == client.EXIT_INPUT


@pytest.mark.parametrize('slo,kw,total,klass', [
    (GOLD, {}, '2400', 'latency'),
    ('120iops,60ms,qd=8', {}, '200', 'latency'),
    ('1000iops,80ms', {'min_latency_ms': 80}, '1500', 'throughput'),
    ('1000iops,80ms', {'headroom': 2}, '2000', 'throughput'),
])
def test_plan(slo, kw, total, klass):
    p = client.plan('gold', slo, **kw)
    assert (p.type_name, p.qos_name, p.consumer) == ('gold', 'gold',
                                                     'front-end')
    assert p.specs['total_iops_sec'] == total
    assert p.specs['iosched:class'] == klass


def test_create_is_idempotent_and_reads_back():
    api = FakeApi()
    admin = client.SloAdmin(api)
    p = client.plan('gold', GOLD)
    r = admin.create(p)
    assert r.actions == ['created QoS spec gold', 'created volume type gold',
                         'associated gold with gold']
    again = admin.create(p)
    assert not again.changed
    assert admin.show('gold').specs == p.specs
    [listed] = admin.list()
    assert (listed.type_name, listed.slo_text) == ('gold', p.slo_text)


def test_conflicting_spec_refused_then_forced():
    api = FakeApi()
    admin = client.SloAdmin(api)
    admin.create(client.plan('gold', GOLD))
    with pytest.raises(client.Conflict) as e:
        admin.create(client.plan('gold', '600iops,10ms,p99'))
    assert 'iosched:min_iops: 500 (want 600)' in str(e.value)
    r = admin.create(client.plan('gold', '600iops,10ms,p99'), force=True)
    assert r.changed and admin.show('gold').specs['iosched:min_iops'] == '600'


@pytest.mark.parametrize('fail', ['create_type', 'associate'])
def test_create_undoes_earlier_steps(fail):
    api = FakeApi(fail={fail})
    with pytest.raises(client.AdminError):
        client.SloAdmin(api).create(client.plan('gold', GOLD))
    assert not api._specs and not api._types and not api.assoc


def test_set_updates_and_drops_keys():
    api = FakeApi()
    admin = client.SloAdmin(api)
    admin.create(client.plan('gold', '120iops,60ms,qd=8'))
    r = admin.set(client.plan('gold', '1000iops,80ms'))
    assert 'iosched:expected_qd: 8 (not in the SLO)' in r.actions[0]
    assert admin.show('gold').specs == client.plan('gold',
                                                   '1000iops,80ms').specs
    assert not admin.set(client.plan('gold', '1000iops,80ms')).changed


def test_delete_in_use_refused_then_deleted():
    api = FakeApi()
    admin = client.SloAdmin(api)
    r = admin.create(client.plan('gold', GOLD))
    api.vols[r.type_id] = ['vol-1']     # Cinder refuses (no listing)
    with pytest.raises(client.Conflict) as e:
        admin.delete('gold')
    assert 'in use' in str(e.value) and e.value.code == client.EXIT_CONFLICT
    api.listed[r.type_id] = ['vol-1']   # found before any call
    with pytest.raises(client.Conflict) as e:
        admin.delete('gold')
    assert 'in use by 1 volume(s) (vol-1)' in str(e.value)
    api.listed.clear()
    assert admin.show('gold')
    api.vols.clear()
    assert admin.delete('gold').actions == ['deleted volume type gold',
                                            'deleted QoS spec gold']
    assert not api._specs and not api._types
    with pytest.raises(client.NotFound):
        admin.show('gold')


def _run(argv, api=None):
    out, err = io.StringIO(), io.StringIO()
    factory = (lambda args: client.SloAdmin(api)) if api else None
    code = cmd.main(argv, out, err, admin_factory=factory)
    return code, out.getvalue(), err.getvalue()


def test_cli_dry_run_sends_nothing():
    def boom(args):
        raise AssertionError('no API call on --dry-run')
    out, err = io.StringIO(), io.StringIO()
    code = cmd.main(['type', 'create', 'gold', GOLD, '--dry-run', '-f',
                     'json'], out, err, admin_factory=boom)
    assert code == 0, err.getvalue()
    doc = json.loads(out.getvalue())
    assert doc['properties'] == client.plan('gold', GOLD).specs
    assert doc['result'][0].startswith('dry run')


@pytest.mark.parametrize('argv,code,err', [
    (['type', 'create', 'gold', '500iops,10ms', '--min-latency-ms', '20',
      '--dry-run'], 2, 'below 20ms'),
    (['type', 'create', 'gold', '500iops,10xs', '--dry-run'], 2, '10xs'),
    (['type', 'create', 'gold', '--dry-run'], 2, ''),
    (['type', 'show', 'nope'], 4, "'nope' not found"),
])
def test_cli_errors(argv, code, err):
    got, _, stderr = _run(argv, FakeApi())
    assert got == code and err in stderr


def test_cli_create_list_show_delete():
    api = FakeApi()
    assert _run(['type', 'create', 'gold', GOLD], api)[0] == 0
    code, out, _ = _run(['type', 'list', '-f', 'json'], api)
    assert code == 0 and json.loads(out)[0]['Name'] == 'gold'
    code, out, _ = _run(['type', 'show', 'gold', '-f', 'json'], api)
    assert json.loads(out)['properties']['total_iops_sec'] == '2400'
    code, _, err = _run(['type', 'create', 'gold', '600iops,10ms'], api)
    assert code == 3 and 'exists with other keys' in err
    code, out, _ = _run(['type', 'delete', 'gold'], api)
    assert code == 0 and 'deleted QoS spec gold' in out


@pytest.mark.parametrize('argv', [['--help'], ['type', '--help']])
def test_help_names_type_verbs(capsys, argv):
    code = cmd.main(argv)
    text = capsys.readouterr().out
    assert code == 0
    for verb in ('create', 'list', 'show', 'set', 'delete'):
        assert 'type %s' % verb in text
