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
"""vTurbo (seed 001 ch. 3): Credit with turbo cores and turbo vCPUs.

* turbo cores (``VTurboSpec.turbo_pcpus``) give every vCPU a quantum of
  ``turbo_quantum_us`` (0.1 ms); the other pCPUs are regular cores with
  ``tslice_us`` (30 ms): a per-core slice, as the paper's field in
  ``schedule_data``;
* vCPU 0 of every VM with two or more vCPUs is its turbo vCPU (the paper's
  tools add one and make it vCPU 0; here the VM spec lists it, e.g. an
  I/O workload on vCPU 0), hard-pinned to the turbo cores; all other
  vCPUs are regular vCPUs hard-pinned to the regular cores. A one-vCPU VM
  has no turbo vCPU (the paper: a CPU-bound VM "may choose not to use"
  it). An affinity change must stay inside the vCPU's pool;
* accounting (Algorithm 3, ``vturbo_accounting.allocate``) replaces
  ``csched_acct``: every ``acct_us`` (30 ms) the usage of each VM in the
  two pools over the last period gives FS_i, FS^T_i and rcredits_i =
  FS_i - (its turbo usage); rcredits are added to the VM's regular vCPUs
  (split evenly); every turbo quantum the turbo vCPU earns FS^T_i /
  (acct_us / quantum) (spread exactly over the period; see
  ``vturbo_accounting`` for reading ``vm_vcredits`` as FS^T_i); at each
  accounting every vCPU's credit gets Credit's bounds (below minus one
  slice: raised to it; above one slice: halved); after each routine the
  priorities of its pool become UNDER (credit >= 0) or OVER, as
  ``csched_acct`` does, and that pool's queues are sorted.

Choices: the VMs accounted are those that used CPU in the last period or
have a runnable vCPU (as Credit's active list: a VM waiting through a
whole 30 ms period still competes); a VM's weight is the mean of its
vCPUs' weights (Xen has one weight per domain); rcredits are added to
the credit, as ``csched_acct`` adds (setting a positive budget every
period would keep every VM UNDER and split the regular pool evenly);
credit is burnt by run time in both pools (the paper's "new deduction
method" is not described); no floor on rcredits (see
``vturbo_accounting``); BOOST, tickling and stealing are Credit's, inside
each pool (affinity keeps vCPUs in their pool).
"""

from iosched.simulator.xen import credit
from iosched.simulator.xen import credit_accounting
from iosched.simulator.xen import vturbo_accounting


class TVcpu(credit.Vcpu):
    """A vCPU of the turbo or the regular pool; ``snap``: run_us at the
    last regular accounting.
    """
    __slots__ = ('turbo', 'snap')

    def __init__(self, eid, vm, index, weight, turbo):
        super().__init__(eid, vm, index, weight)
        self.turbo = turbo
        self.snap = 0


