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
"""``iosched-placement --check-flavors``: the audit's rows and fix commands
(pure, table-driven), then the command end to end on a fake openstacksdk
connection: text, --json, exit codes 0/1/2, one line on stderr.
"""

import json

import pytest

from iosched.nova_plugin.cmd import flavor_audit as fa
from iosched.nova_plugin.cmd import placement
from iosched.nova_plugin.cmd import placement_sources as sources

IO_VCPU = 'resources:CUSTOM_IOSCHED_IO_VCPU'
LSVM_BW = 'resources:CUSTOM_IOSCHED_LSVM_BW'
SLO = 'resources:CUSTOM_IOSCHED_SLO_IOPS'
IO = {'iosched:io_profile': 'io'}
LSVM = {'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '2'}


ROW_CASES = [
    # (name, vcpus, specs, share, [(key, kind)], fix commands)
    ('right io flavor', 2, dict(IO, **{IO_VCPU: '2'}), 0.5, [], []),
    ('missing io slots', 2, IO, 0.5, [(IO_VCPU, 'missing')],
     ['openstack flavor set f --property '
      'resources:CUSTOM_IOSCHED_IO_VCPU=2']),
    ('stale vCPU count', 4, dict(IO, **{IO_VCPU: '2'}), 0.5,
     [(IO_VCPU, 'wrong')],
     ['openstack flavor set f --property '
      'resources:CUSTOM_IOSCHED_IO_VCPU=4']),
    ('lsvm at another share', 2, dict(LSVM, **{LSVM_BW: '1000'}), 0.25,
     [(LSVM_BW, 'wrong')],
     ['openstack flavor set f --property '
      'resources:CUSTOM_IOSCHED_LSVM_BW=500']),
    ('cpu profile with io slots: unset', 2,
     {'iosched:io_profile': 'cpu', IO_VCPU: '2'}, 0.5,
     [(IO_VCPU, 'unexpected')],
     ['openstack flavor unset f --property '
      'resources:CUSTOM_IOSCHED_IO_VCPU']),
    ('invalid amount with a derived one: set', 2, dict(IO, **{IO_VCPU: 'two'}),
     0.5, [(IO_VCPU, 'invalid')],
     ['openstack flavor set f --property '
      'resources:CUSTOM_IOSCHED_IO_VCPU=2']),
    ('invalid SLO amount: unset', 2, dict(IO, **{IO_VCPU: '2', SLO: 'x'}),
     0.5, [(SLO, 'invalid')],
     ['openstack flavor unset f --property '
      'resources:CUSTOM_IOSCHED_SLO_IOPS']),
    ('numbered group: unset it, set the unnumbered', 2,
     dict(IO, **{'resources1:CUSTOM_IOSCHED_IO_VCPU': '2'}), 0.5,
     [('resources1:CUSTOM_IOSCHED_IO_VCPU', 'group'), (IO_VCPU, 'missing')],
     ['openstack flavor set f --property '
      'resources:CUSTOM_IOSCHED_IO_VCPU=2',
      'openstack flavor unset f --property '
      'resources1:CUSTOM_IOSCHED_IO_VCPU']),
    ('mixed lsvm, both missing: one set command', 3,
     dict(LSVM, **{'iosched:io_profile': 'mixed'}), 0.5,
     [(IO_VCPU, 'missing'), (LSVM_BW, 'missing')],
     ['openstack flavor set f --property '
      'resources:CUSTOM_IOSCHED_IO_VCPU=3 --property '
      'resources:CUSTOM_IOSCHED_LSVM_BW=1500']),
    ('opt-in SLO amount is fine', 1, dict(IO, **{IO_VCPU: '1', SLO: '300'}),
     0.5, [], []),
]


@pytest.mark.parametrize('name,vcpus,specs,share,problems,fix', ROW_CASES,
                         ids=[c[0] for c in ROW_CASES])
def test_row(name, vcpus, specs, share, problems, fix):
    row = fa.audit_one(fa.Flavor('f', vcpus, specs), share)
    assert [(p.key, p.kind) for p in row.problems] == problems
    assert list(row.fix) == fix
    assert row.ok is (not problems)
    assert row.error is None


def test_fix_quotes_odd_names():
    row = fa.audit_one(fa.Flavor("io medium's", 1, IO))
    assert row.fix == ("openstack flavor set 'io medium'\"'\"'s' --property "
                       "resources:CUSTOM_IOSCHED_IO_VCPU=1",)


def test_bad_iosched_spec_is_the_rows_error():
    row = fa.audit_one(fa.Flavor('f', 2, {'iosched:io_profile': 'disk'}))
    assert not row.ok and row.fix == () and row.problems == ()
    assert 'iosched:io_profile' in row.error and 'disk' in row.error
    assert 'fix the iosched spec first' in row.error


CONCERNS = [
    ('iosched:io_profile', True), ('iosched:whatever', True),
    (IO_VCPU, True), ('resources2:CUSTOM_IOSCHED_LSVM_BW', True),
    ('resources:VCPU', False), ('hw:cpu_policy', False),
    ('CUSTOM_IOSCHED_IO_VCPU', False), ('trait:CUSTOM_IOSCHED_LSVM', False),
]


@pytest.mark.parametrize('key,expected', CONCERNS)
def test_concerns(key, expected):
    assert fa.concerns(key) is expected


def test_audit_selects_and_sorts():
    flavors = [fa.Flavor('m1.small', 1, {}),
               fa.Flavor('z.io', 2, IO),
               fa.Flavor('hw', 2, {'hw:cpu_policy': 'dedicated'}),
               fa.Flavor('a.stray', 2, {IO_VCPU: '2'})]
    rows = fa.audit(flavors)
    assert [(r.flavor.name, r.ok) for r in rows] == [('a.stray', False),
                                                     ('z.io', False)]
    assert rows[0].problems[0].kind == 'unexpected'


@pytest.mark.parametrize('share', [0, 1.5, -0.5, float('nan'), True])
def test_audit_refuses_a_bad_share(share):
    with pytest.raises(ValueError, match='lsvm_vcpu_share'):
        fa.audit([], share)


# -- the command, on a fake openstacksdk connection ---------------------------

class _Flavor(object):
    def __init__(self, name, vcpus, extra_specs, fid=None):
        self.name, self.vcpus, self.extra_specs = name, vcpus, extra_specs
        self.id = fid or 'id-' + name


class _Compute(object):
    def __init__(self, flavors, calls):
        self._flavors, self.calls = flavors, calls

    def flavors(self, details=False, get_extra_specs=False, **query):
        self.calls.append((details, get_extra_specs, query))
        if isinstance(self._flavors, Exception):
            raise self._flavors
        return iter(self._flavors)


def _connect(flavors, calls=None, clouds=None):
    calls = [] if calls is None else calls

    def connect(cloud=None):
        if clouds is not None:
            clouds.append(cloud)
        conn = type('Conn', (), {})()
        conn.compute = _Compute(flavors, calls)
        return conn
    return connect


NOVA = [_Flavor('m1.small', 1, {}),
        _Flavor('io.medium', 2, dict(IO, **{IO_VCPU: '2'})),
        _Flavor('lsvm.small', 2, dict(LSVM)),
        _Flavor('cpu.big', 8, {'iosched:io_profile': 'cpu', IO_VCPU: '8'})]


def run(argv, capsys, flavors=NOVA, **kw):
    code = placement.main(argv, connect=_connect(flavors, **kw))
    out, err = capsys.readouterr()
    return code, out, err


def test_text_lists_problems_and_fixes(capsys):
    calls, clouds = [], []
    code, out, err = run(['--check-flavors', '--os-cloud', 'admin'], capsys,
                         calls=calls, clouds=clouds)
    assert code == placement.EXIT_NEEDS_FIX and err == ''
    assert calls == [(True, True, {'is_public': 'none'})]
    assert clouds == ['admin']
    lines = out.splitlines()
    assert lines[0] == ('3 of 4 flavors concern iosched '
                        '(lsvm_vcpu_share 0.5, 500 milli-CPUs per LSVM vCPU)')
    assert lines[2:] == [
        'cpu.big (8 vCPUs, iosched:io_profile=cpu): 1 problem',
        "  resources:CUSTOM_IOSCHED_IO_VCPU is '8' but the iosched specs ask "
        'none (claims capacity the filters never count)',
        '  fix: openstack flavor unset cpu.big --property '
        'resources:CUSTOM_IOSCHED_IO_VCPU',
        'io.medium (2 vCPUs, iosched:io_profile=io): ok',
        'lsvm.small (2 vCPUs, iosched:latency_ms=2, '
        'iosched:latency_sensitive=true): 1 problem',
        '  resources:CUSTOM_IOSCHED_LSVM_BW is missing: the iosched specs ask '
        '1000',
        '  fix: openstack flavor set lsvm.small --property '
        'resources:CUSTOM_IOSCHED_LSVM_BW=1000',
        '',
        '2 of 3 flavors need a fix']


def test_json_and_share(capsys):
    code, out, _ = run(['--check-flavors', '--json', '--lsvm-vcpu-share',
                        '0.25'], capsys)
    assert code == 1
    doc = json.loads(out)
    assert (doc['flavors_listed'], doc['flavors_checked'],
            doc['need_fix'], doc['lsvm_milli_per_vcpu']) == (4, 3, 2, 250)
    lsvm = {f['name']: f for f in doc['flavors']}['lsvm.small']
    assert lsvm['problems'] == [{
        'key': LSVM_BW, 'kind': 'missing', 'have': None, 'want': '500',
        'text': 'resources:CUSTOM_IOSCHED_LSVM_BW is missing: the iosched '
                'specs ask 500'}]
    assert lsvm['fix'] == ['openstack flavor set lsvm.small --property '
                           'resources:CUSTOM_IOSCHED_LSVM_BW=500']
    assert lsvm['id'] == 'id-lsvm.small'


EXIT_CASES = [
    # (flavors in Nova, exit code, last line)
    ([_Flavor('io.medium', 2, dict(IO, **{IO_VCPU: '2'}))], 0,
     'every flavor is right'),
    ([_Flavor('m1.small', 1, None)], 0, 'no flavor has iosched specs'),
    ([], 0, 'no flavor has iosched specs'),
    ([_Flavor('bad', 2, {'iosched:io_profile': 'disk'})], 1,
     '1 of 1 flavor needs a fix'),
]


@pytest.mark.parametrize('flavors,code,last', EXIT_CASES,
                         ids=[c[2] + str(len(c[0])) for c in EXIT_CASES])
def test_exit_codes(flavors, code, last, capsys):
    got, out, err = run(['--check-flavors'], capsys, flavors=flavors)
    assert (got, out.splitlines()[-1], err) == (code, last, '')


BAD_INPUT = [
    # (argv, flavors in Nova, stderr must contain)
    (['--check-flavors', '--vcpus', '2', '--report', 'r.json'], NOVA,
     '--check-flavors reads only Nova: drop --report, --vcpus (accepted '
     'with it: --os-cloud, --lsvm-vcpu-share, --json)'),
    (['--check-flavors', '--wait', '3'], NOVA, 'drop --wait'),
    (['--check-flavors', '--lsvm-vcpu-share', '0'], NOVA,
     '--lsvm-vcpu-share 0.0: accepted: a number in (0, 1]'),
    (['--check-flavors', '--lsvm-vcpu-share', 'nan'], NOVA,
     '--lsvm-vcpu-share nan: accepted'),
    (['--check-flavors', '--lsvm-vcpu-share', '0.0004'], NOVA,
     '--lsvm-vcpu-share 0.0004: accepted: a number in (0, 1] of at least '
     '0.0005 (one milli-CPU)'),
    (['--check-flavors', '--os-cloud', ' '], NOVA,
     "--os-cloud ' ': accepted: the name of a cloud in clouds.yaml"),
    (['--vcpus', '2', '--lsvm-vcpu-share', '0.5'], NOVA,
     '--lsvm-vcpu-share is read with --check-flavors only'),
    (['--check-flavors'], RuntimeError('Unable to establish connection to '
                                       'http://nova:8774'),
     'cannot list the flavors of Nova: Unable to establish connection to '
     'http://nova:8774. A cloud is configured in clouds.yaml'),
]


@pytest.mark.parametrize('argv,flavors,message', BAD_INPUT,
                         ids=[' '.join(c[0]) for c in BAD_INPUT])
def test_bad_input(argv, flavors, message, capsys):
    code, out, err = run(argv, capsys, flavors=flavors)
    assert code == placement.EXIT_BAD_INPUT and out == ''
    assert len(err.splitlines()) == 1 and message in err, err


def test_no_cloud_is_one_line(capsys, monkeypatch, tmp_path):
    for key in list(__import__('os').environ):
        if key.startswith('OS_'):
            monkeypatch.delenv(key)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('OS_CLIENT_CONFIG_FILE', str(tmp_path / 'none.yaml'))
    monkeypatch.chdir(tmp_path)
    code = placement.main(['--check-flavors', '--os-cloud', 'nowhere'])
    out, err = capsys.readouterr()
    assert code == 2 and out == ''
    assert len(err.splitlines()) == 1
    assert 'cannot list the flavors of Nova' in err and 'clouds.yaml' in err


def test_sources_list_flavors():
    got = sources.flavors_from_nova(connect=_connect(NOVA[:2]))
    assert got == [('id-m1.small', 'm1.small', 1, {}),
                   ('id-io.medium', 'io.medium', 2,
                    dict(IO, **{IO_VCPU: '2'}))]
