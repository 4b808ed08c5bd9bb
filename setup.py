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


class OptionalBuildExt(build_ext.build_ext):
    """Builds all of the simulator's core or none of it: without a C
    compiler (or on any build error) it stays pure Python, with a warning,
    not a failed install (a part compiled against a part in Python would
    not import).
    """

    def run(self):
        try:
            super().run()
        except Exception as exc:       # no compiler: CCompilerError etc.
            for ext in self.extensions:
                name = self.get_ext_filename(ext.name)
                for path in (os.path.join(self.build_lib, name), name):
                    if os.path.exists(path):
                        os.remove(path)
            self.skip(exc)

    @staticmethod
    def skip(exc):
        print('iosched: the simulator core not compiled (%s): it runs as '
              'pure Python' % exc, file=sys.stderr)


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
    try:
        return cythonize(
            [setuptools.Extension('iosched.simulator.' + n,
                                  [os.path.join(SIM, n + '.py')])
             for n in names],
            compiler_directives={'language_level': 3,
                                 # C integers raise on overflow, as
                                 # Python's never wrap
                                 'overflowcheck': True},
            quiet=True, force=sources_changed(names))
    except Exception as exc:            # Cython.Compiler.Errors.CompileError
        OptionalBuildExt.skip(exc)
        return []


def sources_changed(names):
    """True when a .py or .pxd of the core is newer than a .c left by an
    earlier build: regenerate them all (cythonize follows a module's own
    .py and .pxd, not the .pxd files its .pxd cimports, so a changed
    extension type would leave its subclasses' .c files stale).
    """
    def mtime(name, ext):
        path = os.path.join(SIM, name + ext)
        return os.path.getmtime(path) if os.path.exists(path) else None

    built = [t for t in (mtime(n, '.c') for n in names) if t is not None]
    if not built:
        return False
    return max(mtime(n, ext) or 0 for n in names
               for ext in ('.py', '.pxd')) > min(built)


setuptools.setup(
    setup_requires=['pbr>=2.0.0'],
    pbr=True,
    ext_modules=simulator_extensions(),
    cmdclass={'build_ext': OptionalBuildExt})
