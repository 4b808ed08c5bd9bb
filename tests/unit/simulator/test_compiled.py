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
"""The simulator's compiled core: which modules it is, how a process sees
what runs, and that the pure-Python files give the compiled ones' results.
"""

import os
import subprocess
import sys

import pytest

from iosched.simulator import compiled

PACKAGE_DIR = os.path.dirname(compiled.__file__)


def test_every_compiled_module_has_its_declarations():
    # a module is compiled with the .pxd beside it, and only MODULES are
    pxds = sorted(f[:-4] for f in os.listdir(PACKAGE_DIR)
                  if f.endswith('.pxd'))
    assert pxds == sorted(compiled.MODULES)
    for name in compiled.MODULES:
        assert os.path.exists(os.path.join(PACKAGE_DIR, name + '.py'))


@pytest.mark.parametrize('path,want', [
    ('/x/cpu.cpython-311-x86_64-linux-gnu.so', True),
    ('/x/cpu.abi3.so', True),
    ('/x/cpu.py', False),
    ('/x/cpu.pxd', False),
    ('', False),
    (None, False),
])
def test_is_extension(path, want):
    assert compiled.is_extension(path) is want


def test_compiled_names_a_subset_in_build_order():
    names = compiled.compiled()
    assert names == tuple(m for m in compiled.MODULES if m in names)
    line = compiled.describe()
    if names:
        assert 'ompiled' in line and 'pure' not in line
    else:
        assert line.startswith('pure Python')


def _child(code, pure):
    env = dict(os.environ)
    env.pop(compiled.PURE_ENV, None)
    if pure:
        env[compiled.PURE_ENV] = '1'
    root = os.path.dirname(os.path.dirname(PACKAGE_DIR))
    env['PYTHONPATH'] = os.pathsep.join(
        [root] + [p for p in [env.get('PYTHONPATH')] if p])
    return subprocess.run([sys.executable, '-c', code], env=env, check=True,
                          stdout=subprocess.PIPE, text=True,
                          cwd=root).stdout.split()


def test_pure_env_runs_the_python_files():
    out = _child('from iosched.simulator import compiled, cpu\n'
                 'print(len(compiled.compiled()), cpu.__file__)', pure=True)
    assert out == ['0', os.path.join(PACKAGE_DIR, 'cpu.py')]


def test_pure_and_installed_core_agree():
    # the same 0.3 simulated s of the 32-VM host with its knobs turned,
    # digest for digest, whichever core is installed
    code = ('from bench import sim_host32\n'
            'sim = sim_host32.build()\n'
            'sim.run_until(100_000)\n'
            'sim_host32.apply_knobs(sim)\n'
            'sim.run_until(300_000)\n'
            'print(sim_host32.digest(sim))')
    assert _child(code, pure=True) == _child(code, pure=False)


SO = 'cpu.cpython-311-x86_64-linux-gnu.so'


@pytest.mark.parametrize('files,want', [
    # (name, mtime) in a package dir -> the sources newer than the build
    ([('cpu.py', 1), ('cpu.pxd', 1), ('cpu.c', 2), (SO, 3)], []),
    ([('cpu.py', 4), ('cpu.pxd', 1), ('cpu.c', 2), (SO, 3)], ['cpu.py']),
    ([('cpu.py', 1), ('cpu.pxd', 4), ('cpu.c', 2), (SO, 3)], ['cpu.pxd']),
    # an installed wheel: no .c beside, mtimes say nothing
    ([('cpu.py', 4), ('cpu.pxd', 4), (SO, 3)], []),
    # not built at all
    ([('cpu.py', 4), ('cpu.pxd', 4), ('cpu.c', 2)], []),
    # another module's files do not count
    ([('cpu.py', 1), ('cpu.c', 2), (SO, 3), ('cpu_balance.py', 9)], []),
])
def test_stale_sources(tmp_path, files, want):
    for name, mtime in files:
        path = tmp_path / name
        path.write_text('')
        os.utime(path, (mtime, mtime))
    assert compiled.stale_sources(str(tmp_path)) == want
