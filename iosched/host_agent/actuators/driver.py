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
"""Apply plans through the host's knob set, journaled and idempotent.

``DriverActuator(knobs, journal)`` writes through a ``knob_set.KnobSet``
(the real host's ``HostKnobs`` or the simulator's knob set), never
through the driver, which only reads.

For every action: skip it outright when it equals the action in force on
its knob (written or found set, its decision noted: policies re-issue
most of their actions unchanged every tick, and those cost neither a
read nor a note); skip the write when the knob already has the value
(cached last write, so an unchanged value costs no reads) but note the
new explanation; otherwise take the current value (the cached last write,
else read), journal (before, after, rule, reason), write. A failed write
is logged and the other actions still run (and retried next tick).
Whatever came of an action, its explanation is kept as the knob's latest
``model.Decision`` (``decisions``): a decision is noted when it changes,
and the last one per knob is kept. ``restore_all`` writes the journaled
originals back in reverse order.
"""

from oslo_log import log as logging

from iosched.contract import knob_kinds
from iosched.host_agent.actuators import base
from iosched.host_agent.actuators import decisions as decisions_mod
from iosched.host_agent.actuators import journal as journal_mod
from iosched.host_agent.actuators import reconcile as reconcile_mod
from iosched.host_agent.drivers import base as driver_base
from iosched.host_agent import model

LOG = logging.getLogger(__name__)


# no knob value equals it: a key the actuator never wrote
_UNWRITTEN = object()


