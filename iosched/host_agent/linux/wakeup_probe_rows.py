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
"""The wake-up self-test's answer (``wakeup_probe``), pure: one
``model.WakeupProbe`` row per case from the sleeper's lateness samples
(p50 and p99 by ``iosched.contract.stats.percentile``, nearest rank), a
failed row with the kernel's refusal in words, the ratios to the stock
row, and the dict form the privsep daemon sends back.
"""

import errno as errno_mod
import os

from iosched.contract import lsvm as lsvm_bound
from iosched.contract import stats
from iosched.host_agent import model


def row(case, lateness_us, share=0.0):
    """A measured row from the sleeper's lateness list (us) and, when the
    share phase ran, its CPU share.
    """
    values = [float(v) for v in lateness_us]
    if not values:
        return failed(case, 'the sleeper reported no wake-ups')
    return model.WakeupProbe(
        mechanism=case, ok=True,
        p50_us=round(stats.percentile(values, 0.5), 1),
        p99_us=round(stats.percentile(values, 0.99), 1),
        samples=len(values), share=round(float(share), 4))


# combine(rows of one case over R repeats):
#   any repeat failed: that failure (the first)
#   else p50, p99 := the medians of the repeats' p50s and p99s (one busy
#   spell in one repeat moves neither), samples := their sum, share := the
#   largest measured, p99s_us := each repeat's p99 in order
def combine(case_rows):
    """One row from the repeats of one case."""
    case_rows = list(case_rows)
    bad = [r for r in case_rows if not r.ok]
    if bad:
        return bad[0]
    if len(case_rows) == 1:
        return case_rows[0]
    p50s = [r.p50_us for r in case_rows]
    p99s = [r.p99_us for r in case_rows]
    return model.WakeupProbe(
        mechanism=case_rows[0].mechanism, ok=True,
        p50_us=round(stats.percentile(p50s, 0.5), 1),
        p99_us=round(stats.percentile(p99s, 0.5), 1),
        samples=sum(r.samples for r in case_rows),
        share=max(r.share for r in case_rows),
        p99s_us=tuple(r.p99_us for r in case_rows))


def failed(case, error):
    return model.WakeupProbe(mechanism=case, ok=False, error=str(error))


def error_text(exc):
    """'EPERM (Operation not permitted): <message>' for an OS refusal."""
    err = getattr(exc, 'errno', None)
    if err and err in errno_mod.errorcode:
        return '%s (%s): %s' % (errno_mod.errorcode[err], os.strerror(err),
                                exc)
    return str(exc)


def ratios(rows):
    """{case: (p50 / stock p50, p99 / stock p99)} for the ok rows; empty
    when there is no ok stock row.
    """
    stock = [r for r in rows if r.mechanism == lsvm_bound.PROBE_STOCK and r.ok]
    if not stock:
        return {}
    s = stock[0]
    return {r.mechanism: (round(r.p50_us / max(s.p50_us, 0.1), 2),
                          round(r.p99_us / max(s.p99_us, 0.1), 2))
            for r in rows if r.ok}


def to_dict(probe):
    return {'mechanism': probe.mechanism, 'ok': probe.ok,
            'p50_us': probe.p50_us, 'p99_us': probe.p99_us,
            'samples': probe.samples, 'error': probe.error,
            'share': probe.share, 'p99s_us': list(probe.p99s_us)}


def from_dict(d):
    return model.WakeupProbe(
        mechanism=str(d['mechanism']), ok=bool(d['ok']),
        p50_us=float(d.get('p50_us', 0.0)),
        p99_us=float(d.get('p99_us', 0.0)),
        samples=int(d.get('samples', 0)), error=str(d.get('error', '')),
        share=float(d.get('share', 0.0)),
        p99s_us=tuple(float(v) for v in d.get('p99s_us', ())))
