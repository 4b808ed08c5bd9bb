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
"""What the agent undoes before its first tick, and when it must stop.

``recover(conf, driver, actuator)``: restore what a crashed previous run
left in the journal, then put back what was changed with no journal
record at all (reconciliation, ``[host_agent] reconcile_at_start``;
``iosched.host_agent.actuators.reconcile``).

``journal_failure(actuator)``: why the agent must stop, or None: a
journal that takes no entries (read-only, full) means every later write
would be unjournaled, so the agent restores and stops instead
(docs/reliability.md §4c).
"""

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def recover(conf, driver, actuator):
    """Journal restore, then reconciliation; each said when it did
    something. Never raises for an inventory the driver cannot give.
    """
    instances = None
    try:
        # Knob writers resolve instances through the driver's inventory
        # (thread ids, cgroups): take one before replaying the journal.
        instances = driver.list_instances()
    except Exception:
        LOG.exception('no inventory before recovery; knobs of running '
                      'instances may not be restorable yet')
    restore = getattr(actuator, 'recover', None)
    if restore is not None:
        restored = restore()
        if restored:
            LOG.warning('restored %d knobs left by a previous run', restored)
    reconcile = getattr(actuator, 'reconcile', None)
    if (reconcile is not None and instances is not None and
            conf.host_agent.reconcile_at_start):
        put_back = reconcile(instances)
        if put_back:
            LOG.warning('put back %d knobs found changed with no journal '
                        'record', len(put_back))


def journal_failure(actuator):
    """The reason the agent stops for its journal, or None."""
    why = getattr(actuator, 'journal_failed', None)
    if why is None:
        return None
    return ('the journal %s cannot be written (%s): the agent does not act '
            'unjournaled; it restores what the journal records and stops'
            % (actuator.journal.path, why))
