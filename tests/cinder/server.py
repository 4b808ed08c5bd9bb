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
"""Cinder's real v3 API as a process of its own, for tests that import Nova.

``python -m tests.cinder.server`` starts what the ``cinder_api`` fixture
of ``tests/cinder/conftest.py`` starts, with the same harness code
(``running_api``): the ``osapi_volume`` WSGI service on
127.0.0.1 and a free port (``auth_strategy=noauth``), an in-memory sqlite
database, cinder-scheduler and cinder-volume with Cinder's fake driver.
It gives one project unlimited quotas, then prints one JSON line on
stdout::

    {"endpoint": "http://127.0.0.1:PORT/v3/<project>",
     "root": "http://127.0.0.1:PORT/", "project_id": ..., "user_id": ...,
     "token": "<user>:<project>"}

and serves until SIGTERM, SIGINT or end of file on stdin. Its own
temporary files live in a directory it removes on the way out. Everything
else the process writes (Cinder's logs) goes to stderr. Nova and Cinder
cannot share an interpreter (both register options on the global
``cfg.CONF``); ``tests/cinder_process.py`` runs this from Nova's tests.
"""

import json
import signal
import sys

from tests import child_server


def _serve(out, stop):
    from tests.cinder import conftest as cinder_conftest

    with cinder_conftest.running_api() as api:
        # after the services started (they may set handlers of their own)
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda signum, frame: stop.append(signum))
        out.write(json.dumps({'endpoint': api.endpoint, 'root': api.root,
                              'project_id': api.project_id,
                              'user_id': api.user_id,
                              'token': api.token}) + '\n')
        out.flush()
        child_server.wait(stop)


def main():
    return child_server.main(_serve, 'iosched-cinder-')


if __name__ == '__main__':
    sys.exit(main())
