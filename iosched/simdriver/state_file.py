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
"""The simulated host's knob values in a file (``simulated_state_file``).

On a real host a killed agent leaves its cgroup files, thread attributes
and libvirt settings as they were. With ``[host_agent]
simulated_state_file``, ``SimulatedKnobs`` saves every knob write here
(JSON, written to a temporary file and renamed, so a kill leaves the old
or the new content, never half of it) and the next process's simulated
host starts from the saved values. The fault tests kill agents with
SIGKILL against it (``tests/functional/test_kill_campaign.py``).
"""

import json
import os

from iosched.contract import knob_kinds


def _key(kind, uuid, target):
    return json.dumps([kind, uuid, target])


def load(path):
    """{(kind, uuid, target): value} saved in ``path`` ({} if none)."""
    try:
        with open(path, encoding='utf-8') as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ValueError('simulated_state_file %s is not a state file '
                         'this agent wrote: %s' % (path, e))
    state = {}
    for key, value in data.items():
        kind, uuid, target = json.loads(key)
        if kind in knob_kinds.PIN_KINDS and isinstance(value, list):
            value = tuple(value)
        state[(kind, uuid, target)] = value
    return state


def save(path, state):
    """Write ``state`` ({(kind, uuid, target): value}) to ``path``
    atomically (a temporary file renamed over it).
    """
    data = {_key(*k): (list(v) if isinstance(v, tuple) else v)
            for k, v in state.items()}
    tmp = '%s.tmp' % path
    with open(tmp, 'w', encoding='utf-8') as fh:
        json.dump(data, fh, sort_keys=True)
    os.replace(tmp, path)
