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
"""Rows, verdicts, the one tolerance rule and the experiment registry of
the paper reproductions.

An experiment is a function ``fn(quick) -> list[Row]`` registered by a
module of this package (``isacs``, ``vslicer``, ``vturbo``, ``flubber``,
``ibalancer``, ``vaio``, ``side_by_side``) in its ``EXPERIMENTS`` list as
``(name, fn)``. It must be a module-level function (experiments run in
worker processes), seeded and deterministic. ``quick`` asks for a shorter
run (tests use it).

A row is one figure: the paper's value, ours, their ratio and its
tolerance, with a verdict computed by ``verdict()`` under one rule:

* ``kind='value'``: an absolute figure; ``match`` when
  ``|ours / paper - 1| <= tol`` (``TOL``, 15 %, unless the row says why
  not), else ``off xR``. A paper figure of 0 takes an absolute ``tol`` in
  the row's unit, with its reason;
* ``kind='change'``: a signed relative change in % (e.g. ISACS vs
  Credit2), with a dead band of ``DEAD_BAND`` (5 %): when the paper's
  change is at least 5 % in size, ours is ``no effect`` below 5 %,
  ``match`` within ``tol`` of the paper's, ``same direction`` with the
  same sign, else ``opposite``; when the paper's own change is below 5 %
  (the paper shows no effect), ours is ``match`` below 5 % too and
  ``off`` at 5 % or more (an effect the paper does not see);
* ``kind='bound'``: the paper's figure is an upper bound; ``holds`` when
  ``ours <= paper * (1 + tol)`` (``tol`` 0 unless the row says why),
  else ``violated``;
* ``kind='info'``: no paper figure (ours only, e.g. a side-by-side row).

Where the paper gives two figures for one value (its prose and its
table), ``paper`` is the table's and ``paper_other`` shows the other
beside it (``paper_text()``).

A ``tol`` other than the kind's default (``DEFAULT_TOL``) needs its
reason in the row (``tol_reason``). A row whose result is set by its
inputs has ``basis='calibrated'`` (the paper's measured figures fed into
the model, or a fit target of the model's calibration) or
``basis='identity'`` (a closed form the model implements), with its
reason (``basis_reason``): its verdict is that label, never ``match``,
and the comparison it would have had is kept as ``check`` (a failing
identity is a bug, or a paper figure that is not its own closed form).
``counts()`` tallies the verdicts per seed paper.
"""

import collections
import dataclasses
import math
import typing

KINDS = ('value', 'change', 'bound', 'info')
BASES = ('measured', 'calibrated', 'identity')
TOL = 0.15              # values and changes: |ours / paper - 1| <= 15 %
DEAD_BAND = 5.0         # changes (in %) smaller than this show no effect
DEFAULT_TOL = {'value': TOL, 'change': TOL, 'bound': 0.0, 'info': None}
# The verdict categories counted, in print order ('off x1.40' -> 'off').
CATEGORIES = ('match', 'same direction', 'opposite', 'no effect', 'off',
              'holds', 'violated', 'calibrated', 'identity', 'info',
              'no result')
# paper_id -> the seed paper it belongs to (docs/reproduction.md).
SEEDS = {'isacs': '000 ISACS', 'vslicer': '001 vSlicer / vTurbo',
         'vturbo': '001 vSlicer / vTurbo', 'flubber': '002 Flubber',
         'ibalancer': '003 I-Balancer', 'vaio': '004 VA-CFQ',
         'side-by-side': 'side by side'}
# Rows of bench/reproduce/independent.py: the simulator against a figure
# derived by hand from a paper's equations, not against the paper's
# measurement. Counted apart from the papers' rows and out of the total.
INDEPENDENT_CLAIM = 'independent check: '
INDEPENDENT_SEED = 'independent checks'