class VTurboScheduler(credit.CreditScheduler):
    name = 'vturbo'

    def __init__(self, loop, pcpus, switch_cost_us, spec):
        super().__init__(loop, pcpus, switch_cost_us, spec)
        self.turbo_ids = spec.turbo_pcpus
        self.regular_ids = tuple(i for i in range(pcpus)
                                 if i not in spec.turbo_pcpus)
        self.quantum = spec.turbo_quantum_us
        self.ratio = spec.acct_us // spec.turbo_quantum_us
        for i in self.turbo_ids:
            self.cpus[i].tslice = spec.turbo_quantum_us
        self.vms = {}               # vm uuid -> [TVcpu], creation order
        self.turbo_grant = {}       # vm uuid -> FS^T of this period (us)
        self.last_alloc = {}        # vm uuid -> Allocation (for stats)
        self.k = 0                  # turbo quanta since the accounting
        loop.at(loop.now + self.quantum, self._on_turbo_acct)

    # -- pools ---------------------------------------------------------------
    @staticmethod
    def _key(vm):
        return getattr(vm, 'uuid', None) or id(vm)

    def _pool(self, e):
        return self.turbo_ids if e.turbo else self.regular_ids

    def new_entity(self, eid, vm, index, weight):
        vm_spec = getattr(vm, 'spec', None)
        nvcpus = len(vm_spec.vcpus) if vm_spec is not None else 1
        e = TVcpu(eid, vm, index, weight, index == 0 and nvcpus >= 2)
        e.allowed = self._pool(e)
        self.vms.setdefault(self._key(vm), []).append(e)
        return e

    def set_affinity(self, e, allowed, now):
        pool = self._pool(e)
        if allowed is None:
            allowed = pool
        if any(i not in pool for i in allowed):
            raise ValueError(
                'affinity: %r is invalid for the %s vCPU %d of %s under '
                'vTurbo; accepted: None or pCPU ids of its pool %r'
                % (allowed, 'turbo' if e.turbo else 'regular', e.index,
                   getattr(e.vm, 'uuid', '?'), pool))
        super().set_affinity(e, tuple(allowed), now)

    def remove(self, e, now):
        super().remove(e, now)
        key = self._key(e.vm)
        ents = self.vms.get(key)
        if ents is not None:
            ents.remove(e)
            if not ents:
                del self.vms[key]
                self.turbo_grant.pop(key, None)
                self.last_alloc.pop(key, None)

    # -- regular accounting (every acct_us) -----------------------------------
    def _acct(self, now):
        """Algorithm 3, regular part: FS_i from last period's usage."""
        self.n_acct += 1
        self.k = 0
        usage = {}
        weights = {}
        for vm, ents in self.vms.items():
            reg = tur = 0
            runnable = False
            for e in ents:
                runnable = runnable or e.on_rq
                used = e.run_us - e.snap
                e.snap = e.run_us
                if e.turbo:
                    tur += used
                else:
                    reg += used
            if reg + tur > 0 or runnable:
                usage[vm] = (reg, tur)
                weights[vm] = sum(e.weight for e in ents) / len(ents)
        self.turbo_grant = {}
        if not usage:
            return
        alloc = vturbo_accounting.allocate(usage, weights, self.ratio)
        self.last_alloc = alloc
        for vm, a in alloc.items():
            self.turbo_grant[vm] = int(a.fs_t)
            ents = self.vms[vm]
            regs = [e for e in ents if not e.turbo]
            share = int(a.fs_r) // len(regs) if regs else 0
            for e in ents:
                c = e.credit if e.turbo else e.credit + share
                # Credit's bounds: at least minus one slice; above one
                # slice the credit is halved.
                if c < -self.tslice:
                    c = -self.tslice
                elif c > self.tslice:
                    c //= 2
                e.credit = c
                if not e.turbo:
                    e.pri = (credit_accounting.UNDER if c >= 0
                             else credit_accounting.OVER)

    def _sort_runq(self, p):
        if p.id in self.regular_ids:
            credit.CreditScheduler._sort_runq(p)

    # -- turbo accounting (every turbo quantum) -------------------------------
    def _on_turbo_acct(self, _a, _b):
        now = self.loop.now
        for i in self.turbo_ids:
            self._settle(self.cpus[i], now)
        k = self.k
        self.k = k + 1
        ratio = self.ratio
        for vm, ents in self.vms.items():
            e = ents[0]
            if not e.turbo:
                continue
            tc = self.turbo_grant.get(vm, 0)
            if k < ratio:
                # FS^T / ratio per quantum, exact over the period.
                e.credit += (tc * (k + 1)) // ratio - (tc * k) // ratio
            e.pri = (credit_accounting.UNDER if e.credit >= 0
                     else credit_accounting.OVER)
        for i in self.turbo_ids:
            credit.CreditScheduler._sort_runq(self.cpus[i])
        self.loop.at(now + self.quantum, self._on_turbo_acct)

    def stats(self):
        out = super().stats()
        out['allocation_us'] = {
            str(key): {'fs': a.fs, 'fs_r': a.fs_r, 'fs_t': a.fs_t,
                       'tcredits': a.tcredits}
            for key, a in self.last_alloc.items()}
        return out
