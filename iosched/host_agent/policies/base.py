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
"""Policy base: ``decide(snapshot, state) -> Plan``, pure, and its Params.

A policy reads only its arguments (a ``model.HostSnapshot``, its previous
state and its own parameters); it does no file, libvirt or bus I/O and
never reads the clock.

State: a stateful policy declares a frozen ``State`` dataclass; ``decide``
gets the ``Plan.state`` of its previous call (None at the first: it starts
from ``State()``) and returns the next one in ``Plan.state``. The agent
keeps it under the policy's name (``Agent.policy_states``).

Parameters: each policy's options live in its own group
``[host_agent_policy.<name>]`` (``iosched/host_agent/conf``), where their
defaults are written, once. Its ``Params`` is a frozen dataclass whose fields
are those options by name, with no default of its own; ``read_params`` is the
one function that builds it from the group, for the agent
(``Policy.params``, every tick, so an override applies at the next one)
and for tests and benches (``iosched.host_agent.policy_params.params_for``,
from the options' defaults).
"""

import abc
import dataclasses

GROUP_PREFIX = 'host_agent_policy.'


def read_params(group, params_cls):
    """``params_cls`` from an option group: every field is the option of
    its name; a list option becomes a tuple (Params are frozen, hashable).
    ``group``: anything with the options as attributes (an oslo group).
    """
    values = {}
    for field in dataclasses.fields(params_cls):
        try:
            value = getattr(group, field.name)
        except AttributeError:
            raise LookupError(
                '%s.%s has no option %r in its group: every Params field '
                'must be an option of the policy\'s [%s<name>] group' % (
                    params_cls.__module__, params_cls.__qualname__,
                    field.name, GROUP_PREFIX)) from None
        values[field.name] = tuple(value) if isinstance(value, list) \
            else value
    return params_cls(**values)


class Policy(metaclass=abc.ABCMeta):
    name = 'base'
    # The policy's frozen dataclass of parameters (its options, by name).
    Params = None

    def __init__(self, conf):
        self.conf = conf

    def params(self):
        """This policy's Params from ``[host_agent_policy.<name>]``."""
        return read_params(self.conf[GROUP_PREFIX + self.name], self.Params)

    @abc.abstractmethod
    def decide(self, snapshot, state):
        """Return a ``model.Plan`` for this snapshot; ``state``: the
        ``Plan.state`` this policy returned last (None at first).
        """
