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
"""``ansible-playbook ansible/cloud_objects.yml`` against Nova's and Cinder's
real APIs.

Both APIs run in child processes (``tests/nova_process.py``: Nova's
``osapi_compute`` app with its databases and the installed extra-spec
validators; ``tests/cinder_process.py``: Cinder's v3 API with noauth and
the fake volume driver), started once for the module. The real
``.venv/bin/ansible-playbook`` runs the role ``iosched_cloud_objects``
with the ``openstack.cloud`` collection that ``tools/bootstrap.sh``
unpacked under ``.venv/share``. One cloud dict serves both APIs:
``auth_type: admin_token`` with Cinder's endpoint and token (the SLO-type
module reaches Cinder there) and ``compute_endpoint_override`` for Nova
(whose token stub takes any ``admin:<project>`` token). Each test writes
its own vars file (``-e @file``) with names unique to it.

What is asserted is read back through the APIs, not taken from Ansible's
word: flavors (vcpus, ram, disk, every extra spec, including the
``resources:CUSTOM_IOSCHED_*`` keys the role derives with
``iosched.nova_plugin.placement_resources``) from Nova at microversion 2.61,
SLO types (QoS spec keys equal to ``iosched.cinder_qos.client.plan``, consumer,
association) from Cinder.
"""

import json
import os
import re
import subprocess
import sys
import time
import uuid

import pytest

from iosched.cinder_qos import client as slo_client
from iosched.nova_plugin import placement_resources
from tests import cinder_process
from tests import fixtures as iosched_fixtures
from tests import nova_process

REPO = cinder_process.REPO
VENV_BIN = os.path.dirname(sys.executable)
PLAYBOOK = os.path.join(REPO, 'ansible', 'cloud_objects.yml')
COLLECTIONS = os.path.join(sys.prefix, 'share')
child_nova = nova_process.child_nova
child_cinder = cinder_process.child_cinder


@pytest.fixture(scope='module')
def tools():
    """``ansible-playbook`` beside this Python, and openstack.cloud."""
    playbook_cmd = os.path.join(VENV_BIN, 'ansible-playbook')
    iosched_fixtures.require('ansible-playbook', os.path.exists(playbook_cmd),
                             'not beside %s' % sys.executable)
    manifest = os.path.join(COLLECTIONS, 'ansible_collections', 'openstack',
                            'cloud', 'MANIFEST.json')
    iosched_fixtures.require(
        'openstack.cloud collection', os.path.exists(manifest),
        'not in %s (tools/bootstrap.sh unpacks it from the ansible wheel)'
        % COLLECTIONS)
    return playbook_cmd


@pytest.fixture(scope='module')
def apis(child_nova, child_cinder):
    assert 'iosched' in child_nova.validator_namespaces
    return child_nova, child_cinder


@pytest.fixture
def play(tools, apis, tmp_path):
    """``play(vars, *args)``: run the playbook; returns ``Run``."""
    nova, cinder = apis
    cloud = {'auth_type': 'admin_token',
             'auth': {'endpoint': cinder.endpoint, 'token': cinder.token},
             'compute_endpoint_override': nova.endpoint}
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('OS_', 'ANSIBLE_'))}
    # a clouds.yaml with the same cloud, for iosched_cloud_objects_cloud:
    # iosched-test
    clouds = tmp_path / 'clouds.yaml'
    clouds.write_text(json.dumps({'clouds': {'iosched-test': cloud}}))
    env.update(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCAL_TEMP=str(tmp_path / 'tmp'),
               ANSIBLE_REMOTE_TEMP=str(tmp_path / 'tmp'),
               OS_CLIENT_CONFIG_FILE=str(clouds))
    count = iter(range(100))

    def _play(role_vars, *args, what=None, connection=None):
        path = tmp_path / ('vars-%d.json' % next(count))
        path.write_text(json.dumps(dict(
            connection or {'iosched_cloud_objects_cloud': cloud},
            **role_vars)))
        argv = [tools, '-v', '-i', 'localhost,',
                '-e',
                'ansible_python_interpreter={{ ansible_playbook_python }}',
                '-e', '@%s' % path, PLAYBOOK] + list(args)
        start = time.monotonic()
        out = subprocess.run(argv, capture_output=True, text=True, env=env,
                             cwd=str(tmp_path), check=False)
        run = Run(out, time.monotonic() - start)
        if what:        # the figures of docs/slo.md (pytest -s shows them)
            print('ansible-playbook %-16s %5.1f s  changed=%s failed=%s'
                  % (what, run.seconds, run.recap.get('changed'),
                     run.recap.get('failed')))
        return run

    return _play


