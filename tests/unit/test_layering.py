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
"""The layer table of docs/architecture.md §0, enforced on every import.

The table is read from the document itself, so the rule a reader sees is
the rule CI applies. Every source module of the four packages belongs to
the row whose layer is the longest dotted prefix of its name; each name it
imports is checked: ``from iosched.host_agent import agent`` is the module
``iosched.host_agent.agent`` (not just ``iosched.host_agent``), ``from x.y
import Name`` is ``x.y``, relative imports are resolved. A project import
(``iosched``, ``nova``, ``cinder``, ``bench``, ``tests``) must be the module's
own layer or under one of the row's allowed prefixes; a third-party import must
be in the row's list unless the row says ``any``. A source module no row covers
fails too.
"""

import ast
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DOC = os.path.join(ROOT, 'docs', 'architecture.md')
PACKAGES = ('iosched',)
PROJECT = PACKAGES + ('nova', 'cinder', 'bench', 'tests')
STDLIB = frozenset(sys.stdlib_module_names)
HEADING = '### Layers'
NAME = re.compile(r'`([\w.*]+)`')


def layer_table(text):
    """{layer: (allowed project prefixes, third-party names or None=any)}
    from the markdown table under ``### Layers``.
    """
    lines = text.split('\n')
    start = lines.index(HEADING)
    rows = {}
    for line in lines[start + 1:]:
        if line.startswith('#'):
            break
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) < 3 or not cells[0].startswith('`'):
            continue
        layer = NAME.findall(cells[0])[0]
        allowed = tuple(NAME.findall(cells[1]))
        third = None if cells[2].startswith('any') else frozenset(
            NAME.findall(cells[2]))
        rows[layer] = (allowed, third)
    return rows


def sources():
    out = subprocess.run(['git', 'ls-files', '*.py'], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [p for p in out.split() if p.split('/')[0] in PACKAGES]


def module_name(path):
    parts = path[:-3].split('/')
    if parts[-1] == '__init__':
        parts = parts[:-1]
    return '.'.join(parts)


def is_module(dotted):
    base = os.path.join(ROOT, *dotted.split('.'))
    return os.path.isfile(base + '.py') or os.path.isdir(base)


def imported_names(path):
    """Every dotted name the module imports, submodules spelled out."""
    mod = module_name(path)
    package = mod if path.endswith('__init__.py') else mod.rpartition('.')[0]
    tree = ast.parse(open(os.path.join(ROOT, path)).read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ''
            if node.level:
                up = package.split('.')
                up = up[:len(up) - node.level + 1]
                base = '.'.join(up + ([base] if base else []))
            for alias in node.names:
                full = base + '.' + alias.name
                yield full if is_module(full) else base


def within(name, prefix):
    return name == prefix or name.startswith(prefix + '.')


def layer_of(mod, table):
    best = [l for l in table if within(mod, l)]
    return max(best, key=len) if best else None


def violations(table):
    bad = []
    for path in sources():
        mod = module_name(path)
        layer = layer_of(mod, table)
        if layer is None:
            bad.append('%s: no row of the layer table covers it' % path)
            continue
        allowed, third = table[layer]
        for name in imported_names(path):
            top = name.split('.')[0]
            if top in PROJECT:
                if not any(within(name, p) for p in (layer,) + allowed):
                    bad.append('%s (layer %s) imports %s' % (path, layer,
                                                             name))
            elif top not in STDLIB and third is not None \
                    and top not in third:
                bad.append('%s (layer %s) imports third-party %s'
                           % (path, layer, top))
    return bad


def test_every_import_follows_the_layer_table():
    table = layer_table(open(DOC).read())
    assert len(table) > 10, table
    bad = violations(table)
    assert not bad, '\n'.join(bad)


# The checker itself: a table of made-up layers and the verdicts it gives.
TABLE_DOC = '\n'.join([
    '### Layers', '',
    '| layer | may import | third-party |', '|---|---|---|',
    '| `iosched.host_agent.policies` | `iosched.host_agent.model` | '
    'none (stdlib) |',
    '| `iosched.host_agent` | `iosched.contract` | any |',
    '## next'])


@pytest.mark.parametrize('mod,name,ok', [
    ('iosched.host_agent.policies.vslicer', 'iosched.host_agent.model', True),
    ('iosched.host_agent.policies.vslicer',
     'iosched.host_agent.policies.base', True),
    ('iosched.host_agent.policies.vslicer', 'iosched.host_agent.agent', False),
    ('iosched.host_agent.policies.vslicer', 'iosched.nova_plugin.scoring',
     False),
    ('iosched.host_agent.policies.vslicer', 'oslo_log', False),
    ('iosched.host_agent.policies.vslicer', 'math', True),
    ('iosched.host_agent.agent', 'oslo_log', True),
    ('iosched.host_agent.agent', 'iosched.contract.payload', True),
    ('iosched.host_agent.agent', 'iosched.simulator.host', False),
])
def test_the_checker(mod, name, ok):
    table = layer_table(TABLE_DOC)
    layer = layer_of(mod, table)
    allowed, third = table[layer]
    top = name.split('.')[0]
    if top in PROJECT:
        got = any(within(name, p) for p in (layer,) + allowed)
    else:
        got = top in STDLIB or third is None or top in third
    assert got == ok


def test_from_import_of_a_submodule_is_the_submodule():
    # `from iosched.host_agent import agent` names iosched.host_agent.agent,
    # which a policy may not import: the old checker saw only `iosched`.
    names = set(imported_names('iosched/host_agent/cmd/agent.py'))
    assert any(n.startswith('iosched.host_agent.') and n.count('.') >= 2
               for n in names), names


def _importers(module):
    return sorted(p for p in sources() if module in set(imported_names(p)))


def test_only_actuators_reach_the_privileged_entrypoints():
    # Root-only writes: iosched.host_agent.linux.privileged runs in the privsep
    # daemon; only the actuators may call it.
    importers = _importers('iosched.host_agent.linux.privileged')
    assert importers and all(p.startswith('iosched/host_agent/actuators/')
                             for p in importers), importers


def test_only_the_libvirt_driver_and_its_knobs_import_libvirt():
    # The driver package (driver + its connection mixin) and the knob writer.
    assert [p for p in _importers('libvirt')
            if p.startswith('iosched/host_agent/')] == [
        'iosched/host_agent/actuators/libvirt_knobs.py',
        'iosched/host_agent/drivers/libvirt/connection.py',
        'iosched/host_agent/drivers/libvirt/driver.py']
