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
"""The layering rules of docs/architecture.md, checked on the source.

* policies import only host_agent.model, their own base, the contract
  (iosched.contract: standard library only) and the stdlib;
* the simulator imports only itself and the stdlib;
* only actuators (and drivers, which they call) write: collectors and
  policies never import the actuators;
* nova_plugin imports nothing of host_agent but the payload module (and
  the stdlib-only report signature).
"""

import ast
import glob
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
STDLIB = tuple(sys.stdlib_module_names)


def imports(path):
    tree = ast.parse(open(path).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module


def files(pattern):
    return sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True))


RULES = [
    ('host_agent/policies/*.py',
     lambda m: m.split('.')[0] in STDLIB or m in (
         'host_agent', 'host_agent.model', 'host_agent.policies',
         'host_agent.policies.base', 'iosched.contract')),
    ('iosched/simulator/**/*.py',
     lambda m: m.split('.')[0] in STDLIB or m.startswith('iosched.simulator')
     or m in ('iosched', 'iosched.contract')
     or m.startswith('iosched.contract.')),
    ('host_agent/collectors/*.py',
     lambda m: not m.startswith('host_agent.actuators')),
    ('nova_plugin/**/*.py',
     lambda m: not m.startswith('host_agent')),
    ('iosched/contract/*.py',
     lambda m: m.split('.')[0] in STDLIB + ('oslo_config', 'oslo_utils')
     or m == 'iosched.contract' or m.startswith('iosched.contract.')),
]


def _importers(module):
    return sorted(os.path.relpath(p, ROOT)
                  for p in files('host_agent/**/*.py')
                  + files('nova_plugin/**/*.py') + files('iosched/demo/*.py')
                  if module in set(imports(p)))


def test_only_actuators_reach_the_privileged_entrypoints():
    # Root-only writes: host_agent.linux.privileged runs in the privsep
    # daemon; only the actuators may call it.
    assert _importers('host_agent.linux.privileged') == [
        'host_agent/actuators/linux_knobs.py']


def test_only_the_libvirt_driver_and_its_knobs_import_libvirt():
    assert _importers('libvirt') == [
        'host_agent/actuators/libvirt_knobs.py',
        'host_agent/drivers/libvirt/driver.py']


@pytest.mark.parametrize('pattern,allowed', RULES, ids=[r[0] for r in RULES])
def test_layering(pattern, allowed):
    paths = files(pattern)
    assert paths, pattern
    bad = ['%s imports %s' % (os.path.relpath(p, ROOT), m)
           for p in paths for m in imports(p) if not allowed(m)]
    assert not bad, bad