class DriverActuator(base.Actuator):
    name = 'driver'

    def __init__(self, knobs, journal=None):
        self.knobs = knobs
        self.journal = (journal if journal is not None
                        else journal_mod.Journal())
        self._written = {}    # key -> value we last wrote
        # key -> the action in force: its value is on the knob (written or
        # found there) and its decision is the book's. Only while the plan
        # policy is ``_in_force_policy`` (a rule without a policy prefix is
        # explained by it) and the book has dropped nothing.
        self._in_force = {}
        self._in_force_policy = None
        self.book = decisions_mod.DecisionBook()
        self._failed = {}     # key -> last write error, to log it once
        self.errors = []
        # The held-knobs marker (held_marker): kinds whose originals are
        # also kept in the domain, and what each domain's marker says.
        self._marked_kinds = frozenset(knobs.marked_kinds())
        self._marks = {}      # uuid -> {(kind, target): original} written

    @property
    def journal_failed(self):
        """Why the journal cannot take entries (an OSError), or None: the
        agent must stop acting (restoring is still done).
        """
        return None if self.journal.writable else (
            self.journal.write_error or 'not writable')

    def recover(self):
        """Restore what a previous (crashed) run left in the journal."""
        pending = self.journal.pending()
        if pending:
            LOG.warning('journal holds %d changes from a previous run; '
                        'restoring them', len(pending))
        return self.restore_all()

    def reconcile(self, instances):
        """Put back the knobs of ``instances`` found changed with no
        journal record (``reconcile``); the list of what was put back.
        """
        return reconcile_mod.reconcile(self.knobs, instances,
                                       self.journal.pending())

    def weight_group(self):
        """The LSVM parent group the knob set made ('' without one:
        ``lsvm_group_knobs.ensure_parent``).
        """
        make = getattr(self.knobs, 'weight_group', None)
        return make() if make is not None else ''

    def unstick_deadline(self):
        """Free the deadline threads the kernel left throttled (the knob
        set's ``unstick_deadline``, when it has one); the freed threads.
        The knob set refuses them a reservation from then on, so what was
        written stays cached here and is not re-applied; the journal still
        restores the knob (to the fair class it is in) at stop.
        """
        unstick = getattr(self.knobs, 'unstick_deadline', None)
        return unstick() if unstick is not None else []

    def apply(self, plan, ts):
        self.errors = []
        kinds = set(self.knobs.knobs())
        changes = []
        in_force = self._in_force
        if (plan.policy != self._in_force_policy
                or len(self.book) >= self.book.maxlen):
            in_force.clear()
            self._in_force_policy = plan.policy
        for action in plan.actions:
            key = action.key
            held = in_force.get(key)
            if held is not None and (held is action or (
                    held.value == action.value and held == action)):
                continue          # the same action again: nothing to do
            in_force.pop(key, None)
            if action.kind not in kinds:
                self.book.note(action, plan.policy, ts, before=None,
                               applied=False,
                               error='no %s knob on this host' % action.kind)
                continue
            if action.value == knob_kinds.ORIGINAL:
                self._back_to_original(action, plan.policy, ts)
                continue
            written = self._written.get(key, _UNWRITTEN)
            if written == action.value:
                self.book.note(action, plan.policy, ts)
                in_force[key] = action
                continue
            try:
                change = self._set(action, plan.policy, ts, written)
            except journal_mod.JournalWriteError:
                # Not journaled, so not written: nor is any other knob of
                # this plan; the agent stops (``journal_failed``).
                break
            if change is not None:
                changes.append(change)
        return changes

    def _set(self, action, policy, ts, written):
        """Take the knob's value (``written``, the cached last write, else
        read), journal, write and note one action: the ``model.Change``,
        or None when the knob had the value or the write failed (noted,
        retried next tick). ``JournalWriteError`` (noted) when it cannot
        be journaled.
        """
        key = action.key
        before = None
        try:
            before = (self.knobs.read_knob(action.kind, action.instance_uuid,
                                           action.target)
                      if written is _UNWRITTEN else written)
            if before == action.value:
                self._written[key] = action.value
                self.book.note(action, policy, ts, before=before)
                self._in_force[key] = action
                return None
            change = model.Change(
                kind=action.kind, instance_uuid=action.instance_uuid,
                target=action.target, before=before, after=action.value,
                rule=action.rule, ts=ts, reason=action.reason)
            self.journal.record(change)
            self.knobs.write_knob(action.kind, action.instance_uuid,
                                  action.target, action.value)
        except journal_mod.JournalWriteError as e:
            self.errors.append('journal: %s' % e)
            self.book.note(action, policy, ts, before=before, applied=False,
                           error=str(e))
            raise
        except driver_base.DriverError as e:
            # Retried every tick; said once per knob and error.
            log = LOG.debug if self._failed.get(key) == str(e) else \
                LOG.warning
            self._failed[key] = str(e)
            log('cannot set %(k)s %(u)s/%(t)s=%(v)s: %(err)s',
                {'k': action.kind, 'u': action.instance_uuid,
                 't': action.target, 'v': action.value, 'err': e})
            self.errors.append('%s %s/%s: %s' % (
                action.kind, action.instance_uuid, action.target, e))
            self.book.note(action, policy, ts, before=before, applied=False,
                           error=str(e) or 'write failed')
            return None
        if LOG.isEnabledFor(logging.INFO):   # ~100 a tick: no dict for none
            LOG.info('set %(k)s %(u)s/%(t)s: %(b)s -> %(a)s (%(rule)s: '
                     '%(reason)s)', {'k': action.kind,
                                     'u': action.instance_uuid,
                                     't': action.target, 'b': before,
                                     'a': action.value, 'rule': action.rule,
                                     'reason': action.reason})
        self._written[key] = action.value
        self.book.note(action, policy, ts, before=before)
        self._in_force[key] = action
        self._failed.pop(key, None)
        self._remark(action.kind, action.instance_uuid)
        return change

    def _back_to_original(self, action, policy, ts):
        """``knob_kinds.ORIGINAL``: write the journaled original back and
        retire the entry; nothing when the agent never changed the knob.
        """
        key = action.key
        pending = self.journal.pending()
        if key not in pending:
            self._written.pop(key, None)
            self._in_force[key] = action    # nothing to put back
            return
        before = pending[key]
        try:
            self.knobs.write_knob(action.kind, action.instance_uuid,
                                  action.target, before)
        except driver_base.DriverError as e:
            LOG.warning('cannot restore %(k)s %(u)s/%(t)s=%(v)s: %(err)s',
                        {'k': action.kind, 'u': action.instance_uuid,
                         't': action.target, 'v': before, 'err': e})
            self.errors.append('%s %s/%s: %s' % (
                action.kind, action.instance_uuid, action.target, e))
            return
        LOG.info('restored %(k)s %(u)s/%(t)s = %(v)s (%(rule)s: %(why)s)',
                 {'k': action.kind, 'u': action.instance_uuid,
                  't': action.target, 'v': before, 'rule': action.rule,
                  'why': action.reason})
        self.journal.forget(key)
        self._written.pop(key, None)
        self._in_force[key] = action        # put back: nothing more to do
        self.book.forget(key)
        self._remark(action.kind, action.instance_uuid)

    def rebase(self, action, policy, ts):
        """Make ``action.value`` the knob's original (a volume's new static
        limits): written at once unless a policy holds the knob, whose next
        plan then starts from it; restoring writes it from now on.
        """
        key = action.key
        self._in_force.pop(key, None)     # the policy's action: apply again
        if key in self.journal.pending():
            self.journal.rebase(key, action.value)
            self._remark(action.kind, action.instance_uuid)
            LOG.info('%(k)s %(u)s/%(t)s: original is now %(v)s (%(rule)s: '
                     '%(why)s)', {'k': action.kind, 'u': action.instance_uuid,
                                  't': action.target, 'v': action.value,
                                  'rule': action.rule, 'why': action.reason})
            return True
        try:
            before = self.knobs.read_knob(action.kind, action.instance_uuid,
                                          action.target)
            if before != action.value:
                self.knobs.write_knob(action.kind, action.instance_uuid,
                                      action.target, action.value)
        except driver_base.DriverError as e:
            LOG.warning('cannot set %(k)s %(u)s/%(t)s=%(v)s: %(err)s',
                        {'k': action.kind, 'u': action.instance_uuid,
                         't': action.target, 'v': action.value, 'err': e})
            self.errors.append('%s %s/%s: %s' % (
                action.kind, action.instance_uuid, action.target, e))
            return False
        LOG.info('set %(k)s %(u)s/%(t)s: %(b)s -> %(a)s (%(rule)s: '
                 '%(why)s)', {'k': action.kind, 'u': action.instance_uuid,
                              't': action.target, 'b': before,
                              'a': action.value, 'rule': action.rule,
                              'why': action.reason})
        self._written.pop(key, None)
        self.book.note(action, policy, ts, before=before)
        return True

    def forget_instances(self, uuids):
        gone = set(uuids)
        for key in list(self.journal.pending()):
            if key[1] in gone:
                self.journal.forget(key)
        for cache in (self._written, self._failed, self._in_force):
            for key in [k for k in cache if k[1] in gone]:
                del cache[key]
        for uuid in gone:
            self._marks.pop(uuid, None)
        self.book.forget_instances(gone)

    def restore_all(self):
        """Write originals back; keep in the journal what could not be."""
        restored = 0
        for key, before in reversed(list(self.journal.pending().items())):
            kind, uuid, target = key
            try:
                self.knobs.write_knob(kind, uuid, target, before)
            except driver_base.DriverError as e:
                if self._instance_gone(uuid):
                    LOG.info('not restoring %(k)s %(u)s/%(t)s: the instance '
                             'is gone', {'k': kind, 'u': uuid, 't': target})
                    self.journal.forget(key)
                    self.book.forget(key)
                else:
                    LOG.error('cannot restore %(k)s %(u)s/%(t)s = %(v)s, '
                              'kept in the journal: %(err)s',
                              {'k': kind, 'u': uuid, 't': target,
                               'v': before, 'err': e})
                continue
            restored += 1
            self.journal.forget(key)
            self.book.forget(key)
            LOG.info('restored %(k)s %(u)s/%(t)s = %(v)s',
                     {'k': kind, 'u': uuid, 't': target, 'v': before})
            self._remark(kind, uuid)
        if restored and not self.journal.pending():
            self.journal.clear()
        self._written.clear()
        self._in_force.clear()
        return restored

    def _remark(self, kind, uuid):
        """Keep the domain's marker equal to what the journal holds of
        its marked knobs (held_marker); written only when that changes.
        """
        if kind in self._marked_kinds:
            self._write_marker(uuid)

    def _write_marker(self, uuid):
        held = {(k, t): v for (k, u, t), v in self.journal.pending().items()
                if u == uuid and k in self._marked_kinds}
        if self._marks.get(uuid) == held:
            return
        try:
            self.knobs.mark_held(uuid, held)
        except driver_base.DriverError as e:
            LOG.warning('%s: the journal still holds them', e)
            return
        self._marks[uuid] = held

    def adopt(self, uuid):
        """First sight of ``uuid``: put back every original its domain's
        marker records that this journal does not hold (the domain was
        live-migrated here, or this host's agent lost its journal): no
        decision here explains those values. Returns how many.
        """
        if not self._marked_kinds:
            return 0
        try:
            found = self.knobs.read_held(uuid)
        except driver_base.DriverError as e:
            LOG.warning('%s', e)
            return 0
        if not found:
            return 0
        host, held = found
        pending = self.journal.pending()
        restored, failed = 0, 0
        for (kind, target), original in sorted(held.items()):
            if (kind, uuid, target) in pending:
                continue            # ours: the journal restores it
            try:
                self.knobs.write_knob(kind, uuid, target, original)
            except driver_base.DriverError as e:
                failed += 1
                LOG.warning('cannot put back %(k)s %(u)s/%(t)s = %(v)s '
                            '(set by the agent on %(h)s): %(err)s',
                            {'k': kind, 'u': uuid, 't': target,
                             'v': original, 'h': host, 'err': e})
                continue
            restored += 1
            LOG.warning('put back %(k)s %(u)s/%(t)s = %(v)s: the agent on '
                        '%(h)s had changed it and no decision here explains '
                        'it (a live migration, or a lost journal)',
                        {'k': kind, 'u': uuid, 't': target, 'v': original,
                         'h': host})
        if not failed:
            self._marks.pop(uuid, None)
            self._write_marker(uuid)
        return restored

    def _instance_gone(self, uuid):
        try:
            return not self.knobs.running(uuid)
        except Exception:
            return False

    def read_knob(self, kind, instance_uuid, target):
        return self.knobs.read_knob(kind, instance_uuid, target)

    def decisions(self):
        return self.book.latest()
