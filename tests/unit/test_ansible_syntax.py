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

"""``ansible-playbook --syntax-check`` of the playbooks under ansible/.

The role's tasks are imported statically, so the check parses every task
and resolves every module name: ``iosched_slo_type`` from ansible/library
(and the role's library link), ``openstack.cloud.compute_flavor`` from the
openstack.cloud collection. Galaxy is not reachable here and ansible-core
ships no collections, so two variants run:

* ``stub``: a throw-away collection in tmp_path that only declares
  ``openstack.cloud.compute_flavor`` (name resolution; the syntax check
  validates no module arguments), so YAML, role layout and our module are
  checked wherever ansible-core is installed;
* ``openstack.cloud``: the real collection, as ``tools/bootstrap.sh``
  unpacks it from the ``ansible`` wheel into ``<venv>/share``, or wherever
  ansible finds one; missing, the test skips locally and fails in CI.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from tests import fixtures as iosched_fixtures

ROOT = os.path.join(os.path.dirname(__file__), '..', '..')
ANSIBLE_DIR = os.path.join(ROOT, 'ansible')
PLAYBOOKS = ['cloud_objects.yml']


def _tool(name):
    """Path of an ansible CLI beside this interpreter, or on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), name)
    if os.path.exists(here):
        return here
    return shutil.which(name)


@pytest.fixture(scope='module')
def playbook_cmd():
    path = _tool('ansible-playbook')
    iosched_fixtures.require('ansible-core', path is not None,
                             'no ansible-playbook beside %s nor on PATH'
                             % sys.executable)
    return path


VENV_COLLECTIONS = os.path.join(sys.prefix, 'share')


def _env(**extra):
    env = dict(os.environ, ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
               ANSIBLE_LOCAL_TEMP=extra.pop('tmp'))
    env.update(extra)
    return env


def _has_openstack_cloud(tmp_path):
    galaxy = _tool('ansible-galaxy')
    if galaxy is None:
        return False
    out = subprocess.run([galaxy, 'collection', 'list', 'openstack.cloud'],
                         capture_output=True, text=True,
                         env=_env(tmp=str(tmp_path)), check=False)
    return out.returncode == 0 and 'openstack.cloud' in out.stdout


def _stub_collection(tmp_path):
    base = tmp_path / 'ansible_collections' / 'openstack' / 'cloud'
    (base / 'plugins' / 'modules').mkdir(parents=True)
    (base / 'MANIFEST.json').write_text(
        '{"collection_info": {"namespace": "openstack", "name": "cloud", '
        '"version": "0.0.0"}, "file_manifest_file": {"name": "FILES.json", '
        '"ftype": "file", "format": 1}, "format": 1}')
    (base / 'plugins' / 'modules' / 'compute_flavor.py').write_text(
        '"""Stub: name resolution for --syntax-check only."""\n')
    return str(tmp_path)


@pytest.mark.parametrize('playbook', PLAYBOOKS)
@pytest.mark.parametrize('collection', ['stub', 'openstack.cloud'])
def test_syntax_check(playbook_cmd, tmp_path, playbook, collection):
    env = _env(tmp=str(tmp_path / 'tmp'))
    if collection == 'stub':
        env['ANSIBLE_COLLECTIONS_PATH'] = _stub_collection(tmp_path)
    elif os.path.isdir(os.path.join(VENV_COLLECTIONS, 'ansible_collections',
                                    'openstack', 'cloud')):
        env['ANSIBLE_COLLECTIONS_PATH'] = VENV_COLLECTIONS
    elif not _has_openstack_cloud(tmp_path):
        iosched_fixtures.require(
            'openstack.cloud collection', False, 'not installed: '
            'tools/bootstrap.sh unpacks it from the ansible wheel into %s'
            % VENV_COLLECTIONS)
    out = subprocess.run(
        [playbook_cmd, '--syntax-check', '-i', 'localhost,',
         os.path.join(ANSIBLE_DIR, playbook)],
        capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert 'WARNING' not in out.stderr, out.stderr


def test_role_library_links_to_module():
    role_copy = os.path.join(ANSIBLE_DIR, 'roles', 'iosched_cloud_objects',
                             'library', 'iosched_slo_type.py')
    assert os.path.realpath(role_copy) == os.path.realpath(
        os.path.join(ANSIBLE_DIR, 'library', 'iosched_slo_type.py'))


def _defaults():
    import yaml
    with open(os.path.join(ANSIBLE_DIR, 'roles', 'iosched_cloud_objects',
                           'defaults', 'main.yml')) as f:
        return yaml.safe_load(f)


def test_default_flavor_extra_specs_are_valid():
    """The example flavors pass the iosched validators nova-api runs."""
    from nova_plugin import extra_specs
    flavors = _defaults()['iosched_cloud_objects_flavors']
    assert flavors
    for flavor in flavors:
        specs = flavor['extra_specs']
        assert all(isinstance(v, str) for v in specs.values()), flavor
        for key, value in specs.items():
            if extra_specs.in_namespace(key):
                extra_specs.check(key, value)       # raises if invalid
        if 'iosched:latency_ms' in specs:
            assert specs.get('iosched:latency_sensitive') == 'true', flavor


def test_default_slo_types_plan():
    """The example SLO types are what iosched-slo type create accepts."""
    from cinder_qos import client
    types = _defaults()['iosched_cloud_objects_slo_types']
    assert types
    for t in types:
        p = client.plan(t['name'], t['slo'])
        assert p.specs and p.type_name == t['name']


def test_module_documentation_matches_its_arguments(tmp_path):
    """ansible-doc parses DOCUMENTATION/RETURN; options == argument_spec."""
    doc_cmd = _tool('ansible-doc')
    iosched_fixtures.require('ansible-core', doc_cmd is not None,
                             'no ansible-doc beside %s nor on PATH'
                             % sys.executable)
    out = subprocess.run(
        [doc_cmd, '--json', '-M', os.path.join(ANSIBLE_DIR, 'library'),
         'iosched_slo_type'], capture_output=True, text=True,
        env=_env(tmp=str(tmp_path)), check=False)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)['iosched_slo_type']
    assert doc['return'] and doc['examples']
    spec = importlib.util.spec_from_file_location(
        'iosched_slo_type', os.path.join(ANSIBLE_DIR, 'library',
                                         'iosched_slo_type.py'))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    options = doc['doc']['options']
    assert set(options) == set(mod.ARGS)
    for name, arg in mod.ARGS.items():
        assert options[name].get('type', 'str') == arg.get('type', 'str'), \
            name
        assert sorted(options[name].get('aliases', [])) == sorted(
            arg.get('aliases', [])), name