class Run:
    """One ansible-playbook run: return code, recap counts, item states."""

    ITEM = re.compile(r'^(ok|changed|failed|skipping): \[localhost\] '
                      r'(?:=> )?\(item=([^)]*)\)')

    def __init__(self, out, seconds):
        self.rc, self.stdout, self.stderr = (out.returncode, out.stdout,
                                             out.stderr)
        self.seconds = seconds
        recap = [ln for ln in out.stdout.splitlines()
                 if ln.startswith('localhost ')]
        self.recap = dict((k, int(v)) for k, v in re.findall(
            r'(\w+)=(\d+)', recap[-1])) if recap else {}
        self.items = {}
        for ln in out.stdout.splitlines():
            m = self.ITEM.match(ln)
            if m:
                self.items[m.group(2)] = m.group(1)

    def __str__(self):
        return 'rc=%s\n%s\n%s' % (self.rc, self.stdout[-6000:],
                                  self.stderr[-3000:])


# -- reading back --------------------------------------------------------

def _ok(resp):
    assert resp.status_code == 200, (resp.status_code, resp.text)
    return resp.json()


def nova_flavors(nova, prefix):
    """name -> (vcpus, ram, disk, extra_specs) of the flavors named
    ``prefix*``, from Nova (2.61: details carry the extra specs).
    """
    api = nova.adapter(microversion='2.61')
    found = _ok(api.get('/flavors/detail?is_public=None'))['flavors']
    return {f['name']: (f['vcpus'], f['ram'], f['disk'], f['extra_specs'])
            for f in found if f['name'].startswith(prefix)}


def cinder_slo_types(cinder, prefix):
    """name -> (consumer, specs) of the QoS spec associated with each
    volume type named ``prefix*``, from Cinder.
    """
    api = cinder.adapter()
    types = {t['id']: t['name'] for t in
             _ok(api.get('/types'))['volume_types']
             if t['name'].startswith(prefix)}
    found = {}
    for spec in _ok(api.get('/qos-specs'))['qos_specs']:
        assoc = _ok(api.get('/qos-specs/%s/associations' % spec['id']))
        for a in assoc['qos_associations']:
            if a['id'] in types:
                found[types[a['id']]] = (spec['name'], spec['consumer'],
                                         spec['specs'])
    missing = set(types.values()) - set(found)
    return dict(found, **{name: None for name in missing})


def _flavor(name, vcpus, ram, disk, **specs):
    return {'name': name, 'vcpus': vcpus, 'ram': ram, 'disk': disk,
            'extra_specs': specs}


def _objects(tag):
    slos = [{'name': tag + '-gold', 'slo': '500iops,10ms,p99'},
            {'name': tag + '-stream', 'slo': '100MB/s,50ms,class=throughput'}]
    flavors = [
        _flavor(tag + '-lsvm.small', 1, 2048, 20, **{
            'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '5',
            'trait:CUSTOM_IOSCHED_LSVM': 'required'}),
        _flavor(tag + '-io.medium', 2, 4096, 40,
                **{'iosched:io_profile': 'io'})]
    return slos, flavors


def _role_vars(slos, flavors, state=None):
    if state:
        slos = [dict(s, state=state) for s in slos]
        flavors = [dict(f, state=state) for f in flavors]
    return {'iosched_cloud_objects_slo_types': slos,
            'iosched_cloud_objects_flavors': flavors}


def _want_flavors(flavors, resources=True, share=0.5):
    """What Nova should hold; ``resources``: with the keys the role
    derives (iosched_cloud_objects_placement_resources, its default).
    """
    return {f['name']: (f['vcpus'], f['ram'], f['disk'],
                        placement_resources.with_resources(
                            f['vcpus'], f['extra_specs'], share)
                        if resources else f['extra_specs'])
            for f in flavors}


def _want_slos(slos):
    want = {}
    for s in slos:
        p = slo_client.plan(s['name'], s['slo'])
        want[s['name']] = (p.qos_name, p.consumer, dict(p.specs))
    return want


def _tag():
    return 'ans-%s' % uuid.uuid4().hex[:8]


# -- tests -----------------------------------------------------------------

