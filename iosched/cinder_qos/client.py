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

"""SLO volume types over Cinder's API: plan, create, list, show, set, delete.

An *SLO type* is a Cinder volume type associated with a QoS spec (consumer
front-end) that carries ``iosched:*`` keys; both are named after the type.
``plan()`` is pure: what would be created. ``SloAdmin`` applies a plan
through an ``Api`` (the REST calls it needs;
``iosched.cinder_qos.rest.RestApi`` over Cinder's v3 API), idempotently, and
undoes the earlier steps of a command when a later one fails.

The back end's latency floor: Cinder exposes no measured latency (no pool
capability nor standard extra spec carries one), so the admin passes the
figure measured on the back end as ``min_latency_ms`` (``--min-latency-ms``)
and ``plan()`` refuses an L below it, naming both.
"""

import dataclasses

from iosched.cinder_qos import translate
from iosched.contract import qos_keys
from iosched.contract import slo as slo_mod
from iosched.contract import slo_units

EXIT_OK = 0
EXIT_API = 1          # Cinder refused or could not be reached
EXIT_INPUT = 2        # bad SLO text or option
EXIT_CONFLICT = 3     # an existing spec/type differs, or the type is in use
EXIT_NOT_FOUND = 4


class AdminError(Exception):
    """A refused admin command; ``code`` is the CLI's exit code."""

    code = EXIT_API


class InputError(AdminError):
    code = EXIT_INPUT


class Conflict(AdminError):
    code = EXIT_CONFLICT


class NotFound(AdminError):
    code = EXIT_NOT_FOUND


@dataclasses.dataclass(frozen=True)
class Plan:
    """What ``create`` makes for one SLO: type, QoS spec and its keys."""

    type_name: str
    qos_name: str
    consumer: str
    specs: dict
    slo_text: str
    description: str


def plan(name, slo_text, headroom=translate.DEFAULT_HEADROOM,
         expected_qd=None, min_latency_ms=None,
         default_expected_qd=translate.DEFAULT_EXPECTED_QD,
         latency_class_threshold=translate.DEFAULT_LATENCY_CLASS_THRESHOLD,
         default_ref_io_bytes=slo_mod.DEFAULT_REF_IO_BYTES):
    """The Plan for type ``name`` with SLO ``slo_text``; pure.

    Raises InputError for a bad name, bad SLO text, a non-positive
    ``min_latency_ms`` or an L below it, and for keys ``check`` rejects.
    """
    name = (name or '').strip()
    if not name or len(name) > 255:
        raise InputError("type name '%s': must be 1 to 255 characters"
                         % name)
    if min_latency_ms is not None and not (min_latency_ms > 0):
        raise InputError('--min-latency-ms %s: must be greater than 0 (the '
                         "back end's measured latency, ms)"
                         % slo_units.fmt(min_latency_ms))
    try:
        s = slo_mod.parse(slo_text, default_ref_io_bytes=default_ref_io_bytes)
        specs = translate.translate(
            s, headroom=headroom, expected_qd=expected_qd,
            default_expected_qd=default_expected_qd,
            latency_class_threshold=latency_class_threshold)
    except slo_mod.SLOError as e:
        raise InputError(str(e)) from e
    if min_latency_ms is not None and s.latency_ms < min_latency_ms:
        raise InputError(
            'latency %sms is below %sms, what the back end measured '
            '(--min-latency-ms): no ceiling can meet it; accepted: a latency '
            '>= %sms' % (slo_units.fmt(s.latency_ms),
                         slo_units.fmt(min_latency_ms),
                         slo_units.fmt(min_latency_ms)))
    problems = translate.check(specs)
    if problems:
        raise InputError('; '.join(problems))
    text = _slo_text(specs)      # as list/show read it back
    return Plan(name, name, translate.consumer(), specs, text,
                'iosched SLO %s' % text)


def slo_specs(specs):
    """True if a QoS spec's keys carry an iosched SLO."""
    return any(qos_keys.is_iosched_key(k) for k in specs or {})


