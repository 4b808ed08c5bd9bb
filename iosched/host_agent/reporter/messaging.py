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
"""The reporter's transport: one oslo.messaging RPC transport per URL.

Like ceilometer/messaging.py: transports are cached, since each holds
connections. oslo.messaging 18 registers some options only on the global
``cfg.CONF``, so transports are always built on it.

A forked child starts with an empty cache (``os.register_at_fork``): the
parent's transports share its sockets, so the child neither uses nor
cleans them up (they stay referenced, so no finalizer closes anything).
"""

import os
import threading

from oslo_config import cfg
import oslo_messaging

_LOCK = threading.Lock()
_TRANSPORTS = {}


def get_transport(conf=None, url=None):
    """Return the cached RPC transport for ``url`` (None: the default)."""
    conf = conf or cfg.CONF
    with _LOCK:
        transport = _TRANSPORTS.get(url)
        if transport is None:
            transport = oslo_messaging.get_rpc_transport(conf, url=url)
            _TRANSPORTS[url] = transport
        return transport


def cleanup():
    """Close every cached transport (on agent stop and in tests)."""
    with _LOCK:
        for transport in _TRANSPORTS.values():
            transport.cleanup()
        _TRANSPORTS.clear()


_INHERITED = []


def _after_fork_in_child():
    global _LOCK
    _LOCK = threading.Lock()
    _INHERITED.extend(_TRANSPORTS.values())
    _TRANSPORTS.clear()


if hasattr(os, 'register_at_fork'):
    os.register_at_fork(after_in_child=_after_fork_in_child)
