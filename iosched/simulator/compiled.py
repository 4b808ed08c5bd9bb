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
"""Which of the simulator's modules run compiled, and how to run them pure.

The event loop, the EEVDF scheduler and the hot workload, disk and
throttle paths (``MODULES``) are plain Python files that the normal
install (``pip install .`` / ``pip install -e .``, ``tools/bootstrap.sh``)
also compiles with Cython, each with the type declarations of its ``.pxd``
file beside it (extension types, C integer times, direct method calls).
The ``.py`` file stays the one source: without Cython or a C compiler, or
with ``IOSCHED_PURE_PYTHON=1`` at install time, the install builds nothing
and the same files run as Python, with the same results (the digests of
``tests/unit/simulator/test_speed_digest.py``).

``compiled()`` names the modules running compiled in this process (empty:
pure Python); ``make bench`` prints it. Setting ``IOSCHED_SIMULATOR_PURE=1``
before ``iosched.simulator`` is first imported runs the ``.py`` files even
when the compiled ones are installed (``bench/simulator_speed.py`` measures
both in one run this way).
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

# The compiled core, in build order; each has a .pxd beside its .py.
MODULES = ('events', 'sched_base', 'eevdf', 'cpu_wakeup', 'cpu_balance',
           'cpu_deadline', 'cpu_bandwidth', 'cpu', 'workloads', 'disk',
           'throttle', 'host')
PACKAGE = 'iosched.simulator'
PURE_ENV = 'IOSCHED_SIMULATOR_PURE'


def is_extension(path):
    """True when ``path`` is a compiled extension module's file."""
    return bool(path) and path.endswith(
        tuple(importlib.machinery.EXTENSION_SUFFIXES))


def compiled():
    """The ``MODULES`` running compiled in this process, in build order."""
    return tuple(m for m in MODULES if is_extension(getattr(
        importlib.import_module('%s.%s' % (PACKAGE, m)), '__file__', '')))


def describe():
    """One line for a bench's output: what runs, compiled or pure."""
    names = compiled()
    if not names:
        why = (' (%s=1)' % PURE_ENV if os.environ.get(PURE_ENV)
               else ' (not built: no Cython or no C compiler at install)')
        return 'pure Python' + why
    if len(names) == len(MODULES):
        return 'compiled (Cython, %d modules)' % len(names)
    return 'partly compiled (Cython: %s)' % ', '.join(names)


class _SourceFinder:
    """Finds ``MODULES`` as their ``.py`` files (``PURE_ENV``)."""

    def __init__(self, package_dir):
        self.package_dir = package_dir

    def find_spec(self, fullname, path=None, target=None):
        prefix, _, name = fullname.rpartition('.')
        if prefix != PACKAGE or name not in MODULES:
            return None
        return importlib.util.spec_from_file_location(
            fullname, os.path.join(self.package_dir, name + '.py'))


def honour_pure_env(package_dir):
    """With ``PURE_ENV`` set, import ``MODULES`` from their ``.py`` files
    (called by ``iosched.simulator`` before any of them is imported).
    """
    if os.environ.get(PURE_ENV) and not any(
            isinstance(f, _SourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFinder(package_dir))
