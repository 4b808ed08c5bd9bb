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
"""iosched installed into the cloud's venv as a package: ``python -m build
--sdist`` (pbr, version from the git tags) of a checkout, then ``pip
install`` of that sdist, as an operator installs a release; never the
source tree on a path. ``setup_develop`` of the cloud's DevStack functions
calls it::

    python -m iosched.cloud.package STATE_DIR PROJECT_DIR
"""

import glob
import os
import shutil
import sys

from iosched.cloud import layout as layout_mod
from iosched.cloud import procs


def build_sdist(layout, project_dir):
    out = layout.path('dist')
    shutil.rmtree(out, ignore_errors=True)
    procs.run([layout.python, '-m', 'build', '--sdist', '--outdir', out,
               project_dir], layout, log_name='iosched-install')
    sdists = glob.glob(os.path.join(out, '*.tar.gz'))
    if len(sdists) != 1:
        raise procs.ServiceFailed('expected one sdist in %s, found %s'
                                  % (out, sdists))
    return sdists[0]


def install(layout, project_dir):
    """Build and install; the installed version."""
    sdist = build_sdist(layout, project_dir)
    procs.run([layout.python, '-m', 'pip', 'install', '-q',
               '--force-reinstall', '--no-deps', sdist],
              layout, log_name='iosched-install')
    # its requirements, resolved against what the venv has
    procs.run([layout.python, '-m', 'pip', 'install', '-q', sdist],
              layout, log_name='iosched-install')
    return installed_version(layout)


def installed_version(layout):
    res = procs.run([layout.python, '-c',
                     'import importlib.metadata as m; '
                     'print(m.version("iosched"))'], check=False)
    return res.stdout.strip() if res.returncode == 0 else None


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        sys.exit(__doc__)
    layout = layout_mod.load(args[0])
    print('iosched %s installed into %s' % (install(layout, args[1]),
                                             layout.venv_dir))


if __name__ == '__main__':
    main()
