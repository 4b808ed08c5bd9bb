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
"""Profile part 1's "iosched alone" set: where its per-host time goes.

Builds the hosts, store and requests as ``bench.nova_scale.handlers`` does
(the SLO volumes from the in-process double), times Nova's default set and
iosched's classes alone interleaved (the ratio, as part 1 prints it), then
runs the alone set under cProfile and prints the top functions by own
time::

    .venv/bin/python -m bench.nova_scale.profile_alone [--hosts 100,1000]
        [--rounds 40] [--top 25] [--sort tottime]

Imports nova: never import this module in a process that imports cinder.
"""

import argparse
import cProfile
import gc
import json
import pstats
import sys
import time


def _args(argv):
    p = argparse.ArgumentParser(prog='python -m bench.nova_scale.'
                                'profile_alone')
    p.add_argument('--hosts', default='100,1000')
    p.add_argument('--rounds', type=int, default=4000,
                   help='host rounds: this divided by the host count '
                        '(at least 3) rounds of the request mix')
    p.add_argument('--top', type=int, default=25)
    p.add_argument('--sort', default='tottime')
    p.add_argument('--no-profile', action='store_true')
    p.add_argument('--slo-volumes', default='double',
                   choices=('double', 'off'))
    a = p.parse_args(argv)
    a.hosts = [int(x) for x in a.hosts.split(',') if x.strip()]
    # the report shape of part 1's defaults
    a.templates, a.vcpus, a.decisions, a.seed = 200, 32, 50, 0
    return a


def _floor_set(handlers):
    """Do-nothing classes, as many as iosched's: Nova's handlers' own
    cost per host (the floor of the alone set).
    """
    from nova.scheduler import filters
    from nova.scheduler import weights

    class Keep(filters.BaseHostFilter):
        def filter_all(self, filter_obj_list, spec_obj):
            return filter_obj_list

        def host_passes(self, host_state, spec_obj):
            return True

    class Same(weights.BaseHostWeigher):
        def weigh_objects(self, weighed_obj_list, weight_properties):
            return [0.5] * len(weighed_obj_list)

        def weight_multiplier(self, host_state):
            return 1.0

        def _weigh_object(self, host_state, weight_properties):
            return 0.5

    own_filters, own_weighers = handlers.sets['iosched_alone']
    return ([Keep() for _ in own_filters], [Same() for _ in own_weighers])


def main(argv=None):
    args = _args(argv)
    from bench.nova_scale import handlers as h
    from bench.nova_scale import slo_volumes
    from iosched.nova_plugin import state as plugin_state

    h.setup_nova()
    import nova.conf
    worker = plugin_state.SchedulerState()
    specs = h.request_specs()
    with plugin_state.use_state(worker), slo_volumes.volumes(
            args.slo_volumes, specs, print) as volumes:
        handlers = h.Handlers()
        volumes.install(handlers.sets['iosched_alone'][0])
        handlers.sets['floor'] = _floor_set(handlers)
        h.start_listener(worker)
        largest = max(args.hosts)
        wire = h.templates(largest, args)
        h.fill_store(worker.store, largest, wire, None)
        hosts = [h.host_state(i, json.loads(wire[i % len(wire)]))
                 for i in range(largest)]
        gc.collect()
        gc.freeze()
        nova.conf.CONF.set_override('slo_cache_seconds', 24 * 3600,
                                    'iosched')
        for spec in specs:
            h.new_request(worker)
            handlers.schedule('iosched', hosts[:min(args.hosts)], spec)
        for n in args.hosts:
            subset = hosts[:n]
            rounds = max(3, args.rounds // n)
            spent = {'default': 0.0, 'iosched_alone': 0.0, 'floor': 0.0}
            for _ in range(rounds):
                for spec in specs:
                    h.heartbeat(subset)
                    for which in spent:
                        h.new_request(worker)
                        t0 = time.perf_counter()
                        handlers.schedule(which, subset, spec)
                        spent[which] += time.perf_counter() - t0
            req = rounds * len(specs)
            print('%d hosts, %d requests: default %.2f us/host, iosched '
                  'alone %.2f us/host: %.3fx; do-nothing classes %.2f '
                  'us/host: %.3fx' % (
                      n, req, spent['default'] / req / n * 1e6,
                      spent['iosched_alone'] / req / n * 1e6,
                      spent['iosched_alone'] / spent['default'],
                      spent['floor'] / req / n * 1e6,
                      spent['floor'] / spent['default']))
            if args.no_profile:
                continue
            prof = cProfile.Profile()
            for _ in range(rounds):
                for spec in specs:
                    h.heartbeat(subset)
                    h.new_request(worker)
                    prof.enable()
                    handlers.schedule('iosched_alone', subset, spec)
                    prof.disable()
            stats = pstats.Stats(prof, stream=sys.stdout)
            stats.sort_stats(args.sort).print_stats(args.top)
    worker.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main())
