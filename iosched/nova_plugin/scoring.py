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
"""Pure placement rules of the iosched Nova plugin: fit and score.

Description:
    Decides, from a host's latest ``HostReport``, the placements made on it
    since that report (``Pending``) and the flavor of a request
    (``Request``), whether the host can take the request (``fits``) and how
    good it is for it (``score``). ``IoDensityFilter`` and
    ``IoStrengthWeigher`` are thin adapters around these functions.

Requirements:
    A report of schema ``iosched.contract.payload`` 1.x. The flavor
    extra specs ``iosched:io_profile``, ``iosched:latency_sensitive``,
    ``iosched:latency_ms`` and ``hw:cpu_policy``, read by
    ``iosched.contract.flavor.read`` (as the agent reads them).

Limitations:
    Before a VM has been measured its I/O intensity is only what the flavor
    declares: 1.0 of I/O strength per ``io`` vCPU, 0.5 per ``mixed`` vCPU.
    Latency-sensitive (LSVM) feasibility is ``iosched.nova_plugin.lsvm_rule``.

Spec URL:
    docs/nova.md; blueprint sections 4.2 (HostReport) and 4.3 (extra specs).

No nova, no I/O, no clock: every function takes plain data and returns
plain data, so the rules are table-tested without Nova installed.
"""

import dataclasses

from iosched.contract import flavor

# missing_weights(): gap below (or above) the reported hosts, as a fraction
# of their spread.
GAP_FRACTION = 0.1


@dataclasses.dataclass(frozen=True)
class Request:
    """What the scheduler knows about a request before placement."""

    vcpus: int
    io_profile: object = None          # 'io' | 'cpu' | 'mixed' | None
    latency_sensitive: bool = False
    latency_ms: object = None          # int > 0 or None
    dedicated: bool = False            # hw:cpu_policy=dedicated (Nova pins)

    @classmethod
    def from_extra_specs(cls, vcpus, extra_specs):
        """Build from a flavor; an invalid value counts as unset
        (``iosched.contract.flavor.read``, the agent's reading too).
        """
        return cls.from_flavor_specs(vcpus, flavor.read(extra_specs))

    @classmethod
    def from_flavor_specs(cls, vcpus, specs):
        """Build from a ``flavor.FlavorSpecs``."""
        return cls(vcpus=int(vcpus or 0), io_profile=specs.io_profile,
                   latency_sensitive=specs.latency_sensitive,
                   latency_ms=specs.latency_ms, dedicated=specs.dedicated)


@dataclasses.dataclass(frozen=True)
class Pending:
    """Placements on a host since its last report (in-flight estimate).

    ``placements``, ``io_vcpus``, ``lsvm_vcpus`` and ``io_strength`` include
    both parts: what ``ReportStore.note_placement`` recorded (exact) and
    what ``iosched.nova_plugin.inflight`` estimated from Nova's HostState
    (``estimated_placements`` placements of ``estimated_vcpus`` vCPUs,
    counted as ``profile`` says). ``vcpus`` is every pending vCPU, LSVM or
    not, when known (0: only the fields above are known).
    """

    placements: int = 0
    io_vcpus: int = 0
    lsvm_vcpus: int = 0
    io_strength: float = 0.0
    vcpus: int = 0
    estimated_placements: int = 0
    estimated_vcpus: int = 0
    profile: object = None             # inflight_vcpu_profile used, or None


NO_PENDING = Pending()


# all_vcpus(p) := max(p.vcpus, p.io_vcpus, p.lsvm_vcpus)
# (the notes of note_placement() do not record the vCPUs of a placement
# that is neither I/O nor LSVM: then this is a lower bound)
def pending_vcpus(pending):
    """Every pending vCPU as far as known."""
    pending = pending or NO_PENDING
    return max(pending.vcpus, pending.io_vcpus, pending.lsvm_vcpus)


def pending_note(pending):
    """How much of ``pending`` is an estimate, for reasons ('' if none)."""
    pending = pending or NO_PENDING
    if not pending.estimated_placements:
        return ''
    return ('; pending includes %d placement(s) of %d vCPU(s) seen in '
            "Nova's HostState since the report, counted as "
            'inflight_vcpu_profile=%s' % (
                pending.estimated_placements, pending.estimated_vcpus,
                pending.profile))


# io_vcpus(r) := r.vcpus if r.io_profile in {io, mixed} else 0
def request_io_vcpus(request):
    """vCPUs of the request that count as I/O-intensive."""
    if flavor.IO_STRENGTH_PER_VCPU.get(request.io_profile, 0.0) > 0:
        return request.vcpus
    return 0


# needs_report(r) := io_vcpus(r) > 0  or  r.latency_sensitive
def needs_report(request):
    """Whether placing the request depends on the host's agent report."""
    return request_io_vcpus(request) > 0 or request.latency_sensitive


