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
"""Rows, verdicts and the experiment registry of the paper reproductions.

An experiment is a function ``fn(quick) -> list[Row]`` registered by a
module of this package (``isacs``, ``vslicer``, ``vturbo``,
``side_by_side``) in its ``EXPERIMENTS`` list as ``(name, fn)``. It must be
a module-level function (experiments run in worker processes), seeded and
deterministic. ``quick`` asks for a shorter run (tests use it).

A row is one figure: the paper's value, ours and their ratio, with a
verdict computed by ``verdict()``:

* ``kind='value'``: an absolute figure; ``match`` when ours is within
  ``tol`` (relative) of the paper's, else ``off xR``;
* ``kind='change'``: a signed relative change in % (e.g. ISACS vs
  Credit2); ``match`` within ``tol`` relative, ``same direction`` when
  the signs agree, ``no effect`` when ours is exactly 0 (the mechanism
  never acted), else ``opposite``;
* ``kind='bound'``: the paper's figure is an upper bound; ``holds`` when
  ours <= paper * (1 + tol), else ``violated``;
* ``kind='info'``: no paper figure (ours only, e.g. a side-by-side row).
"""

import dataclasses
import math
import typing

KINDS = ('value', 'change', 'bound', 'info')


@dataclasses.dataclass(frozen=True)
class Row:
    paper_id: str                  # 'isacs' | 'vslicer' | 'vturbo' | ...
    claim: str                     # e.g. 'ISACS Table 3: hybrid ping'
    setting: str                   # e.g. 'i1c11'
    metric: str                    # e.g. 'mean RTT, Credit2 (ms)'
    paper: typing.Optional[float]
    ours: float
    kind: str = 'value'
    tol: float = 0.25
    note: str = ''

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError('Row.kind: %r is invalid; accepted: %s'
                             % (self.kind, ', '.join(KINDS)))
        if self.kind != 'info' and self.paper is None:
            raise ValueError('Row.paper: None needs kind=info (row %s/%s)'
                             % (self.claim, self.metric))

    @property
    def ratio(self):
        if self.paper in (None, 0) or self.ours is None:
            return None
        return self.ours / self.paper

    @property
    def verdict(self):
        return verdict(self.kind, self.paper, self.ours, self.tol)

    def as_dict(self):
        d = dataclasses.asdict(self)
        d['ratio'] = self.ratio
        d['verdict'] = self.verdict
        return d


def verdict(kind, paper, ours, tol):
    """The verdict of one row (see the module docstring)."""
    if kind == 'info' or ours is None or (
            isinstance(ours, float) and math.isnan(ours)):
        return 'info' if kind == 'info' else 'no result'
    if kind == 'bound':
        return 'holds' if ours <= paper * (1 + tol) + 1e-12 else 'violated'
    if paper == 0:
        return 'match' if abs(ours) <= tol else 'differs'
    r = ours / paper
    if abs(r - 1) <= tol:
        return 'match'
    if kind == 'change':
        if ours == 0:
            return 'no effect'
        return 'same direction' if r > 0 else 'opposite'
    return 'off x%.2f' % r


def pct_change(new, base):
    """(new - base) / base in %, the convention of the digests' tables."""
    return 100.0 * (new - base) / base
