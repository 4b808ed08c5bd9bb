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
"""Pure: the verdict lines the testbed benches print and store as
``targets``, and the pieces their reasons are written with.

``line(what, met, figure, reason)`` gives ``target <what>: met
(<figure>)``, ``target <what>: NOT met (measured: <figure>; <reason>)``,
or, when the run did not record the figure (``met is None``), ``target
<what>: not judged (not recorded)``. ``span`` writes the range of a
run's figures ("0.33-0.44"); ``load`` reads a recorded JSON for a
bench's ``--report``.
"""

import json

NOT_RECORDED = 'not recorded'


def line(what, met, figure, reason=''):
    """One verdict line; ``reason`` is written only when not met."""
    if met is None:
        return 'target %s: not judged (%s)' % (what, figure or NOT_RECORDED)
    if met:
        return 'target %s: met (%s)' % (what, figure)
    return 'target %s: NOT met (measured: %s)' % (
        what, '; '.join(p for p in (figure, reason) if p))


def span(values, fmt='%.3g'):
    """'lo-hi' of the values that are not None ('v' when all agree),
    NOT_RECORDED without any.
    """
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return NOT_RECORDED
    lo, hi = fmt % vals[0], fmt % vals[-1]
    return lo if lo == hi else '%s-%s' % (lo, hi)


def listed(values, fmt='%s'):
    """'a, b, c' ('-' for a missing one)."""
    return ', '.join('-' if v is None else fmt % v for v in values)


def load(path):
    """A bench's recorded JSON."""
    with open(path) as fh:
        return json.load(fh)
