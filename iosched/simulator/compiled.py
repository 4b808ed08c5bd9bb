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
both in one run this way). In a source tree (an editable install: Cython's
``.c`` files lie beside the ``.py``), a ``.py`` or ``.pxd`` edited after
the build makes the whole core run from the ``.py`` files, with a warning,
until it is rebuilt (``pip install --no-deps -e .``).
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import warnings

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
        if os.environ.get(PURE_ENV):
            why = '%s=1' % PURE_ENV
        elif _STALE:
            why = 'the compiled core is older than %s' % _STALE[0]
        else:
            why = 'not built: no Cython or no C compiler at install'
        return 'pure Python (%s)' % why
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


_STALE = []     # the source found newer than its build, if any


def stale_sources(package_dir):
    """The ``.py``/``.pxd`` files of ``MODULES`` edited after the
    extension built from them, in a source tree (where Cython's ``.c``
    lies beside the ``.py``); empty elsewhere.
    """
    out = []
    names = set(os.listdir(package_dir))
    for m in MODULES:
        if m + '.c' not in names:
            continue
        built = [os.path.getmtime(os.path.join(package_dir, n))
                 for n in names if n.startswith(m + '.') and is_extension(n)]
        for src in (m + '.py', m + '.pxd'):
            if built and src in names and os.path.getmtime(
                    os.path.join(package_dir, src)) > max(built):
                out.append(src)
    return out


def honour_pure_env(package_dir):
    """Import ``MODULES`` from their ``.py`` files when ``PURE_ENV`` is set
    or a source is newer than its build (called by ``iosched.simulator``
    before any of them is imported).
    """
    if any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        return
    if not os.environ.get(PURE_ENV):
        _STALE[:] = stale_sources(package_dir)
        if not _STALE:
            return
        warnings.warn('iosched.simulator: %s changed after the compiled '
                      'core was built: running the .py files (rebuild: '
                      'pip install --no-deps -e .)' % ', '.join(_STALE))
    sys.meta_path.insert(0, _SourceFinder(package_dir))
