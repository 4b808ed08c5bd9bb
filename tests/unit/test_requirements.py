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
"""Every third-party import of a shipped module is a declared requirement.

The runtime subpackages (what a compute node and a scheduler host run) may
import only what requirements.txt lists, plus the program they plug into
(``nova_plugin`` runs inside Nova, ``cinder_qos`` beside Cinder: that
program's extra and its own direct requirements, e.g. Nova's eventlet).
The demo, simulator, testbed and iotrace may also use their extra of
setup.cfg ``[extras]``. An import is mapped to the distribution that
provides it in this venv (``yaml`` is PyYAML); lazy imports inside
functions count too.
"""

import ast
import configparser
from importlib import metadata
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, 'iosched')
STDLIB = frozenset(sys.stdlib_module_names)

# subpackage of iosched -> the extras it may use besides requirements.txt
# (None: the top-level iosched/*.py modules).
SUBPACKAGE_EXTRAS = {
    None: (),
    'contract': (),
    'host_agent': (),
    'simdriver': (),          # the agent's 'simulated' driver
    'nova_plugin': ('nova',),
    'cinder_qos': ('cinder',),
    'demo': ('demo',),
    'simulator': ('demo',),
    'testbed': ('testbed',),
    'iotrace': ('iotrace',),
    'cloud': ('cloud', 'testbed'),
}
# Extras that name the program a subpackage plugs into: what that program
# requires directly is there too.
HOST_PROGRAMS = {'nova': 'nova', 'cinder': 'cinder'}


def canonical(name):
    return re.sub(r'[-_.]+', '-', name).lower()


def requirement_name(line):
    """``'oslo.config>=9.0.0  # why'`` -> ``'oslo-config'`` (or None)."""
    line = line.split('#')[0].split(';')[0].strip()
    if not line:
        return None
    return canonical(re.match(r'[A-Za-z0-9._-]+', line).group(0))


def runtime_requirements():
    with open(os.path.join(ROOT, 'requirements.txt')) as fh:
        return {n for n in map(requirement_name, fh) if n}


def extras():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, 'setup.cfg'))
    return {name: {n for n in map(requirement_name, value.splitlines())
                   if n}
            for name, value in cfg['extras'].items()}


def direct_requirements(dist):
    try:
        reqs = metadata.requires(dist) or []
    except metadata.PackageNotFoundError:
        pytest.fail('%s is not installed here: tools/bootstrap.sh installs '
                    'it (extra %r)' % (dist, dist))
    return {requirement_name(r) for r in reqs if 'extra ==' not in r}


def allowed(subpackage, declared_extras):
    names = set(runtime_requirements())
    for extra in SUBPACKAGE_EXTRAS[subpackage]:
        assert extra in declared_extras, (
            'setup.cfg [extras] has no %r (used by iosched.%s)'
            % (extra, subpackage))
        names |= declared_extras[extra]
        if extra in HOST_PROGRAMS:
            names |= direct_requirements(HOST_PROGRAMS[extra])
    return names


def third_party_imports(path):
    """The top-level names of the absolute non-stdlib imports of a file."""
    with open(path) as fh:
        tree = ast.parse(fh.read(), path)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split('.')[0]
            if top not in STDLIB and top != 'iosched':
                found.add(top)
    return found


def shipped_modules():
    for dirpath, dirnames, filenames in os.walk(PACKAGE):
        dirnames[:] = [d for d in dirnames if d != '__pycache__']
        for name in sorted(filenames):
            if name.endswith('.py'):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, PACKAGE).split(os.sep)
                yield (rel[0] if len(rel) > 1 else None), path


def test_every_subpackage_has_a_row():
    subs = {sub for sub, _ in shipped_modules()}
    assert subs <= set(SUBPACKAGE_EXTRAS), (
        'add %s to SUBPACKAGE_EXTRAS (which extras may it use?)'
        % sorted(subs - set(SUBPACKAGE_EXTRAS)))


def test_every_import_is_declared():
    providers = metadata.packages_distributions()
    declared_extras = extras()
    problems = []
    for sub, path in shipped_modules():
        ok = allowed(sub, declared_extras)
        for top in sorted(third_party_imports(path)):
            dists = {canonical(d) for d in providers.get(top, ())}
            where = os.path.relpath(path, ROOT)
            if not dists:
                problems.append('%s imports %s, which no installed '
                                'distribution provides' % (where, top))
            elif not dists & ok:
                problems.append(
                    '%s imports %s (%s): not in requirements.txt%s'
                    % (where, top, ', '.join(sorted(dists)),
                       ''.join(' or extra [%s]' % e
                               for e in SUBPACKAGE_EXTRAS[sub])))
    assert not problems, '\n'.join(problems)


def test_demo_only_packages_are_not_runtime():
    """What a compute node and nova-scheduler's Python get stays lean."""
    runtime = runtime_requirements()
    for name in ('matplotlib', 'pyyaml', 'prettytable', 'osc-lib', 'nova',
                 'cinder'):
        assert name not in runtime, name
    assert 'libvirt-python' in runtime  # the agent's default driver


@pytest.mark.parametrize('line,name', [
    ('oslo.config>=9.0.0', 'oslo-config'),
    ('PyYAML>=6.0  # why', 'pyyaml'),
    ('# a comment', None),
    ('', None),
    ('libvirt-python>=9.0; sys_platform == "linux"', 'libvirt-python'),
    ('prometheus_client>=0.17.0', 'prometheus-client'),
])
def test_requirement_name(line, name):
    assert requirement_name(line) == name
