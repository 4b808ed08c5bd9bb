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
"""Saved HostReports: ``iosched-status --save DIR`` writes each host's
newest report as ``DIR/<host>.json`` in the form ``payload.load`` reads
(``iosched-explain --report``, ``iosched-placement --report``).
"""

import json
import os


class SaveError(Exception):
    """A report file could not be written; says which and why."""


def save(reports, directory):
    """Each host's report as ``<directory>/<host>.json`` (``to_dict()``,
    what ``payload.load`` reads), written whole or not at all; returns the
    paths written.
    """
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as e:
        raise SaveError('--save %s: cannot create the directory: %s'
                    % (directory, e))
    written = []
    for host, (report, _) in sorted(reports.items()):
        # a host name is not a path: keep it inside the directory
        name = host.replace(os.sep, '_').lstrip('.') or '_'
        path = os.path.join(directory, name + '.json')
        tmp = path + '.tmp'
        try:
            with open(tmp, 'w', encoding='utf-8') as fh:
                json.dump(report.to_dict(), fh, indent=2, sort_keys=True)
                fh.write('\n')
            os.replace(tmp, path)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise SaveError('--save %s: cannot write %s: %s'
                            % (directory, path, e))
        written.append(path)
    return written