def diff(have, want):
    """Lines saying how spec keys ``have`` differ from ``want``."""
    out = []
    for k in sorted(set(have) | set(want)):
        if k not in have:
            out.append('%s: missing (want %s)' % (k, want[k]))
        elif k not in want:
            out.append('%s: %s (not in the SLO)' % (k, have[k]))
        elif str(have[k]) != str(want[k]):
            out.append('%s: %s (want %s)' % (k, have[k], want[k]))
    return out


@dataclasses.dataclass
class Result:
    """A command's outcome: the SLO type and what was done, in order."""

    type_name: str
    qos_name: str
    consumer: str
    specs: dict
    slo_text: str
    actions: list
    type_id: str = ''
    qos_id: str = ''

    @property
    def changed(self):
        return any(not a.startswith('unchanged') for a in self.actions)


def _slo_text(specs):
    try:
        return slo_mod.SLO.from_specs(specs).to_text()
    except slo_mod.SLOError as e:
        return 'invalid: %s' % e


class SloAdmin:
    """The admin's operations on SLO types over an ``Api``."""

    def __init__(self, api):
        self.api = api

    # -- look-ups ---------------------------------------------------------
    def _spec(self, name):
        found = [q for q in self.api.qos_specs() if q['name'] == name]
        return found[0] if found else None

    def _type(self, name):
        found = [t for t in self.api.types()
                 if t['name'] == name or t['id'] == name]
        return found[0] if found else None

    def _type_spec(self, vtype):
        """The QoS spec associated with a volume type, or None."""
        for q in self.api.qos_specs():
            if any(a.get('id') == vtype['id']
                   for a in self.api.associations(q['id'])):
                return q
        return None

    def _result(self, vtype, spec, actions):
        specs = dict(spec.get('specs') or {})
        return Result(vtype['name'], spec['name'], spec.get('consumer', ''),
                      specs, _slo_text(specs), actions, vtype['id'],
                      spec['id'])

    # -- commands ---------------------------------------------------------
    def create(self, p, force=False):
        """Create (or find equal) QoS spec, type and association for Plan p.

        An existing spec with other keys is refused (Conflict, naming each
        difference) unless ``force``, which updates its keys in place.
        """
        undo, actions = [], []
        try:
            spec = self._spec(p.qos_name)
            if spec is None:
                spec = self.api.create_qos_spec(p.qos_name, p.consumer,
                                                p.specs)
                undo.append(lambda s=spec: self.api.delete_qos_spec(s['id']))
                actions.append('created QoS spec %s' % p.qos_name)
            else:
                have = dict(spec.get('specs') or {})
                delta = diff(have, p.specs)
                if spec.get('consumer', p.consumer) != p.consumer:
                    delta.insert(0, 'consumer: %s (want %s)'
                                 % (spec.get('consumer'), p.consumer))
                if delta and not force:
                    raise Conflict(
                        "QoS spec '%s' exists with other keys: %s; use "
                        "'type set' to change its SLO, or --force"
                        % (p.qos_name, '; '.join(delta)))
                if delta:
                    self._rekey(spec, have, p.specs, undo)
                    actions.append('updated QoS spec %s: %s'
                                   % (p.qos_name, '; '.join(delta)))
                else:
                    actions.append('unchanged QoS spec %s' % p.qos_name)
            vtype = self._type(p.type_name)
            if vtype is None:
                vtype = self.api.create_type(p.type_name, p.description)
                undo.append(lambda t=vtype: self.api.delete_type(t['id']))
                actions.append('created volume type %s' % p.type_name)
            else:
                actions.append('unchanged volume type %s' % p.type_name)
            other = self._type_spec(vtype)
            if other is not None and other['id'] != spec['id']:
                raise Conflict("volume type '%s' is associated with QoS spec "
                               "'%s', not '%s'; disassociate it first"
                               % (p.type_name, other['name'], p.qos_name))
            if other is None:
                self.api.associate(spec['id'], vtype['id'])
                actions.append('associated %s with %s'
                               % (p.qos_name, p.type_name))
            else:
                actions.append('unchanged association')
        except Exception:
            for step in reversed(undo):
                try:
                    step()
                except Exception:    # best effort; the first error wins
                    pass
            raise
        spec = dict(spec, specs=dict(p.specs), consumer=p.consumer)
        return self._result(vtype, spec, actions)

    def _rekey(self, spec, have, want, undo):
        self.api.set_qos_keys(spec['id'], want)
        gone = sorted(set(have) - set(want))
        if gone:
            self.api.unset_qos_keys(spec['id'], gone)

        def back():
            self.api.set_qos_keys(spec['id'], have)
            extra = sorted(set(want) - set(have))
            if extra:
                self.api.unset_qos_keys(spec['id'], extra)
        undo.append(back)

    def list(self):
        """Results (actions empty) of every type with an iosched QoS spec."""
        types = {t['id']: t for t in self.api.types()}
        out = []
        for q in self.api.qos_specs():
            if not slo_specs(q.get('specs')):
                continue
            for a in self.api.associations(q['id']):
                if a.get('id') in types:
                    out.append(self._result(types[a['id']], q, []))
        return sorted(out, key=lambda r: r.type_name)

    def show(self, name):
        """The Result of SLO type ``name``; NotFound if it is not one."""
        vtype = self._type(name)
        if vtype is None:
            raise NotFound("volume type '%s' not found" % name)
        spec = self._type_spec(vtype)
        if spec is None or not slo_specs(spec.get('specs')):
            raise NotFound("volume type '%s' has no iosched QoS spec; "
                           "create one with 'type create'" % name)
        return self._result(vtype, spec, [])

    def set(self, p):
        """Update the QoS spec keys of SLO type ``p.type_name`` in place.

        Volumes attached already keep their ceiling until re-attach (Nova
        applies QoS at attach); the iosched agent reads the new SLO.
        """
        cur = self.show(p.type_name)
        delta = diff(cur.specs, p.specs)
        spec = {'id': cur.qos_id, 'name': cur.qos_name}
        if not delta:
            return self._result({'id': cur.type_id, 'name': cur.type_name},
                                dict(spec, specs=cur.specs,
                                     consumer=cur.consumer),
                                ['unchanged QoS spec %s' % cur.qos_name])
        undo = []
        try:
            self._rekey(spec, cur.specs, p.specs, undo)
        except Exception:
            for step in reversed(undo):
                step()
            raise
        return self._result({'id': cur.type_id, 'name': cur.type_name},
                            dict(spec, specs=dict(p.specs),
                                 consumer=cur.consumer),
                            ['updated QoS spec %s: %s'
                             % (cur.qos_name, '; '.join(delta))])

    def delete(self, name):
        """Delete the type, then its QoS spec; refused if volumes use it.

        The type goes first: Cinder refuses to delete a type in use, and
        then nothing has changed. The spec is kept if other types use it.
        """
        cur = self.show(name)
        vols = self.api.volumes_of_type(cur.type_id, cur.type_name)
        if vols:
            raise Conflict("volume type '%s' is in use by %d volume(s) (%s); "
                           'retype or delete them first'
                           % (name, len(vols), ', '.join(vols[:5])))
        try:
            self.api.delete_type(cur.type_id)
        except AdminError as e:
            if 'in use' in str(e).lower():
                raise Conflict("volume type '%s' is in use by volumes; "
                               'retype or delete them first (%s)'
                               % (name, e)) from e
            raise
        actions = ['deleted volume type %s' % cur.type_name]
        if self.api.associations(cur.qos_id):
            actions.append('kept QoS spec %s: other types use it'
                           % cur.qos_name)
        else:
            self.api.delete_qos_spec(cur.qos_id)
            actions.append('deleted QoS spec %s' % cur.qos_name)
        cur.actions = actions
        return cur
