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
"""The main loop shared by the child-process API servers of the tests
(``python -m tests.nova.server``, ``python -m tests.cinder.server``).

Imports neither Nova nor Cinder: each server module passes its own
``serve(out, stop)``, which prints one JSON line on ``out`` when ready and
then calls :func:`wait`.
"""

import os
import shutil
import sys
import tempfile


def wait(stop):
    """Until a signal set ``stop`` or stdin reached end of file."""
    import eventlet
    from eventlet import patcher

    # the unpatched select and read: a zero-timeout poll of stdin, then a
    # green sleep while the API's green threads serve
    poll = patcher.original('select').select
    read = patcher.original('os').read
    while not stop:
        ready, _, _ = poll([0], [], [], 0)
        if ready and not read(0, 4096):
            return
        eventlet.sleep(0.2)


def main(serve, prefix):
    """Run ``serve(out, stop)`` with stdout kept for its JSON line (all
    else goes to stderr) and a private TMPDIR removed at the end.
    """
    out = os.fdopen(os.dup(1), 'w')
    os.dup2(2, 1)
    tmp = tempfile.mkdtemp(prefix=prefix)
    os.environ['TMPDIR'] = tempfile.tempdir = tmp
    stop = []
    try:
        serve(out, stop)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    sys.exit('run python -m tests.nova.server or tests.cinder.server')
