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
"""One warning per ignored flavor extra spec, per process.

Description:
    A stored extra spec that every reader ignores (``iosched.contract.
    flavor.FlavorSpecs.ignored``: a value the Nova API would refuse, a
    miscased or unknown ``iosched:`` key) is logged once per (flavor, key,
    value) per process by ``warn_ignored``, whichever reader meets it
    first: the scheduler when it reads a request (``nova_plugin.
    request_spec``), the host agent when its driver lists the instance
    (``iosched.host_agent.model.InstanceInfo``); never again on the next tick,
    host or request.

Requirements:
    Standard library only (``logging``: the agent's and nova-scheduler's
    oslo.log handlers receive it).

Limitations:
    The last ``WARN_MEMORY`` (flavor, key, value) are remembered; an older
    one is warned about again when met again.

Spec URL:
    docs/nova.md, section "Flavor extra specs".
"""

import collections
import logging
import threading

from iosched.contract import flavor as flavor_contract

LOG = logging.getLogger(__name__)

WARN_MEMORY = 4096
_WARNED = collections.OrderedDict()     # token -> None, oldest first
_WARNED_LOCK = threading.Lock()


def _first_time(token):
    with _WARNED_LOCK:
        if token in _WARNED:
            return False
        _WARNED[token] = None
        while len(_WARNED) > WARN_MEMORY:
            _WARNED.popitem(last=False)
        return True


# token(flavor, key, value) := (flavor, key shortened; len and hash of the
# value): a 1 MB value is not kept whole.
def warn_ignored(flavor, reading, log=LOG):
    """Log each of ``reading.ignored`` (a ``flavor.FlavorSpecs``) once per
    process for ``flavor`` (a flavor name); returns how many were logged.
    """
    shown = flavor_contract.shorten(flavor or '?')
    logged = 0
    for item in reading.ignored:
        text = str(item.value)
        token = (shown, flavor_contract.shorten(item.key), len(text),
                 hash(text))
        if not _first_time(token):
            continue
        log.warning('flavor %(flavor)s: %(error)s; the scheduler, the host '
                    'agent and Placement sizing read it as unset '
                    '(%(unset)s)', {'flavor': shown, 'error': item.error,
                                    'unset': item.unset})
        logged += 1
    return logged


def forget():
    """Warn again about everything (tests)."""
    with _WARNED_LOCK:
        _WARNED.clear()