def test_create_rerun_check_absent(play, apis):
    nova, cinder = apis
    tag = _tag()
    slos, flavors = _objects(tag)
    names = [o['name'] for o in slos + flavors]

    run = play(_role_vars(slos, flavors), '--check', what='check, empty')
    assert run.rc == 0, run
    assert run.recap['changed'] == 2, run   # the recap counts a task once
    assert all(run.items[n] == 'changed' for n in names), run.items
    assert nova_flavors(nova, tag) == {}
    assert cinder_slo_types(cinder, tag) == {}

    run = play(_role_vars(slos, flavors), what='create')
    assert run.rc == 0, run
    assert run.recap['changed'] == 2, run
    assert all(run.items[n] == 'changed' for n in names), run.items
    assert nova_flavors(nova, tag) == _want_flavors(flavors)
    assert cinder_slo_types(cinder, tag) == _want_slos(slos)

    run = play(_role_vars(slos, flavors), what='rerun')
    assert run.rc == 0, run
    assert run.recap['changed'] == 0, run
    assert all(run.items[n] == 'ok' for n in names), run.items

    # --check after one flavor's spec changed in the vars: predicted, and
    # nothing changed in Nova or Cinder
    before_ids = _flavor_ids(nova, tag)
    edited = [dict(flavors[0], extra_specs=dict(
        flavors[0]['extra_specs'], **{'iosched:latency_ms': '8'}))] + \
        flavors[1:]
    run = play(_role_vars(slos, edited), '--check', what='check, one spec')
    assert run.rc == 0, run
    assert run.recap['changed'] == 1, run
    assert run.items[flavors[0]['name']] == 'changed', run.items
    assert all(run.items[n] == 'ok' for n in names[:2] + names[3:]), run
    assert nova_flavors(nova, tag) == _want_flavors(flavors)
    assert _flavor_ids(nova, tag) == before_ids
    assert cinder_slo_types(cinder, tag) == _want_slos(slos)

    # the real run applies it in place (extra specs only: same flavor ID)
    run = play(_role_vars(slos, edited), what='apply one spec')
    assert run.rc == 0, run
    assert run.recap['changed'] == 1, run
    assert nova_flavors(nova, tag) == _want_flavors(edited)
    assert _flavor_ids(nova, tag) == before_ids

    run = play(_role_vars(slos, edited, state='absent'), what='absent')
    assert run.rc == 0, run
    assert run.recap['changed'] == 2, run
    assert all(run.items[n] == 'changed' for n in names), run.items
    assert nova_flavors(nova, tag) == {}
    assert cinder_slo_types(cinder, tag) == {}
    assert not [s for s in _ok(cinder.adapter().get('/qos-specs'))[
        'qos_specs'] if s['name'].startswith(tag)]

    run = play(_role_vars(slos, edited, state='absent'), what='absent again')
    assert run.rc == 0, run
    assert run.recap['changed'] == 0, run


def _flavor_ids(nova, prefix):
    found = _ok(nova.adapter().get('/flavors?is_public=None'))['flavors']
    return {f['name']: f['id'] for f in found
            if f['name'].startswith(prefix)}


def _delete_flavors(nova, prefix):
    api = nova.adapter()
    for flavor_id in _flavor_ids(nova, prefix).values():
        assert api.delete('/flavors/%s' % flavor_id).status_code == 202
    assert nova_flavors(nova, prefix) == {}


def _connection(form, nova):
    """Role vars connecting to Nova: the default cloud dict (None), a
    clouds.yaml name, or auth parameters (admin_token's endpoint is then
    Nova's for every service; no SLO types in these runs).
    """
    if form == 'clouds.yaml':
        return {'iosched_cloud_objects_cloud': 'iosched-test'}
    if form == 'auth':
        return {'iosched_cloud_objects_auth_type': 'admin_token',
                'iosched_cloud_objects_auth': {'endpoint': nova.endpoint,
                                               'token': nova.token}}
    return None


@pytest.mark.parametrize('form', ['cloud dict', 'clouds.yaml', 'auth'])
def test_bad_latency_refused_by_novas_validator(play, apis, form):
    """Nova's API (with iosched's validators) refuses the value and the
    task fails with its message, however the connection is given.
    compute_flavor creates the flavor before its extra specs, so the
    flavor is left without them; a run with a good value completes it.
    """
    nova, cinder = apis
    tag = _tag()
    bad = _flavor(tag + '-lsvm', 1, 1024, 10, **{
        'iosched:latency_sensitive': 'true', 'iosched:latency_ms': '0'})
    connection = _connection(form, nova)
    run = play(_role_vars([], [bad]), connection=connection,
               what='bad latency_ms' if connection is None else None)
    assert run.rc == 2, run
    assert run.recap['failed'] == 1, run
    assert run.items[bad['name']] == 'failed', run.items
    assert ("invalid value '0' for flavor extra spec 'iosched:latency_ms': "
            "accepted: an integer from 1 to 10000" in run.stdout), run
    assert nova_flavors(nova, tag) == {bad['name']: (1, 1024, 10, {})}

    good = dict(bad, extra_specs=dict(bad['extra_specs'],
                                      **{'iosched:latency_ms': '4'}))
    run = play(_role_vars([], [good]), connection=connection)
    assert run.rc == 0, run
    assert run.recap['changed'] == 1, run
    assert nova_flavors(nova, tag) == _want_flavors([good])

    _delete_flavors(nova, tag)