@dataclasses.dataclass(frozen=True)
class Row:
    paper_id: str                  # 'isacs' | 'vslicer' | 'vturbo' | ...
    claim: str                     # e.g. 'ISACS Table 3: hybrid ping'
    setting: str                   # e.g. 'i1c11'
    metric: str                    # e.g. 'mean RTT, Credit2 (ms)'
    paper: typing.Optional[float]
    ours: float
    kind: str = 'value'
    tol: typing.Optional[float] = None     # None: DEFAULT_TOL[kind]
    note: str = ''
    tol_reason: str = ''           # why tol is not the kind's default
    basis: str = 'measured'        # | 'calibrated' | 'identity'
    basis_reason: str = ''         # what sets a calibrated / identity row
    paper_other: str = ''          # the paper's other figure, e.g. 'prose
    #                                -70.7' beside its table's in paper

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError('Row.kind: %r is invalid; accepted: %s'
                             % (self.kind, ', '.join(KINDS)))
        if self.basis not in BASES:
            raise ValueError('Row.basis: %r is invalid; accepted: %s'
                             % (self.basis, ', '.join(BASES)))
        where = '(row %s / %s / %s)' % (self.claim, self.setting,
                                         self.metric)
        if self.kind != 'info' and self.paper is None:
            raise ValueError('Row.paper: None needs kind=info %s' % where)
        if self.tol is None:
            object.__setattr__(self, 'tol', DEFAULT_TOL[self.kind])
        elif self.kind == 'info':
            raise ValueError('Row.tol: an info row has none %s' % where)
        default = DEFAULT_TOL[self.kind]
        absolute = self.kind == 'value' and self.paper == 0
        if (self.tol != default or absolute) and not self.tol_reason:
            raise ValueError(
                'Row.tol_reason: tol %s is not the default %s; say why %s'
                % (self.tol, 'for a paper figure of 0 (absolute)'
                   if absolute else default, where))
        if self.basis != 'measured' and not self.basis_reason:
            raise ValueError('Row.basis_reason: a %s row says what sets it '
                             '%s' % (self.basis, where))
        if self.basis != 'measured' and self.kind == 'info':
            raise ValueError('Row.basis: an info row is measured %s'
                             % where)

    @property
    def ratio(self):
        if self.paper in (None, 0) or self.ours is None:
            return None
        return self.ours / self.paper

    @property
    def check(self):
        """The comparison with the paper under the rule, whatever the
        basis (for a calibrated / identity row: did it come out as set).
        """
        return verdict(self.kind, self.paper, self.ours, self.tol)

    @property
    def verdict(self):
        if self.basis != 'measured':
            return self.basis
        return self.check

    @property
    def seed(self):
        if self.claim.startswith(INDEPENDENT_CLAIM):
            return INDEPENDENT_SEED
        return SEEDS.get(self.paper_id, self.paper_id)

    def tol_text(self):
        """The tolerance as the tables print it."""
        if self.kind == 'info':
            return '-'
        if self.kind == 'bound':
            return '<= paper' if not self.tol else '<= paper +%g%%' % (
                100 * self.tol)
        if self.kind == 'value' and self.paper == 0:
            return '|x| <= %g' % self.tol
        return '+-%g%%' % (100 * self.tol)

    def paper_text(self, fmt=str):
        """The paper's figure, with its other one beside it if any."""
        text = fmt(self.paper)
        return '%s (%s)' % (text, self.paper_other) if self.paper_other \
            else text

    def why(self):
        """The row's stated reasons (tolerance, basis), for the tables."""
        return '; '.join(r for r in (self.tol_reason, self.basis_reason)
                         if r)

    def as_dict(self):
        d = dataclasses.asdict(self)
        d['ratio'] = self.ratio
        d['verdict'] = self.verdict
        d['check'] = self.check
        d['seed'] = self.seed
        return d


def verdict(kind, paper, ours, tol):
    """The verdict of one comparison (see the module docstring)."""
    if kind == 'info' or ours is None or (
            isinstance(ours, float) and math.isnan(ours)):
        return 'info' if kind == 'info' else 'no result'
    if kind == 'bound':
        return 'holds' if ours <= paper * (1 + tol) + 1e-12 else 'violated'
    if kind == 'change':
        if abs(paper) < DEAD_BAND:
            # ours shows an effect the paper does not see; a ratio to a
            # figure inside the dead band says nothing
            return 'match' if abs(ours) < DEAD_BAND else 'off'
        if abs(ours) < DEAD_BAND:
            return 'no effect'
        r = ours / paper
        if abs(r - 1) <= tol:
            return 'match'
        return 'same direction' if r > 0 else 'opposite'
    if paper == 0:
        return 'match' if abs(ours) <= tol else 'off'
    r = ours / paper
    if abs(r - 1) <= tol:
        return 'match'
    return 'off x%.2f' % r


def category(v):
    """The counted category of a verdict ('off x1.40' -> 'off')."""
    return 'off' if v.startswith('off') else v


def counts(rows):
    """{seed: {category: n}} and the total under the key 'total', every
    category of ``CATEGORIES`` present (0 when none).
    """
    out = {}
    for r in rows:
        out.setdefault(r.seed, collections.Counter())[
            category(r.verdict)] += 1
    total = collections.Counter()
    for seed, c in out.items():
        if seed != INDEPENDENT_SEED:
            total.update(c)
    out['total'] = total
    return {seed: {k: out[seed].get(k, 0) for k in CATEGORIES}
            for seed in sorted(out, key=_seed_order)}


def _seed_order(seed):
    # the seed papers by number, then the side-by-side rows, the total,
    # then the independent checks (not in the total)
    return (seed == INDEPENDENT_SEED, seed == 'total',
            not seed[:1].isdigit(), seed)


def pct_change(new, base):
    """(new - base) / base in %, the convention of the digests' tables."""
    return 100.0 * (new - base) / base