# strength(r) := r.vcpus * {io: 1.0, mixed: 0.5, cpu/None: 0}[r.io_profile]
#                (flavor.IO_STRENGTH_PER_VCPU)
def request_io_strength(request):
    """Estimated I/O strength the request adds to a host."""
    return request.vcpus * flavor.IO_STRENGTH_PER_VCPU.get(
        request.io_profile, 0.0)


# density(h, r) := (h.io_vcpus + pending.io_vcpus + io_vcpus(r)) / h.pcpus
def io_density_after(report, pending, request):
    """I/O vCPUs per pCPU on the host if the request lands there."""
    pending = pending or NO_PENDING
    return ((report.io_vcpus + pending.io_vcpus + request_io_vcpus(request))
            / float(report.pcpus))


# fits(h, r) := io_vcpus(r) == 0  or  density(h, r) <= max_io_vcpus_per_pcpu
def fits(report, pending, request, max_io_vcpus_per_pcpu):
    """Return ``(passes, reason)``; the reason carries the numbers."""
    pending = pending or NO_PENDING
    wanted = request_io_vcpus(request)
    if wanted == 0:
        return True, 'request has no I/O vCPUs (io_profile=%s)' % (
            request.io_profile,)
    density = io_density_after(report, pending, request)
    passes = density <= max_io_vcpus_per_pcpu + 1e-9
    reason = ('I/O vCPUs per pCPU after placement %.3f %s %.3f '
              '(reported %d + pending %d + request %d on %d pCPUs)' % (
                  density, '<=' if passes else '>', max_io_vcpus_per_pcpu,
                  report.io_vcpus, pending.io_vcpus, wanted, report.pcpus))
    return passes, reason + pending_note(pending)


# strength_after(h, r) := (h.io_strength_total + pending.io_strength
#                          + strength(r)) / h.pcpus
def io_strength_after(report, pending, request):
    """I/O strength per pCPU on the host if the request lands there."""
    pending = pending or NO_PENDING
    return ((report.io_strength_total + pending.io_strength
             + request_io_strength(request)) / float(report.pcpus))


# score(h, r) := -strength_after(h, r)   if r has I/O vCPUs
#                                        (larger is better: less I/O wins)
#              := 0                      otherwise (indifferent)
# A request without I/O vCPUs does not suffer from its neighbours' I/O, so
# the weigher gives every host the same value (Nova normalises that to 0)
# and Nova's own weighers decide. Preferring I/O-light hosts for CPU-bound
# requests would pile CPU-bound VMs together against the CPUWeigher
# (measured on the embedded default: -32 % CPU-bound throughput).
def score(report, pending, request):
    """Raw weigher value for a host with a report."""
    if request_io_strength(request) <= 0:
        return 0.0
    return -io_strength_after(report, pending, request)


def score_reason(report, pending, request):
    """The numbers behind ``score()``, for logs and explanations."""
    pending = pending or NO_PENDING
    if request_io_strength(request) <= 0:
        return ('request has no I/O vCPUs (io_profile=%s): same value for '
                'every host' % (request.io_profile,))
    return ('I/O strength per pCPU after placement %.3f (reported %.3f + '
            'pending %.3f + request %.3f on %d pCPUs)' % (
                io_strength_after(report, pending, request),
                report.io_strength_total, pending.io_strength,
                request_io_strength(request), report.pcpus)
            + pending_note(pending))


# For hosts without a fresh report (raw value None), with lo/hi the lowest
# and highest raw value of the reported hosts:
#   lowest:  lo - gap if multiplier >= 0 else hi + gap,
#            gap := GAP_FRACTION * (hi - lo), or 1.0 if hi == lo
#   neutral: (lo + hi) / 2
#   no reported host at all: 0.0 everywhere (Nova normalises that to 0).
# Nova normalises each weigher's raw values to [0, 1] over all hosts and then
# multiplies by the host's multiplier: "lowest" must be an extreme of the
# raw values on the side the multiplier turns into the smallest product, and
# it must not be so far out that it squashes the reported hosts together
# (as a fixed -10000 would, cf. nova's [metrics] weight_of_unavailable).
def missing_weights(raw, multipliers, mode='lowest'):
    """Fill the ``None`` entries of ``raw``; returns a new list."""
    known = [w for w in raw if w is not None]
    if not known:
        return [0.0] * len(raw)
    lo, hi = min(known), max(known)
    gap = GAP_FRACTION * (hi - lo) if hi > lo else 1.0
    out = []
    for weight, multiplier in zip(raw, multipliers):
        if weight is None:
            if mode == 'neutral':
                weight = (lo + hi) / 2.0
            elif multiplier >= 0:
                weight = lo - gap
            else:
                weight = hi + gap
        out.append(weight)
    return out
