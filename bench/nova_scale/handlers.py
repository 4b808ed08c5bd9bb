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
"""Part 1: filter + weigher cost per request through Nova's own handlers.

Hosts are real ``nova.scheduler.host_manager.HostState`` objects filled by
``HostState.update()`` from a ``ComputeNode`` (2 NUMA cells, libvirt-like
cpu_info, stats), a service dict and the host's instances, as
``HostManager`` builds them. Requests are real ``RequestSpec``/``Flavor``
objects with iosched extra specs. Filters and weighers are loaded by
function path through ``HostFilterHandler``/``HostWeightHandler``:

* default: Nova's default ``enabled_filters`` and
  ``nova.scheduler.weights.all_weighers``;
* iosched: the same plus every class of
``iosched.nova_plugin.filters.all_filters``
  and ``iosched.nova_plugin.weighers.all_weighers`` (whatever exists at run
  time);
* iosched alone: only the plugin's classes, on the same hosts (its own part).

The plugin reads the store of a ``iosched.nova_plugin.state.SchedulerState``
(installed with ``use_state`` while the classes load and run) holding a
fresh report for every host, each parsed from JSON by
``HostReport.from_dict`` as the endpoint does, with ``[iosched]
listen_for_reports = true`` and its listener running (on the in-process
``fake:/`` transport), as in production.
Memory: tracemalloc of that store and of the HostState objects, per host.

Imports nova: never import this module in a process that imports cinder.
"""

import datetime
import functools
import gc
import json
import sys
import time
import tracemalloc
import uuid as uuid_mod

from bench.nova_scale import reports as fake_reports

NOVA_DEFAULT_FILTERS = ('ComputeFilter', 'ComputeCapabilitiesFilter',
                        'ImagePropertiesFilter',
                        'ServerGroupAntiAffinityFilter',
                        'ServerGroupAffinityFilter')

# (name, vcpus, extra specs): the request mix, cycled.
FLAVORS = (
    ('io.large', 4, {'iosched:io_profile': 'io'}),
    ('cpu.large', 8, {'iosched:io_profile': 'cpu'}),
    ('mixed.medium', 2, {'iosched:io_profile': 'mixed'}),
    ('lsvm.small', 2, {'iosched:io_profile': 'io',
                       'iosched:latency_sensitive': 'true',
                       'iosched:latency_ms': '2'}),
    ('io.small', 1, {'iosched:io_profile': 'io'}),
    ('plain.medium', 2, {}),
    ('mixed.large', 8, {'iosched:io_profile': 'mixed'}),
    ('lsvm.medium', 4, {'iosched:io_profile': 'io',
                        'iosched:latency_sensitive': 'true',
                        'iosched:latency_ms': '5'}),
)

_CPU_INFO = json.dumps({
    'arch': 'x86_64', 'model': 'Cascadelake-Server-noTSX',
    'vendor': 'Intel', 'topology': {'cells': 2, 'sockets': 1,
                                    'cores': 12, 'threads': 2},
    'features': sorted(['pcid', 'vmx', 'ssse3', 'fma', 'cx16', 'pdcm',
                        'sse4.1', 'sse4.2', 'x2apic', 'movbe', 'popcnt',
                        'tsc-deadline', 'aes', 'xsave', 'avx', 'f16c',
                        'rdrand', 'hypervisor', 'arat', 'fsgsbase', 'bmi1',
                        'hle', 'avx2', 'smep', 'bmi2', 'erms', 'invpcid',
                        'rtm', 'mpx', 'avx512f', 'avx512dq', 'rdseed',
                        'adx', 'smap', 'clflushopt', 'clwb', 'avx512cd',
                        'avx512bw', 'avx512vl', 'pku', 'avx512vnni',
                        'md-clear', 'spec-ctrl', 'stibp', 'arch-capabilities',
                        'ssbd', 'xsaveopt', 'xsavec', 'xgetbv1', 'xsaves',
                        'abm', 'ibpb', 'amd-ssbd', 'rdctl-no', 'ibrs-all',
                        'skip-l1dfl-vmentry', 'mds-no', 'pschange-mc-no'])})