def test_without_microversion_2_86_nova_checks_nothing(play, apis):
    """Why the role sets compute_api_version: openstacksdk sends 2.61 for
    flavors, where Nova stores any value; the scheduler would read the
    bad bound as unset.
    """
    nova, cinder = apis
    tag = _tag()
    bad = _flavor(tag + '-lsvm', 1, 1024, 10, **{
        'iosched:latency_ms': '0'})
    role_vars = dict(_role_vars([], [bad]),
                     iosched_cloud_objects_compute_api_version=None)
    run = play(role_vars)
    assert run.rc == 0, run
    assert nova_flavors(nova, tag) == _want_flavors([bad])
    _delete_flavors(nova, tag)


def test_placement_resources_land_in_nova(play, apis):
    """The derived resources: keys reach Nova (accepted at 2.86 by its
    resources: validator), follow the vars (share, profile), and go away
    with the role variable off.
    """
    nova, cinder = apis
    tag = _tag()
    flavors = [
        _flavor(tag + '-lsvm.medium', 2, 2048, 20, **{
            'iosched:latency_sensitive': 'true',
            'iosched:io_profile': 'mixed',
            'resources:CUSTOM_IOSCHED_SLO_IOPS': '300'}),
        _flavor(tag + '-io.large', 4, 4096, 40, **{
            'iosched:io_profile': 'io',
            'resources:CUSTOM_IOSCHED_IO_VCPU': '1'}),     # stale: fixed
        _flavor(tag + '-cpu.small', 1, 1024, 10, **{
            'iosched:io_profile': 'cpu'})]
    run = play(_role_vars([], flavors), what='resources keys')
    assert run.rc == 0, run
    got = nova_flavors(nova, tag)
    assert got == _want_flavors(flavors), got
    assert got[tag + '-lsvm.medium'][3] == {
        'iosched:latency_sensitive': 'true', 'iosched:io_profile': 'mixed',
        'resources:CUSTOM_IOSCHED_SLO_IOPS': '300',
        'resources:CUSTOM_IOSCHED_IO_VCPU': '2',
        'resources:CUSTOM_IOSCHED_LSVM_BW': '1000'}
    assert got[tag + '-io.large'][3][
        'resources:CUSTOM_IOSCHED_IO_VCPU'] == '4'
    for vcpus, ram, disk, specs in got.values():
        assert placement_resources.check(vcpus, specs) == []

    run = play(_role_vars([], flavors))
    assert run.rc == 0, run
    assert run.recap['changed'] == 0, run           # idempotent

    # the agents' share changes: the LSVM's amount follows
    run = play(dict(_role_vars([], flavors),
                    iosched_cloud_objects_lsvm_vcpu_share=0.25))
    assert run.rc == 0, run
    assert nova_flavors(nova, tag) == _want_flavors(flavors, share=0.25)
    assert nova_flavors(nova, tag)[tag + '-lsvm.medium'][3][
        'resources:CUSTOM_IOSCHED_LSVM_BW'] == '500'

    # off: exactly the listed extra specs (the derived keys are deleted)
    run = play(dict(_role_vars([], flavors),
                    iosched_cloud_objects_placement_resources=False))
    assert run.rc == 0, run
    assert nova_flavors(nova, tag) == _want_flavors(flavors,
                                                    resources=False)

    # a bad iosched: value fails the task before Nova, saying what is
    # accepted
    bad = [_flavor(tag + '-bad', 1, 1024, 10,
                   **{'iosched:io_profile': 'disk'})]
    run = play(_role_vars([], bad))
    assert run.rc == 2, run
    assert ("iosched_flavor_resources: invalid value 'disk' for flavor "
            "extra spec 'iosched:io_profile': accepted: one of io, cpu, "
            "mixed" in run.stdout), run
    _delete_flavors(nova, tag)
