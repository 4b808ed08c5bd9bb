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
"""The sdist, as an operator gets it: built from a clean clone, installed.

``python -m build --sdist`` (pbr) on a ``git clone`` of HEAD; the sdist
carries every tracked file. Two genuinely fresh venvs (no system
site-packages; pip's cache makes the downloads cheap, not the venvs):

* a compute node's: ``pip install iosched-X.tar.gz``, the runtime
  requirements resolved from the sdist's metadata (libvirt-python is built
  against libvirt-dev). Every console script answers ``--help``, every
  entry point loads (but Nova's: Nova is not there), the sample configs,
  the systemd unit and the Grafana dashboard are in <venv>/share/iosched,
  and the demo-only packages (matplotlib, PyYAML, prettytable) are absent;
* Nova's Python on a scheduler host: Nova (the version the project's venv
  tests against) and requirements.txt, then the sdist with ``--no-deps``
  (as ansible's iosched_scheduler role can): ``pip check`` passes, the
  filters, weighers and extra-spec validators import and Nova's entry
  point loads, without matplotlib. (PyYAML and prettytable come with
  oslo.config and cliff: iosched itself must not require them.)

Both venvs install side by side with ``--no-compile``; 2-5 minutes on a
2-core machine, most of it installing Nova's ~150 dependencies.
"""

import configparser
import json
import os
import subprocess
import sys
import tarfile
import time

import pytest

from tests import fixtures

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEMO_ONLY = ('matplotlib', 'yaml', 'prettytable')
# Entry-point groups of the program a part plugs into: they load only
# where that program is installed.
HOST_PROGRAM_GROUPS = {'nova.api.extra_spec_validators': 'nova'}


def _env():
    env = dict(os.environ)
    for name in ('PYTHONPATH', 'VIRTUAL_ENV', 'PBR_VERSION',
                 'PIP_REQUIRE_VIRTUALENV'):
        env.pop(name, None)
    return env


def _run(argv, cwd, timeout=900):
    proc = subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, '%s failed (%d):\n%s\n%s' % (
        ' '.join(argv), proc.returncode, proc.stdout[-3000:],
        proc.stderr[-3000:])
    return proc.stdout


def _timed(what, timings, fn, *args, **kwargs):
    start = time.monotonic()
    out = fn(*args, **kwargs)
    timings[what] = round(time.monotonic() - start, 1)
    print('%s: %.1f s' % (what, timings[what]))
    return out


class Venv(object):
    """A fresh venv under ``path`` (the base interpreter, no site)."""

    def __init__(self, path):
        self.path = str(path)
        base = getattr(sys, '_base_executable', sys.executable)
        _run([base, '-m', 'venv', self.path], cwd=self.path.rsplit('/', 1)[0])
        self.python = os.path.join(self.path, 'bin', 'python')

    def script(self, code, *args):
        """Run ``code`` in the venv (cwd: the venv, not the checkout)."""
        return _run([self.python, '-c', code] + list(args), cwd=self.path)


# What the venv's own Python says about the installed iosched.
INSPECT = r'''
import json, sys
from importlib import metadata
skip = set(sys.argv[1].split(',')) - {''}
dist = metadata.distribution('iosched')
out = {'version': dist.version, 'groups': {}, 'errors': [], 'absent': [],
       'requires': [r for r in dist.requires or () if 'extra ==' not in r]}
for ep in dist.entry_points:
    out['groups'].setdefault(ep.group, []).append(ep.name)
    if ep.group in skip or ep.group == 'console_scripts':
        continue
    try:
        ep.load()
    except Exception as e:
        out['errors'].append('%s %s: %r' % (ep.group, ep.name, e))
for name in sys.argv[2].split(','):
    try:
        __import__(name)
    except ImportError:
        out['absent'].append(name)
print(json.dumps(out))
'''


@pytest.fixture(scope='module')
def timings():
    found = {}
    yield found
    print('sdist install timings (s): %s' % json.dumps(found))


@pytest.fixture(scope='module')
def clone(tmp_path_factory):
    fixtures.require('git', subprocess.run(
        ['git', '-C', ROOT, 'rev-parse', 'HEAD'],
        capture_output=True).returncode == 0, 'no git repository at ROOT')
    path = tmp_path_factory.mktemp('iosched-sdist') / 'src'
    _run(['git', 'clone', '--quiet', ROOT, str(path)], cwd=ROOT)
    return str(path)