def setup_nova():
    """Register Nova's objects and parse its configuration (defaults)."""
    import nova.conf
    from nova import objects

    from iosched.nova_plugin import conf as plugin_conf

    objects.register_all()
    nova.conf.CONF([], project='nova', default_config_files=[])
    plugin_conf.register_opts(nova.conf.CONF)


@functools.lru_cache(maxsize=None)
def _numa_json(pcpus, memory_mb):
    """ComputeNode.numa_topology (a string; each HostState parses its own)."""
    return _numa(pcpus, memory_mb)._to_json()


def _numa(pcpus, memory_mb):
    from nova import objects

    half = pcpus // 2
    cells = []
    for cell in (0, 1):
        cpus = set(range(cell * half, (cell + 1) * half))
        cells.append(objects.NUMACell(
            id=cell, cpuset=cpus, pcpuset=set(), memory=memory_mb // 2,
            cpu_usage=0, memory_usage=0, socket=0, pinned_cpus=set(),
            mempages=[objects.NUMAPagesTopology(size_kb=4, total=memory_mb
                                                * 128, used=0),
                      objects.NUMAPagesTopology(size_kb=2048, total=0,
                                                used=0),
                      objects.NUMAPagesTopology(size_kb=1048576, total=0,
                                                used=0)],
            siblings=[{c} for c in sorted(cpus)],
            network_metadata=objects.NetworkMetadata(physnets=set(),
                                                     tunneled=False)))
    return objects.NUMATopology(cells=cells)


def _fresh(text):
    """A new copy of ``text``: each ComputeNode has its own strings from the
    database, and the HostState keeps its ComputeNode (through
    ``pci_stats``'s pool list), so a shared string would not be counted.
    """
    return text[:-1] + text[-1:]


