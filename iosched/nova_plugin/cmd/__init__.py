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
"""Console entry points of the Nova plugin (``iosched-placement``).

They run on an operator's machine, not inside nova-scheduler, and never
import nova: the placement rules are the pure ones of ``nova_plugin``.
Imported before any command module: silences the Eventlet deprecation
banner that oslo libraries may print at import time.
"""

import re
import warnings

warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')


def clip(text, limit=200):
    """``text`` with every run of more than ``limit`` non-blank characters
    shortened, so that a 10,000-character argument is not echoed whole in
    an error message.
    """
    return re.sub(r'\S{%d,}' % (limit + 1), lambda m: '%s...(%d characters)'
                  % (m.group()[:limit // 2], len(m.group())), text)
