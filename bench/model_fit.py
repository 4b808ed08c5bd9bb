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
"""The model-validation fit written down beforehand (``bench/
model_validation.py --write-fit`` / ``--fit``).

A fit is the LSVM request the simulator is given, taken from ONE
designated testbed run's idle phase and frozen in a JSON file: the vCPU
work per request (``burst_us``), its spread (``burst_jitter``), the TCG
path constant (``path_us``), the kernel model (name and every
``KernelSpec`` field, so a later change of the model does not change the
fit), the source run and its date. With ``--fit`` nothing of the request
is taken from the run being predicted; only its setup (loops, rate,
pCPUs: ``model_validation.setup_from_run``) is.
"""

import dataclasses
import json
import math

from iosched.simulator import spec_kernel

FIELDS = ('burst_us', 'burst_jitter', 'path_us', 'kernel', 'kernel_spec',
          'source', 'source_date', 'seed', 'seconds')


def build(burst_us, burst_jitter, path_us, kernel, source, source_date,
          seed, seconds, how=None):
    """The fit as a JSON-able dict (``kernel``: a ``KernelSpec``)."""
    return {'burst_us': int(burst_us), 'burst_jitter': float(burst_jitter),
            'path_us': round(float(path_us), 1), 'kernel': kernel.name,
            'kernel_spec': dataclasses.asdict(kernel), 'source': source,
            'source_date': source_date, 'seed': int(seed),
            'seconds': float(seconds), 'how': how or {}}


def check(fit):
    """``fit`` if it has every field with a usable value, else ValueError
    naming the first bad one.
    """
    if not isinstance(fit, dict):
        raise ValueError('fit: %r is invalid; accepted: a JSON object with '
                         '%s' % (type(fit).__name__, ', '.join(FIELDS)))
    missing = [f for f in FIELDS if f not in fit]
    if missing:
        raise ValueError('fit: no %s; accepted: a JSON object with %s' % (
            ', '.join(missing), ', '.join(FIELDS)))
    b, j, p = fit['burst_us'], fit['burst_jitter'], fit['path_us']
    if isinstance(b, bool) or not isinstance(b, int) or b < 1:
        raise ValueError('fit burst_us: %r is invalid; accepted: an int '
                         '>= 1' % (b,))
    for name, v, lo, hi in (('burst_jitter', j, 0, 1),
                            ('path_us', p, -1e7, 1e7)):
        if (isinstance(v, bool) or not isinstance(v, (int, float))
                or not math.isfinite(v) or not lo <= v <= hi):
            raise ValueError('fit %s: %r is invalid; accepted: a number in '
                             '%g .. %g' % (name, v, lo, hi))
    kernel_of(fit)
    return fit


def kernel_of(fit):
    """The ``KernelSpec`` the fit froze (its fields, not today's model of
    that name).
    """
    fields = fit['kernel_spec']
    if not isinstance(fields, dict):
        raise ValueError('fit kernel_spec: %r is invalid; accepted: the '
                         'KernelSpec fields' % (fields,))
    known = {f.name for f in dataclasses.fields(spec_kernel.KernelSpec)}
    if set(fields) != known:
        raise ValueError('fit kernel_spec: fields %s; accepted: exactly %s'
                         % (', '.join(sorted(set(fields) ^ known)),
                            ', '.join(sorted(known))))
    return spec_kernel.KernelSpec(**fields)


def write(path, fit):
    with open(path, 'w') as fh:
        json.dump(check(fit), fh, indent=2, sort_keys=True)
        fh.write('\n')


def read(path):
    """The fit in ``path`` (ValueError when missing, unreadable or
    incomplete).
    """
    try:
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError) as e:
        raise ValueError('fit %s: unreadable: %s' % (path, e))
    return check(data)