def host_state(i, report):
    """A real HostState for host ``i``, as HostManager fills it."""
    from nova import objects
    from nova.scheduler import host_manager

    name = fake_reports.host_name(i)
    pcpus = report['pcpus']
    memory_mb = pcpus * 8192
    vms = sorted({v['instance_uuid'] for v in report['vcpus']})
    vcpus_used = len(report['vcpus'])
    used_mb = vcpus_used * 2048
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    compute = objects.ComputeNode(
        uuid=str(uuid_mod.uuid5(uuid_mod.NAMESPACE_DNS, name)), id=i + 1,
        host=name, hypervisor_hostname=name, host_ip='10.0.%d.%d' % (
            i // 250, i % 250 + 1),
        local_gb=2000, local_gb_used=20 * len(vms), free_disk_gb=2000 - 20 *
        len(vms), disk_available_least=1900 - 20 * len(vms),
        memory_mb=memory_mb, free_ram_mb=memory_mb - used_mb, vcpus=pcpus,
        vcpus_used=vcpus_used, updated_at=now, hypervisor_type='QEMU',
        hypervisor_version=8002002, cpu_info=_fresh(_CPU_INFO),
        supported_hv_specs=[objects.HVSpec(arch='x86_64', hv_type='kvm',
                                           vm_mode='hvm')],
        numa_topology=_fresh(_numa_json(pcpus, memory_mb)),
        pci_device_pools=objects.PciDevicePoolList(objects=[]),
        stats={'num_instances': str(len(vms)), 'io_workload': '0',
               'num_vm_active': str(len(vms)), 'num_task_None': str(
                   len(vms)), 'num_os_type_None': str(len(vms)),
               'num_proj_%s' % ('a' * 32): str(len(vms))},
        metrics='[]', cpu_allocation_ratio=4.0, ram_allocation_ratio=1.0,
        disk_allocation_ratio=1.0)
    service = {'id': i + 1, 'host': name, 'binary': 'nova-compute',
               'topic': 'compute', 'report_count': 1000, 'disabled': False,
               'disabled_reason': None, 'last_seen_up': now,
               'forced_down': False, 'version': 66, 'created_at': now,
               'updated_at': now, 'deleted_at': None, 'deleted': False,
               'uuid': str(uuid_mod.uuid5(uuid_mod.NAMESPACE_URL, name))}
    instances = {u: objects.Instance(uuid=u, host=name) for u in vms}
    h = host_manager.HostState(name, name, str(uuid_mod.UUID(int=1)))
    h.update(compute=compute, service=service, aggregates=[],
             inst_dict=instances)
    return h


def heartbeat(hosts):
    """Every nova-compute reported just now (``ComputeFilter`` asks the
    servicegroup API: last_seen_up within [DEFAULT] service_down_time).
    """
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    for h in hosts:
        h.update(service=dict(h.service, last_seen_up=now))


def request_specs():
    from nova import objects

    specs = []
    for k, (name, vcpus, extra) in enumerate(FLAVORS):
        flavor = objects.Flavor(name=name, flavorid=name, vcpus=vcpus,
                                memory_mb=2048 * vcpus, root_gb=20,
                                ephemeral_gb=0, swap=0,
                                extra_specs=dict(extra))
        specs.append(objects.RequestSpec(
            flavor=flavor, image=objects.ImageMeta.from_dict(
                {'properties': {'hw_architecture': 'x86_64'}}),
            num_instances=1,
            instance_uuid=str(uuid_mod.UUID(int=k + 1)), project_id='bench',
            user_id='bench', scheduler_hints={}, ignore_hosts=None,
            force_hosts=None, force_nodes=None, instance_group=None,
            availability_zone=None, is_bfv=False, numa_topology=None,
            pci_requests=None))
    return specs


class Handlers(object):
    """The three filter/weigher sets, loaded by function path."""

    def __init__(self):
        from nova.scheduler import filters
        from nova.scheduler import weights

        self.fh = filters.HostFilterHandler()
        self.wh = weights.HostWeightHandler()
        nova_classes = {c.__name__: c for c in self.fh.get_matching_classes(
            ['nova.scheduler.filters.all_filters'])}
        plugin_filters = self.fh.get_matching_classes(
            ['iosched.nova_plugin.filters.all_filters'])
        plugin_weighers = self.wh.get_matching_classes(
            ['iosched.nova_plugin.weighers.all_weighers'])
        default_filters = [nova_classes[n]() for n in NOVA_DEFAULT_FILTERS]
        default_weighers = [c() for c in self.wh.get_matching_classes(
            ['nova.scheduler.weights.all_weighers'])]
        own_filters = [c() for c in plugin_filters]
        own_weighers = [c() for c in plugin_weighers]
        self.sets = {
            'default': (default_filters, default_weighers),
            'iosched': (default_filters + own_filters,
                        default_weighers + own_weighers),
            'iosched_alone': (own_filters, own_weighers),
        }
        self.own = [('filter', f) for f in own_filters] + [
            ('weigher', w) for w in own_weighers]
        self.names = {
            'nova_filters': list(NOVA_DEFAULT_FILTERS),
            'nova_weighers': [type(w).__name__ for w in default_weighers],
            'iosched_filters': [c.__name__ for c in plugin_filters],
            'iosched_weighers': [c.__name__ for c in plugin_weighers],
        }

    def one_class(self, kind, obj, hosts, spec):
        """One iosched filter or weigher alone on all ``hosts``."""
        if kind == 'filter':
            self.fh.get_filtered_objects([obj], hosts, spec, 0)
        else:
            self.wh.get_weighed_objects([obj], hosts, spec)

    def schedule(self, which, hosts, spec):
        """Filter then weigh, as FilterScheduler._get_sorted_hosts does."""
        filters, weighers = self.sets[which]
        passed = self.fh.get_filtered_objects(filters, hosts, spec, 0)
        passed = list(passed or [])
        if passed and weighers:
            self.wh.get_weighed_objects(weighers, passed, spec)
        return len(passed)


# Each host's disk: this capacity, reserved 0, 500, 1000 or 1500 IOPS
# (reports.report_dict), SLO floors read from Cinder by its agent: a gold
# floor (500) fits on three hosts in four, a silver one (100) on all.
DISK_CAPACITY_IOPS = 1600.0


def templates(n, args):
    """JSON of up to ``args.templates`` distinct reports (host i uses
    number i modulo their count, with its own name).
    """
    out = []
    for i in range(min(n, args.templates)):
        data = fake_reports.report_dict(
            i, ts=time.time(), report_interval=3600.0, vcpus=args.vcpus,
            decisions=args.decisions, seed=args.seed)
        data['version'] = '1.5'
        data['disk'].update(capacity_iops=DISK_CAPACITY_IOPS,
                            slo_source='cinder')
        out.append(json.dumps(data))
    return out


def new_request(worker):
    """Untimed, before each timed request: end the previous request's
    view of the figures in this thread (``request_view``, when the plugin
    has it), as a new ``select_destinations`` (a new RequestSpec) would;
    the bench reuses its RequestSpecs.
    """
    views = getattr(worker, 'views', None)
    if views is not None:
        views.clear()


def fill_store(report_store, n, templates, progress):
    """Parse n reports from JSON into the store (as the endpoint does)."""
    from iosched.contract import payload

    for i in range(n):
        data = json.loads(templates[i % len(templates)])
        data['host'] = fake_reports.host_name(i)
        report_store.update(payload.HostReport.from_dict(data))
        if progress and (i + 1) % 1000 == 0:
            progress('  store: %d/%d reports parsed' % (i + 1, n))


def start_listener(worker, timeout=60.0):
    """Run the plugin as in production: ``listen_for_reports = true``.

    The filters and weighers check the listener of ``worker`` (a
    ``SchedulerState``) once per request; with listening on, that is the
    fast path of a running listener. The listener runs on oslo.messaging's
    in-process ``fake:/`` transport and a topic of its own: no broker is
    needed and nothing else feeds the store.
    """
    import nova.conf

    conf = nova.conf.CONF
    conf.set_override('listen_for_reports', True, 'iosched')
    conf.set_override('report_topic', 'iosched-bench-%s' %
                      uuid_mod.uuid4().hex[:8], 'iosched')
    listener = worker.start_listener(conf, transport_url='fake:/')
    deadline = time.monotonic() + timeout
    while (getattr(listener, 'state', 'listening') != 'listening' and
           time.monotonic() < deadline):
        time.sleep(0.05)
    return listener


# iosched's filters and weigher alone, per request, over Nova's default set
# (issue 29)
GOAL = 0.05


def _traced(build):
    """(result, bytes still allocated by build() when it returns)."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    result = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return result, after - before


def run(args, log=print):
    """Part 1. Returns the JSON-ready figures."""
    setup_nova()
    from bench.nova_scale import slo_volumes
    from iosched.nova_plugin import state as plugin_state

    worker = plugin_state.SchedulerState()   # as a scheduler worker's
    specs = request_specs()
    try:
        with plugin_state.use_state(worker), slo_volumes.volumes(
                args.slo_volumes, specs, log) as volumes:
            return _run(args, worker, log, specs, volumes)
    finally:
        gc.unfreeze()
        worker.stop()


def _run(args, worker, log, specs, volumes):
    sizes = sorted(args.hosts)
    largest = sizes[-1]
    log('part 1: filter + weigher cost through Nova\'s handlers, %s hosts'
        % ', '.join(str(s) for s in sizes))
    handlers = Handlers()
    log('  Nova filters: %s' % ', '.join(handlers.names['nova_filters']))
    log('  Nova weighers: %s' % ', '.join(handlers.names['nova_weighers']))
    log('  iosched filters: %s' % ', '.join(
        handlers.names['iosched_filters']))
    log('  iosched weighers: %s' % ', '.join(
        handlers.names['iosched_weighers']))
    volumes.install(handlers.sets['iosched_alone'][0])
    log('  SloCapacityFilter reads its volumes from: %s' % volumes.mode)

    report_store = worker.store
    start_listener(worker)
    wire = templates(largest, args)
    _, store_bytes = _traced(lambda: fill_store(
        report_store, largest, wire, log))
    assert report_store.stats()['fresh'] == largest, report_store.stats()
    log('  store: %d hosts, %d bytes traced' % (largest, store_bytes))

    def build_hosts():
        out = []
        for i in range(largest):
            out.append(host_state(i, json.loads(
                wire[i % len(wire)])))
            if (i + 1) % 2000 == 0:
                log('  HostState: %d/%d built' % (i + 1, largest))
        return out

    hosts, hosts_bytes = _traced(build_hosts)
    memory = {
        'hosts': largest,
        'report_json_bytes': round(sum(len(t) for t in wire) / len(wire)),
        'store_bytes_per_host': round(store_bytes / largest),
        'nova_host_state_bytes_per_host': round(hosts_bytes / largest),
        'store_over_host_state': round(store_bytes / hosts_bytes, 3),
    }
    # The HostStates and the store are long-lived in a scheduler: freeze
    # them out of the collector's scans, so that a full collection (about
    # a second at 10,000 hosts) does not land at random in one of the few
    # timed requests of one set and decide its mean.
    gc.collect()
    gc.freeze()
    # untimed: each request once (the SLO lookups fill the worker's cache,
    # kept for the run: Cinder's answers cost per request, not per host,
    # and an expiry inside the timed loop would land in one set at random)
    import nova.conf
    nova.conf.CONF.set_override('slo_cache_seconds', 24 * 3600, 'iosched')
    for spec in specs:
        new_request(worker)
        handlers.schedule('iosched', hosts[:sizes[0]], spec)
    per_size = []
    for n in sizes:
        subset = hosts[:n]
        rounds = max(args.min_rounds, int(args.host_rounds / n))
        totals = dict.fromkeys(handlers.sets, 0.0)
        passed = dict.fromkeys(handlers.sets, 0)
        t_log = time.monotonic()
        for r in range(rounds):
            for spec in specs:
                heartbeat(subset)        # untimed: every compute is up
                # interleaved, so noise hits the three sets alike
                for which in handlers.sets:
                    new_request(worker)
                    t0 = time.perf_counter()
                    passed[which] += handlers.schedule(which, subset, spec)
                    totals[which] += time.perf_counter() - t0
            if time.monotonic() - t_log > 5:
                t_log = time.monotonic()
                log('  %d hosts: round %d/%d' % (n, r + 1, rounds))
        requests = rounds * len(specs)
        us = {k: v / requests * 1e6 for k, v in totals.items()}
        by_class = {}
        if n <= args.breakdown_max_hosts:
            # each iosched class alone on all n hosts, the mix `rounds`
            # times
            for kind, obj in handlers.own:
                spent = 0.0
                for r in range(rounds):
                    for spec in specs:
                        heartbeat(subset)
                        new_request(worker)
                        t0 = time.perf_counter()
                        handlers.one_class(kind, obj, subset, spec)
                        spent += time.perf_counter() - t0
                by_class[type(obj).__name__] = round(
                    spent / requests / n * 1e6, 2)
        per_size.append({
            'hosts': n, 'requests': requests,
            'nova_default_us_per_request': round(us['default'], 1),
            'with_iosched_us_per_request': round(us['iosched'], 1),
            'with_iosched_over_default': round(us['iosched'] /
                                               us['default'], 3),
            'iosched_alone_us_per_request': round(us['iosched_alone'], 1),
            'iosched_alone_us_per_host': round(us['iosched_alone'] / n, 3),
            'iosched_alone_over_default': round(us['iosched_alone'] /
                                                us['default'], 3),
            'iosched_us_per_host_by_class': by_class,
            'hosts_passed_per_request': {
                k: round(v / requests, 1) for k, v in passed.items()},
        })
        log('  %d hosts: default %.0f us, with iosched %.0f us (%.2fx), '
            'iosched alone %.0f us per request (%.3fx of default)' % (
                n, us['default'], us['iosched'],
                us['iosched'] / us['default'], us['iosched_alone'],
                us['iosched_alone'] / us['default']))
    return {'names': handlers.names, 'per_size': per_size,
            'memory': memory, 'slo_volumes': volumes.mode,
            'goal_alone_over_default': GOAL,
            'requests_mix': [f[0] for f in FLAVORS],
            'report': {'vcpus': args.vcpus, 'decisions': args.decisions}}


def print_table(fig, out=sys.stdout):
    from bench.nova_scale import handlers_table
    handlers_table.print_table(fig, out)
