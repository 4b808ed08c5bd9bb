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
"""``iosched-placement --check-flavors``: the audit's rows and fixes (pure).

Turns Nova's flavors into one row per flavor that concerns iosched (an
``iosched:*`` spec, one in another case such as ``IOSCHED:latency_ms``, or a
``CUSTOM_IOSCHED_*`` resource that would claim capacity): a value every
reader ignores (``iosched.contract.flavor``), what
``placement_resources.check()`` finds and the exact
``openstack flavor set`` / ``openstack flavor unset`` commands that make
it right. No I/O, no clock: the command reads the flavors and prints.
"""

import dataclasses
import shlex

from iosched.contract import flavor as flavor_contract
from iosched.nova_plugin import placement_resources as pr

CLASSES = pr.RESOURCE_CLASSES


@dataclasses.dataclass(frozen=True)
class Flavor:
    """A flavor as read from Nova."""

    name: str
    vcpus: int
    specs: dict
    id: str = None


@dataclasses.dataclass(frozen=True)
class Row:
    """The audit of one flavor; ``ok`` when nothing is to be fixed."""

    flavor: Flavor
    problems: tuple = ()    # placement_resources.Problem
    error: str = None       # an iosched spec check() cannot read
    fix: tuple = ()         # shell commands, in order

    @property
    def ok(self):
        return not self.problems and self.error is None

    def as_dict(self):
        return {
            'name': self.flavor.name, 'id': self.flavor.id,
            'vcpus': self.flavor.vcpus, 'ok': self.ok, 'error': self.error,
            'iosched_specs': {k: v for k, v in self.flavor.specs.items()
                              if concerns(k)},
            'problems': [dict(dataclasses.asdict(p), text=str(p))
                         for p in self.problems],
            'fix': list(self.fix)}


# A key concerns iosched: iosched:* in any case, or
# resources<group>:CUSTOM_IOSCHED_*
def concerns(spec_key):
    spec_key = str(spec_key)
    if flavor_contract.looks_like_namespace(spec_key):
        return True
    group, sep, rc = spec_key.partition(':')
    return bool(sep) and group.startswith('resources') and rc in CLASSES


# set:   missing / wrong / invalid with a derived amount -> KEY=derived
# unset: unexpected, numbered group, invalid with none derived -> KEY
def fix_commands(name, problems):
    """The ``openstack`` commands that make ``check()`` find nothing."""
    sets = ['%s=%s' % (p.key, p.want) for p in problems
            if p.kind in ('missing', 'wrong', 'invalid')
            and p.want is not None]
    unsets = [p.key for p in problems
              if p.kind in ('unexpected', 'group')
              or (p.kind == 'invalid' and p.want is None)]
    commands = []
    if sets:
        commands.append('openstack flavor set %s %s' % (
            shlex.quote(name),
            ' '.join('--property ' + shlex.quote(s) for s in sets)))
    if unsets:
        commands.append('openstack flavor unset %s %s' % (
            shlex.quote(name),
            ' '.join('--property ' + shlex.quote(k) for k in unsets)))
    return tuple(commands)


def audit_one(flavor, lsvm_vcpu_share=pr.DEFAULT_LSVM_VCPU_SHARE):
    """The Row of one flavor (a bad iosched spec is the row's error)."""
    try:
        problems = tuple(pr.check(flavor.vcpus, flavor.specs,
                                  lsvm_vcpu_share))
    except ValueError as e:     # InvalidExtraSpec, or vcpus < 1
        return Row(flavor, error='%s (fix the iosched spec first, then '
                                 'run this again)' % e)
    return Row(flavor, problems, fix=fix_commands(flavor.name, problems))


def audit(flavors, lsvm_vcpu_share=pr.DEFAULT_LSVM_VCPU_SHARE):
    """Rows of the flavors that concern iosched, sorted by name."""
    pr.lsvm_milli_per_vcpu(lsvm_vcpu_share)     # ValueError if bad
    return [audit_one(f, lsvm_vcpu_share)
            for f in sorted(flavors, key=lambda f: (f.name, f.id or ''))
            if any(concerns(k) for k in f.specs)]


def _plural(n, word):
    return '%d %s%s' % (n, word, '' if n == 1 else 's')


def text(rows, listed, lsvm_vcpu_share):
    """The report for people: one block per flavor, then a summary."""
    lines = ['%d of %s concern%s iosched (lsvm_vcpu_share %g, %d '
             'milli-CPUs per LSVM vCPU)' % (
                 len(rows), _plural(listed, 'flavor'),
                 's' if len(rows) == 1 else '', lsvm_vcpu_share,
                 pr.lsvm_milli_per_vcpu(lsvm_vcpu_share)),
             '']
    for row in rows:
        specs = ', '.join('%s=%s' % (k, v)
                          for k, v in sorted(row.flavor.specs.items())
                          if flavor_contract.looks_like_namespace(k))
        head = '%s (%s%s)' % (row.flavor.name,
                              _plural(row.flavor.vcpus, 'vCPU'),
                              ', ' + specs if specs else '')
        if row.ok:
            lines.append('%s: ok' % head)
            continue
        lines.append('%s: %s' % (head, 'bad iosched spec' if row.error
                                 else _plural(len(row.problems), 'problem')))
        if row.error:
            lines.append('  ' + row.error)
        lines += ['  ' + str(p) for p in row.problems]
        lines += ['  fix: ' + c for c in row.fix]
    bad = sum(1 for r in rows if not r.ok)
    if bad:
        last = '%d of %s need%s a fix' % (
            bad, _plural(len(rows), 'flavor'), 's' if bad == 1 else '')
    else:
        last = 'every flavor is right' if rows else (
            'no flavor has iosched specs')
    return lines + ['', last]


def as_dict(rows, listed, lsvm_vcpu_share):
    """The report for machines."""
    return {'lsvm_vcpu_share': lsvm_vcpu_share,
            'lsvm_milli_per_vcpu': pr.lsvm_milli_per_vcpu(lsvm_vcpu_share),
            'flavors_listed': listed, 'flavors_checked': len(rows),
            'need_fix': sum(1 for r in rows if not r.ok),
            'flavors': [r.as_dict() for r in rows]}
