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
"""One tally for every fault campaign (issue 27): ``make bench-faults``
prints it.

Each campaign test calls ``note(campaign, cases=..., escaped=...,
knobs_left=..., wrongly_stored=...)`` once it has run its cases; with
``IOSCHED_FAULTS_TALLY=FILE`` set (``make bench-faults`` sets it) a JSON
line is appended to FILE, otherwise nothing happens. The figures:

* ``cases``: inputs or faults tried;
* ``escaped``: exceptions that escaped where a clear error was due (a
  traceback, a crash of the agent, an exit code outside the documented
  table);
* ``knobs_left``: knobs left changed after the agent stopped or restarted;
* ``wrongly_stored``: reports stored that should have been refused
  (replays, unsigned, implausible).

A campaign asserts its own figures are 0 where they must be; the tally
only carries them to the summary (``tests/fault_summary.py``).
"""

import json
import os

FIGURES = ('cases', 'escaped', 'knobs_left', 'wrongly_stored')
ENV = 'IOSCHED_FAULTS_TALLY'


def note(campaign, cases, escaped=0, knobs_left=0, wrongly_stored=0):
    """Append one campaign's figures to ``$IOSCHED_FAULTS_TALLY``."""
    path = os.environ.get(ENV)
    if not path:
        return
    row = dict(campaign=campaign, cases=int(cases), escaped=int(escaped),
               knobs_left=int(knobs_left),
               wrongly_stored=int(wrongly_stored))
    with open(path, 'a', encoding='utf-8') as fh:
        fh.write(json.dumps(row, sort_keys=True) + '\n')
