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
PLAYBOOKS = ['cloud_objects.yml', 'rollout.yml']
# The inventory a playbook is checked with (its host groups must exist).
INVENTORIES = {'rollout.yml': os.path.join(ANSIBLE_DIR, 'inventory.example')}


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
        [playbook_cmd, '--syntax-check', '-i',
         INVENTORIES.get(playbook, 'localhost,'),
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
    from iosched.contract import flavor as flavor_contract
    flavors = _defaults()['iosched_cloud_objects_flavors']
    assert flavors
    for flavor in flavors:
        specs = flavor['extra_specs']
        assert all(isinstance(v, str) for v in specs.values()), flavor
        flavor_contract.check_specs(specs)          # raises if invalid
        if 'iosched:latency_ms' in specs:
            assert specs.get('iosched:latency_sensitive') == 'true', flavor


def test_default_slo_types_plan():
    """The example SLO types are what iosched-slo type create accepts."""
    from iosched.cinder_qos import client
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


# -- iosched_nova_conf (roles/iosched_scheduler/library) ---------------------

NOVA_CONF_MODULE = os.path.join(ANSIBLE_DIR, 'roles', 'iosched_scheduler',
                                'library', 'iosched_nova_conf.py')


def _nova_conf_module():
    spec = importlib.util.spec_from_file_location('iosched_nova_conf',
                                                  NOVA_CONF_MODULE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_nova_conf_module_documentation_matches_its_arguments(tmp_path):
    doc_cmd = _tool('ansible-doc')
    iosched_fixtures.require('ansible-core', doc_cmd is not None,
                             'no ansible-doc beside %s nor on PATH'
                             % sys.executable)
    out = subprocess.run(
        [doc_cmd, '--json', '-M', os.path.dirname(NOVA_CONF_MODULE),
         'iosched_nova_conf'], capture_output=True, text=True,
        env=_env(tmp=str(tmp_path)), check=False)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)['iosched_nova_conf']
    mod = _nova_conf_module()
    options = doc['doc']['options']
    assert set(options) == set(mod.ARGS)
    for name, arg in mod.ARGS.items():
        assert options[name].get('type', 'str') == arg.get('type', 'str')
        assert options[name].get('default') == arg.get('default'), name


def _params(mod, **kw):
    params = {k: v.get('default') for k, v in mod.ARGS.items()}
    params.update(kw)
    return params


IOSCHED = dict(enabled_filters=['IoDensityFilter', 'LsvmFilter'],
               available_filters=['iosched.nova_plugin.filters.all_filters'],
               weight_classes=['iosched.nova_plugin.weighers.all_weighers'],
               options={'iosched': {'listen_for_reports': True,
                                    'report_topic': 'r'}})


@pytest.mark.parametrize('before, after', [
    # nothing there: Nova's defaults first, then ours
    ('[DEFAULT]\ndebug = true\n',
     '[DEFAULT]\ndebug = true\n\n[filter_scheduler]\n'
     'enabled_filters = ComputeFilter,ComputeCapabilitiesFilter,'
     'ImagePropertiesFilter,ServerGroupAntiAffinityFilter,'
     'ServerGroupAffinityFilter,IoDensityFilter,LsvmFilter\n'
     'available_filters = nova.scheduler.filters.all_filters\n'
     'available_filters = iosched.nova_plugin.filters.all_filters\n'
     'weight_classes = nova.scheduler.weights.all_weighers,'
     'iosched.nova_plugin.weighers.all_weighers\n\n'
     '[iosched]\nlisten_for_reports = true\nreport_topic = r\n'),
    # the operator's lists kept; only the missing items added; of repeated
    # ListOpt keys the last (the effective one) is extended
    ('[filter_scheduler]\n# mine\nenabled_filters=A,LsvmFilter\n'
     'available_filters = x.all\nweight_classes = w.one\n'
     'weight_classes = w.two\n\n[iosched]\nreport_topic = old\n',
     '[filter_scheduler]\n# mine\nenabled_filters = A,LsvmFilter,'
     'IoDensityFilter\navailable_filters = x.all\n'
     'available_filters = iosched.nova_plugin.filters.all_filters\n'
     'weight_classes = w.one\nweight_classes = w.two,'
     'iosched.nova_plugin.weighers.all_weighers\n\n'
     '[iosched]\nreport_topic = r\n'
     'listen_for_reports = true\n'),
])
def test_nova_conf_edit_adds_on_top_and_is_idempotent(before, after):
    mod = _nova_conf_module()
    ini = mod.Ini(before)
    changes = mod.edit(ini, _params(mod, **IOSCHED), True)
    assert changes and ini.text() == after
    again = mod.Ini(after)
    assert mod.edit(again, _params(mod, **IOSCHED), True) == []
    assert again.text() == after


def test_nova_conf_absent_removes_only_ours():
    mod = _nova_conf_module()
    mine = ('[filter_scheduler]\nenabled_filters = A,B\n'
            'available_filters = x.all\n')
    ini = mod.Ini(mine)
    mod.edit(ini, _params(mod, **IOSCHED), True)
    assert ini.text() != mine
    mod.edit(ini, _params(mod, **IOSCHED), False)
    # the operator's values stay; weight_classes keeps Nova's default
    # written out (the same effective value); the [iosched] header stays
    assert ini.text() == mine + (
        'weight_classes = nova.scheduler.weights.all_weighers\n'
        '\n[iosched]\n')
