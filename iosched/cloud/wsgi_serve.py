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
"""Serve one OpenStack WSGI application with gunicorn::

    <cloud venv>/bin/python wsgi_serve.py HOST:PORT module:application

Keystone's and Cinder's WSGI modules parse ``sys.argv`` with oslo.config
when imported, so gunicorn's own command line would be read as theirs:
this runner gives them an empty one. One worker with threads, no control
socket (gunicorn's default one in $HOME would be shared by every API).

Run by path with the cloud venv's Python: it imports only gunicorn and the
standard library, so it works before iosched is installed there.
"""

import importlib
import sys

from gunicorn.app.base import BaseApplication


class Server(BaseApplication):

    def __init__(self, bind, target):
        self.bind = bind
        self.target = target
        super().__init__()

    def load_config(self):
        for key, value in (('bind', self.bind), ('workers', 1),
                           ('threads', 8), ('timeout', 300),
                           # SIGTERM: finish requests for 5 s, not 30
                           ('graceful_timeout', 5),
                           ('control_socket_disable', True)):
            self.cfg.set(key, value)

    def load(self):
        sys.argv = [sys.argv[0]]
        module, _, attr = self.target.partition(':')
        return getattr(importlib.import_module(module), attr)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    Server(sys.argv[1], sys.argv[2]).run()


if __name__ == '__main__':
    main()
