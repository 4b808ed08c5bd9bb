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
"""Options of the collectors: how I/O strength is measured and classed."""

from oslo_config import cfg

GROUP = cfg.OptGroup('collectors', title='iosched collectors',
                     help='Measurement of per-vCPU I/O strength.')

OPTS = [
    cfg.FloatOpt('ema_weight', default=0.9, min=0.0, max=1.0,
                 help="""
Weight of the newest gap in the moving average of I/O event gaps.

ISACS Eq. 1: I_bar = w * I_e + (1 - w) * I_bar. The paper uses 0.9.

Possible values:

* 0.0 to 1.0.
"""),
    cfg.FloatOpt('gap_cutoff_ms', default=10.0, min=0.1, max=1000.0,
                 help="""
Gaps between I/O events longer than this are dropped (milliseconds).

ISACS drops gaps over 10 ms, so that vCPUs with sparse I/O get no credit.

Possible values:

* 0.1 to 1000 ms.
"""),
    cfg.FloatOpt('io_strength_threshold', default=0.1, min=0.0, max=1.0,
                 help="""
I/O strength at or above which a vCPU counts as I/O-intensive.

I/O strength is E_n * I_bar divided by the window: the fraction of the
window during which the vCPU kept receiving I/O events.

Possible values:

* 0.0 to 1.0.

Related options:

* ``cpu_share_threshold``
"""),
    cfg.FloatOpt('cpu_share_threshold', default=0.5, min=0.0, max=1.0,
                 help="""
Run share at or above which a vCPU counts as CPU-bound (``cpu``) or, when
it is also I/O-intensive, ``mixed``.

Possible values:

* 0.0 to 1.0 (fraction of the window spent running).
"""),
    cfg.FloatOpt('idle_share_threshold', default=0.02, min=0.0, max=1.0,
                 help="""
Run share below which a vCPU without I/O counts as ``idle``.

Possible values:

* 0.0 to 1.0.
"""),
]


def register_opts(conf):
    conf.register_group(GROUP)
    conf.register_opts(OPTS, group=GROUP)


def list_opts():
    return [(GROUP, OPTS)]