@pytest.fixture(scope='module')
def sdist(clone, timings):
    try:
        import build  # noqa: F401
    except ImportError:
        fixtures.require('build', False, 'pip install build '
                         '(test-requirements.txt)')
    out = os.path.join(os.path.dirname(clone), 'dist')
    _timed('build sdist', timings, _run,
           [sys.executable, '-m', 'build', '--sdist', '--outdir', out,
            clone], cwd=clone)
    found = [f for f in os.listdir(out) if f.endswith('.tar.gz')]
    assert len(found) == 1, found
    return os.path.join(out, found[0])


@pytest.fixture(scope='module')
def setup_cfg(clone):
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(clone, 'setup.cfg'))
    return cfg


def _declared_entry_points(setup_cfg):
    groups = {}
    for group, value in setup_cfg['entry_points'].items():
        groups[group] = sorted(line.split('=')[0].strip()
                               for line in value.splitlines()
                               if line.strip())
    return groups


def _pip_argv(venv, *args):
    return [venv.python, '-m', 'pip', '--disable-pip-version-check',
            '--quiet', 'install', '--no-compile'] + list(args)


@pytest.fixture(scope='module')
def venvs(sdist, clone, tmp_path_factory, timings):
    """Both fresh venvs, installed side by side (pip is mostly waiting)."""
    fixtures.require('libvirt-dev', subprocess.run(
        ['pkg-config', '--exists', 'libvirt'],
        capture_output=True).returncode == 0,
        'pip builds libvirt-python against it: apt-get install '
        'libvirt-dev pkg-config python3-dev')
    from importlib import metadata
    try:
        nova = metadata.version('nova')
    except metadata.PackageNotFoundError:
        nova = None
    fixtures.require('nova', nova, 'the project venv has no Nova '
                     '(tools/bootstrap.sh installs the nova extra)')
    compute = Venv(tmp_path_factory.mktemp('iosched-compute') / 'venv')
    nova_python = Venv(tmp_path_factory.mktemp('iosched-nova') / 'venv')
    jobs = {
        'pip install sdist (compute venv)': _pip_argv(compute, sdist),
        'pip install nova + requirements.txt (nova venv)': _pip_argv(
            nova_python, 'nova==%s' % nova,
            '-r', os.path.join(clone, 'requirements.txt')),
    }
    start = time.monotonic()
    procs = {what: subprocess.Popen(argv, cwd=os.path.dirname(clone),
                                    env=_env(), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for what, argv in jobs.items()}
    for what, proc in procs.items():
        out, err = proc.communicate(timeout=1800)
        timings[what] = round(time.monotonic() - start, 1)
        assert proc.returncode == 0, '%s failed:\n%s\n%s' % (
            what, out[-3000:], err[-3000:])
    _timed('pip install --no-deps sdist (nova venv)', timings, _run,
           _pip_argv(nova_python, '--no-deps', sdist), cwd=clone)
    return {'compute': compute, 'nova': nova_python}


@pytest.fixture(scope='module')
def compute_venv(venvs):
    return venvs['compute']


@pytest.fixture(scope='module')
def nova_venv(venvs):
    return venvs['nova']


@pytest.fixture(scope='module')
def compute_inspected(compute_venv):
    return _inspect(compute_venv, skip_groups=HOST_PROGRAM_GROUPS)


def _inspect(venv, skip_groups=()):
    return json.loads(venv.script(INSPECT, ','.join(skip_groups),
                                  ','.join(DEMO_ONLY)))


def test_sdist_carries_every_tracked_file(sdist, clone):
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    prefix = names[0].split('/')[0]
    inside = {n[len(prefix) + 1:] for n in names if n.startswith(prefix + '/')}
    tracked = _run(['git', 'ls-files'], cwd=clone).split('\n')
    # setuptools leaves out the VCS's own files (.gitignore)
    missing = sorted(f for f in tracked if f and f not in inside
                     and f != '.gitignore')
    assert not missing, 'not in the sdist: %s' % missing[:20]
    top = {n.split('/')[0] for n in inside if n}
    for name in ('LICENSE', 'README.md', 'requirements.txt',
                 'test-requirements.txt', 'setup.cfg', 'setup.py',
                 'pyproject.toml', 'PKG-INFO', 'AUTHORS', 'ChangeLog',
                 'docs', 'devstack', 'ansible', 'etc', 'iosched', 'tests',
                 'tools'):
        assert name in top, name
    assert prefix.startswith('iosched-')
    assert prefix != 'iosched-0.0.0'


def test_version_is_from_pbr(compute_inspected, sdist):
    version = compute_inspected['version']
    assert version != '0.0.0'
    assert os.path.basename(sdist) == 'iosched-%s.tar.gz' % version


def test_console_scripts_answer_help(compute_venv, setup_cfg):
    scripts = _declared_entry_points(setup_cfg)['console_scripts']
    assert 'io-host-agent' in scripts and len(scripts) >= 10
    for name in scripts:
        path = os.path.join(compute_venv.path, 'bin', name)
        assert os.access(path, os.X_OK), 'no %s' % path
        proc = subprocess.run([path, '--help'], cwd=compute_venv.path,
                              env=_env(), capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, (name, proc.stderr[-2000:])
        assert 'usage' in (proc.stdout + proc.stderr).lower(), name


def test_entry_points_are_installed_and_load(compute_inspected, setup_cfg):
    found = compute_inspected
    declared = _declared_entry_points(setup_cfg)
    assert {g: sorted(n) for g, n in found['groups'].items()} == declared
    assert found['errors'] == []


def test_runtime_requirements_leave_out_the_demo(compute_venv,
                                                compute_inspected):
    """A compute node gets no matplotlib; iosched requires no PyYAML or
    prettytable (oslo.config and cliff bring them, not iosched).
    """
    assert compute_inspected['absent'] == ['matplotlib']
    assert compute_inspected['requires'] and not [
        r for r in compute_inspected['requires']
        if r.split('>')[0].split('=')[0].strip().lower() in (
            'matplotlib', 'pyyaml', 'prettytable', 'nova', 'cinder')]
    _run([compute_venv.python, '-m', 'pip', 'check'], cwd=compute_venv.path)


def test_share_has_configs_unit_and_dashboard(compute_venv, clone):
    share = os.path.join(compute_venv.path, 'share', 'iosched')
    expected = {
        'etc': sorted(f for f in os.listdir(os.path.join(clone, 'etc',
                                                         'iosched'))
                      if f.endswith('.sample')),
        'systemd': ['io-host-agent.service'],
        'grafana': ['iosched-dashboard.json'],
    }
    sources = {'etc': 'etc/iosched', 'systemd': 'etc/systemd',
               'grafana': 'etc/grafana'}
    assert len(expected['etc']) == 3
    for sub, names in expected.items():
        assert sorted(os.listdir(os.path.join(share, sub))) == names, sub
        for name in names:
            with open(os.path.join(share, sub, name), 'rb') as a, \
                    open(os.path.join(clone, sources[sub], name), 'rb') as b:
                assert a.read() == b.read(), (sub, name)
    with open(os.path.join(share, 'grafana',
                           'iosched-dashboard.json')) as fh:
        assert json.load(fh)['panels']


def test_package_data_is_installed(compute_venv):
    where = compute_venv.script(
        'import os, iosched; print(os.path.dirname(iosched.__file__))')
    pkg = where.strip()
    assert pkg.startswith(compute_venv.path), pkg
    assert os.path.exists(os.path.join(pkg, 'demo', 'scenarios',
                                       'default.yaml'))
    assert os.listdir(os.path.join(pkg, 'testbed', 'guest'))


def test_nova_python_with_no_deps_install(nova_venv):
    """requirements.txt + Nova is all the scheduler side needs."""
    _run([nova_venv.python, '-m', 'pip', 'check'], cwd=nova_venv.path)
    nova_venv.script(
        'import iosched.nova_plugin.filters as f, '
        'iosched.nova_plugin.weighers, iosched.nova_plugin.validators; '
        'assert f.all_filters()')
    found = _inspect(nova_venv)
    assert found['errors'] == []
    assert 'nova.api.extra_spec_validators' in found['groups']
    assert 'matplotlib' in found['absent']
