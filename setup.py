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

import os
import runpy
import sys

import setuptools
from setuptools.command import build_ext

SIM = os.path.join('iosched', 'simulator')


def simulator_extensions():
    """The simulator's compiled core (``iosched/simulator/compiled.py``):
    each module's .py with its .pxd, compiled by Cython; none without
    Cython or with IOSCHED_PURE_PYTHON=1 (the .py files then run as they
    are).
    """
    if os.environ.get('IOSCHED_PURE_PYTHON'):
        return []
    try:
        from Cython.Build import cythonize
    except ImportError:
        print('iosched: Cython not found: the simulator runs as pure Python',
              file=sys.stderr)
        return []
    names = runpy.run_path(os.path.join(SIM, 'compiled.py'))['MODULES']
    return cythonize(
        [setuptools.Extension('iosched.simulator.' + n,
                              [os.path.join(SIM, n + '.py')])
         for n in names],
        compiler_directives={'language_level': 3,
                             # C integers raise on overflow, as Python's
                             # never wrap
                             'overflowcheck': True},
        quiet=True)


class OptionalBuildExt(build_ext.build_ext):
    """Builds what it can: without a C compiler the simulator stays pure
    Python (a warning, not a failed install).
    """

    def run(self):
        try:
            super().run()
        except Exception as exc:       # no compiler: CCompilerError etc.
            self._skip(exc)

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as exc:
            self._skip(exc, ext.name)

    @staticmethod
    def _skip(exc, name='the simulator core'):
        print('iosched: %s not compiled (%s): it runs as pure Python'
              % (name, exc), file=sys.stderr)


setuptools.setup(
    setup_requires=['pbr>=2.0.0'],
    pbr=True,
    ext_modules=simulator_extensions(),
    cmdclass={'build_ext': OptionalBuildExt})
