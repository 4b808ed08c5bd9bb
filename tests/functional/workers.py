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
"""Run and watch ``scheduler_worker.py`` processes from the functional
tests.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      'scheduler_worker.py')
MODES = ('native', 'eventlet')


def closed_port():
    """A local TCP port nothing listens on."""
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Workers(object):
    """One scheduler_worker.py process (and its forked workers)."""

    def __init__(self, status_dir, url, report_topic, agents_topic,
                 mode='native', forks=0, first_index=0, requests=0,
                 extra=()):
        self.status_dir = str(status_dir)
        self.indexes = list(range(first_index, first_index + max(forks, 1)))
        args = [sys.executable, SCRIPT, '--status-dir', self.status_dir,
                '--url', url, '--report-topic', report_topic,
                '--agents-topic', agents_topic, '--forks', str(forks),
                '--first-index', str(first_index),
                '--requests', str(requests)] + list(extra)
        if mode == 'eventlet':
            args.append('--eventlet')
        env = dict(os.environ, PYTHONWARNINGS='ignore')
        self.stderr = open(os.path.join(self.status_dir,
                                        'stderr-%d.log' % first_index), 'w+')
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=self.stderr, env=env)

    def status(self, index):
        path = os.path.join(self.status_dir, 'worker-%d.json' % index)
        try:
            with open(path) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def wait(self, predicate, index=None, timeout=60.0):
        """Poll the status of ``index`` (default: every worker)."""
        indexes = self.indexes if index is None else [index]
        deadline = time.monotonic() + timeout
        while True:
            statuses = [self.status(i) for i in indexes]
            if all(s is not None and predicate(s) for s in statuses):
                return statuses
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError('workers %s not there (exit %s): %s\n'
                                     'stderr:\n%s' % (
                                         indexes, self.proc.poll(),
                                         statuses, self.log()))
            time.sleep(0.05)

    def log(self):
        self.stderr.seek(0)
        return self.stderr.read()[-6000:]

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout)
        self.stderr.close()
        return self.proc.returncode
