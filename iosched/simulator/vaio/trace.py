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
"""Seed 004's five focal layers and vCPU states, recorded from a run.

``traced_run(scn)`` runs ``run.run`` with ``TraceMetrics`` and returns
``(Result, requests, vcpu)``:

* ``requests``: one tuple per request, ``(rid, vm, write, nsect, lba,
  t_request, t_queuing, t_dispatch, t_completion, t_response)`` in ms;
  a time is None when the request had not reached that layer when the
  run stopped. In this model the guest's submission reaches dom0's
  elevator at once (no ring delay is modelled), so Request = Queuing,
  and the completion reaches the guest at once, so Response =
  Completion.
* ``vcpu``: ``(vm, state, start ms, end ms)`` spans: 'running' while
  the guest has work (dd reading or waiting for reads in flight),
  'idle' for the first ``inactive_ms`` (30) of a blocked vCPU with no
  read in flight, 'inactive' after that until the write's response
  (Xen credit's rule); the model has one vCPU per VM and no CPU
  contention, so never 'runnable'. Spans end at the VM's finish.

Only the simulator and the stdlib are imported; ``iosched.iotrace``
turns this into its trace format.
"""

from iosched.simulator.vaio import run as vrun

INACTIVE_MS = 30.0


class TraceMetrics(vrun.Metrics):
    """``run.Metrics`` that also keeps every request's layer times."""

    def __init__(self):
        super().__init__()
        self.reqs = {}             # id(req) -> row (list)
        self.rows = []
        self._rid = 0

    def _row(self, req):
        row = self.reqs.get(id(req))
        if row is None:
            self._rid += 1
            t_guest = getattr(req, 't_guest', req.t_arrive)
            row = [self._rid, req.vm, bool(req.write), req.nsect, req.lba,
                   t_guest, req.t_arrive, None, None, None]
            self.reqs[id(req)] = row
            self.rows.append(row)
        return row

    def dispatch(self, req, last, now, svc):
        super().dispatch(req, last, now, svc)
        self._row(req)[7] = now

    def complete(self, req, now, lat):
        super().complete(req, now, lat)
        row = self._row(req)
        row[8] = now
        row[9] = now
        del self.reqs[id(req)]     # the Req object may be reused by id()


def pending(low):
    """Requests still queued in the elevator when the run stopped."""
    out = []
    for q in getattr(low, 'queues', {}).values():
        out.extend(e[2] for e in q)
    return out


def vcpu_spans(result, inactive_ms=INACTIVE_MS):
    """[(vm, state, start ms, end ms)] from a ``Result``."""
    out = []
    for vm in sorted(result.finish):
        end = result.finish[vm]
        end = (end * 1e3) if end is not None else None
        t = 0.0
        for a, b in result.inactive.get(vm, []):
            a, b = a * 1e3, b * 1e3
            idle0 = max(t, a - inactive_ms)
            if idle0 > t:
                out.append((vm, 'running', t, idle0))
            out.append((vm, 'idle', idle0, a))
            out.append((vm, 'inactive', a, b))
            t = b
        if end is not None and end > t:
            out.append((vm, 'running', t, end))
    return out


def traced_run(scn):
    """(Result, requests, vcpu spans) of one run of ``scn``."""
    m = TraceMetrics()
    result = vrun.run(scn, metrics=m)
    for req in pending(result.low):
        m._row(req)
    rows = [tuple(r) for r in m.rows]
    return result, rows, vcpu_spans(result)
