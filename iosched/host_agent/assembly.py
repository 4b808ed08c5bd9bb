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
"""The one place an ``Agent`` is put together.

``build_agent(conf, driver, ...)`` wires an agent around a driver that
exists: the knob set registered for the driver's name (entry points
``iosched.host_agent.knobs``), the journal, the actuator
(``[host_agent] actuator``) writing through that knob set, the policies
(``[host_agent] policies``) and the reporter. ``io-host-agent``, the
embedded default (``iosched-demo``), the benches and the tests all build
their agents here; each keyword overrides one piece, for what a test or a
bench injects. The agent is returned ready, not started: ``start()``
(or ``run()``) replays the journal and resolves the LSVM mechanism.

LSVM mechanism: ``host_sched=None`` lets ``Agent.start()`` resolve it
(``iosched.host_agent.lsvm_mechanism``, when a vSlicer policy runs); a
``model.HostSched`` given here is the agent's mechanism from the first
tick on and ``start()`` keeps it (a bench that measures one mechanism
after another).
"""

from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent import agent as agent_mod
from iosched.host_agent import plugins


def build_agent(conf, driver, *, policies=None, knobs=None, actuator=None,
                journal_path=None, reporter=None, collectors=None,
                host_sched=None):
    """A ready ``Agent`` over ``driver``, wired from ``conf``.

    :param policies: policy objects, in order (default: ``[host_agent]
        policies``, built by ``plugins.load_policies``).
    :param knobs: the ``knob_set.KnobSet`` to write through (default: the
        one registered for ``driver.name``).
    :param actuator: an actuator object (default: ``[host_agent]
        actuator`` over ``knobs`` and the journal).
    :param journal_path: the journal's file; ``''`` keeps it in memory
        (default: ``[host_agent] journal_path``). Unused with ``actuator``.
    :param reporter: where reports go (``report_host_io``), or None.
    :param collectors: (vCPU collector, disk collector) instead of the
        defaults.
    :param host_sched: a fixed ``model.HostSched`` (see the module
        docstring), or None to resolve it at ``start()``.
    """
    if actuator is None:
        if knobs is None:
            knobs = plugins.load_knobs(conf, driver)
        if journal_path is None:
            journal_path = conf.host_agent.journal_path
        actuator = plugins.load_actuator(
            conf, conf.host_agent.actuator, knobs,
            journal_mod.Journal(journal_path or None))
    if policies is None:
        policies = plugins.load_policies(conf)
    return agent_mod.Agent(conf, driver, policies, actuator,
                           reporter=reporter, collectors=collectors,
                           host_sched=host_sched)
