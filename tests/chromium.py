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
"""A page checked in a real headless browser (Debian's ``chromium``).

``check(path)`` loads a local HTML file with ``--dump-dom`` and returns
{'dom': the DOM after scripts ran, 'console': the page's console lines
(chromium logs each as ``...:CONSOLE:...``; a CSP violation, a failed
load or a script error is one), 'selfcheck': the ``data-*`` attributes
the page's own script wrote into ``#selfcheck``}. ``require()`` skips
locally and fails under CI=true when chromium is missing.
"""

import os
import re
import shutil
import subprocess
import tempfile

from tests import fixtures

CANDIDATES = ('chromium', 'chromium-browser', 'google-chrome')


def binary():
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


def require():
    path = binary()
    fixtures.require('chromium', path is not None,
                     'no %s on PATH (apt-get install chromium)'
                     % ' / '.join(CANDIDATES))
    return path


def check(path, timeout=90):
    exe = require()
    with tempfile.TemporaryDirectory(prefix='iosched-chromium-') as prof:
        p = subprocess.run(
            [exe, '--headless', '--no-sandbox', '--disable-gpu',
             '--no-first-run', '--user-data-dir=' + prof,
             '--enable-logging=stderr', '--v=0',
             '--virtual-time-budget=5000', '--dump-dom',
             'file://' + os.path.abspath(path)],
            capture_output=True, text=True, timeout=timeout)
    console = [line for line in p.stderr.splitlines() if ':CONSOLE' in line]
    m = re.search(r'<p id="selfcheck"([^>]*)>', p.stdout)
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(1))) if m \
        else {}
    return {'rc': p.returncode, 'dom': p.stdout, 'console': console,
            'selfcheck': attrs, 'stderr': p.stderr}
