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
"""Scenario files of the embedded default: hosts, flavors, SLO volume
types and a stream of server requests, in YAML.

Example (``iosched/demo/scenarios/default.yaml`` is the full one)::

    seed: 42
    arrival_interval_s: 1.0      # one server request per simulated second
    warmup_s: 3.0                # after the last placement, not measured
    measure_s: 20.0              # measured window
    hosts:
      - {name: compute-1, pcpus: 4, ram_mb: 65536}
    flavors:
      lsvm.small:
        vcpus: 1
        ram_mb: 2048
        extra_specs: {"iosched:latency_sensitive": "true",
                      "iosched:latency_ms": "2", "iosched:io_profile": "io"}
    volume_types:
      slo-gold: {slo: "300iops,20ms,p99"}
    servers:
      - name: web
        count: 2                 # web-1, web-2
        flavor: lsvm.small
        workload: {type: request_response, rate_per_s: 300, burst_us: 200}

``load(path)`` validates everything and raises ``ScenarioError`` with the
path of the bad field, what it got (shortened) and what is accepted: an
unknown field, a number that is not finite, an SLO text ``cinder_qos``
refuses or an ``iosched:*`` extra spec the Nova API would refuse is an
error here, not later in the run.
"""

import dataclasses
import math
import os

import yaml

from iosched.contract import flavor as flavor_contract
from iosched.contract import slo as slo_mod
from iosched.simulator import spec_kernel

# The simulated hosts' kernel unless a host names another
# (iosched/simulator/spec_kernel.py): the one calibrated on a real 6.18 host,
# so the embedded default promises only what a real host does.
DEFAULT_KERNEL = 'linux-6.18-hz250'

WORKLOADS = {
    'cpu': {},
    'idle': {},
    'request_response': {'rate_per_s': float, 'burst_us': int,
                         'burst_jitter': float},
    'disk_closed_loop': {'outstanding': int, 'io_bytes': int,
                         'cpu_per_io_us': int, 'write_ratio': float},
    'mixed': {'cpu_fraction': float, 'period_us': int, 'rate_per_s': float,
              'burst_us': int, 'burst_jitter': float},
}
DEFAULT_SCENARIO = os.path.join(os.path.dirname(__file__), 'scenarios',
                                'default.yaml')


# Servers after ``count`` expansion: parse() builds them all in memory.
MAX_SERVERS = 10000
FIELDS = ('name', 'seed', 'arrival_interval_s', 'warmup_s', 'measure_s',
          'tick_s', 'policies', 'hosts', 'flavors', 'volume_types',
          'servers')
HOST_FIELDS = ('name', 'pcpus', 'ram_mb', 'kernel', 'default_slice_ms',
               'disk_service_us', 'disk_parallelism', 'cpu_allocation_ratio')
FLAVOR_FIELDS = ('vcpus', 'ram_mb', 'extra_specs')
VOLUME_TYPE_FIELDS = ('slo',)
SERVER_FIELDS = ('name', 'count', 'flavor', 'volume_type', 'workload')


def _short(value, limit=80):
    """``repr(value)`` cut to ``limit`` characters, the length said."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return text
    return '%s...(%d characters)' % (text[:limit], len(text))


class ScenarioError(ValueError):
    def __init__(self, field, problem):
        super().__init__('scenario field %s: %s' % (_short(str(field), 200),
                                                    problem))


def _only(data, path, accepted):
    """Refuse a key of mapping ``data`` that is not in ``accepted``."""
    for key in data:
        if key not in accepted:
            raise ScenarioError('%s.%s' % (path, key) if path else key,
                                'unknown field; accepted: %s'
                                % ', '.join(accepted))


def _mapping(value, where, what='a mapping'):
    if not isinstance(value, dict):
        raise ScenarioError(where, 'expected %s, got %s'
                            % (what, _short(value)))
    return value


def _names(data, where):
    """A mapping keyed by names: every key must be text."""
    for key in data:
        if not isinstance(key, str) or not key:
            raise ScenarioError(where, 'expected names (text), got %s; '
                                'accepted: non-empty text' % _short(key))
    return data


@dataclasses.dataclass(frozen=True)
class Host:
    name: str
    pcpus: int
    ram_mb: int
    default_slice_us: int = 3000
    kernel: str = DEFAULT_KERNEL
    disk_service_us: int = 150
    disk_parallelism: int = 8
    cpu_allocation_ratio: float = 4.0


@dataclasses.dataclass(frozen=True)
class Flavor:
    name: str
    vcpus: int
    ram_mb: int
    extra_specs: dict


@dataclasses.dataclass(frozen=True)
class Server:
    name: str
    flavor: Flavor
    workload: dict            # {'type': ..., params}
    volume_type: str = ''


# The agent's policies in the embedded default (host_agent policies
# namespace, in order: later ones override earlier ones on the same knob;
# ISACS leaves LSVMs to vSlicer; the SLO loop owns disk iotune).
DEFAULT_POLICIES = ('vslicer', 'isacs', 'slo')
POLICIES = ('vslicer', 'isacs', 'vturbo', 'slo')


@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    seed: int
    arrival_interval_s: float
    warmup_s: float
    measure_s: float
    tick_s: float
    hosts: tuple
    flavors: dict
    volume_types: dict        # name -> SLO text
    servers: tuple
    policies: tuple = DEFAULT_POLICIES   # the agent's policies, in order


def _req(data, key, path, kind, default=dataclasses.MISSING, lo=None,
         hi=None):
    where = '%s.%s' % (path, key) if path else key
    if key not in data:
        if default is dataclasses.MISSING:
            raise ScenarioError(where, 'missing (required)')
        return default
    value = data[key]
    if kind is float and isinstance(value, int) and not isinstance(value,
                                                                  bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool) and kind in (
            int, float):
        raise ScenarioError(where, 'expected %s, got %s'
                            % (kind.__name__, _short(value)))
    if kind is float and not math.isfinite(value):
        raise ScenarioError(where, 'got %r, accepted: a finite number%s'
                            % (value, ' >= %s' % lo if lo is not None
                               else ''))
    if lo is not None and value < lo:
        raise ScenarioError(where, 'got %s, accepted: >= %s'
                            % (_short(value), lo))
    if hi is not None and value > hi:
        raise ScenarioError(where, 'got %s, accepted: <= %s'
                            % (_short(value), hi))
    return value


def _choice(value, choices, where):
    if not isinstance(value, str) or value not in choices:
        names = sorted(choices)
        raise ScenarioError(where, 'got %s, accepted: %s%s' % (
            _short(value), ', '.join(_short(c, 40) for c in names[:20]),
            ' and %d more' % (len(names) - 20) if len(names) > 20 else ''))
    return value


def _workload(data, path):
    if not isinstance(data, dict):
        raise ScenarioError(path, 'expected a mapping with a type')
    kind = _choice(_req(data, 'type', path, str), WORKLOADS, path + '.type')
    out = {'type': kind}
    for key, value in data.items():
        if key == 'type':
            continue
        if key not in WORKLOADS[kind]:
            raise ScenarioError('%s.%s' % (path, key),
                                'unknown for %s; accepted: %s' % (
                                    kind, ', '.join(WORKLOADS[kind]) or
                                    'none'))
        out[key] = _req(data, key, path, WORKLOADS[kind][key], lo=0)
    return out


def _extra_specs(specs, path):
    """Flavor extra specs as Nova stores them (text); one that every reader
    would ignore (``iosched.contract.flavor.check_specs``: what the Nova
    API refuses at microversion 2.86, or a miscased ``iosched:`` key) is
    refused.
    """
    out = {}
    for k, v in _names(specs, path).items():
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    try:
        flavor_contract.check_specs(out)
    except flavor_contract.InvalidExtraSpec as e:
        raise ScenarioError('%s.%s' % (path, e.key), str(e))
    return out


def _hosts(data):
    """``hosts``: at least one, unique names."""
    hosts = []
    for i, h in enumerate(_req(data, 'hosts', '', list)):
        p = 'hosts[%d]' % i
        _only(_mapping(h, p), p, HOST_FIELDS)
        pcpus = _req(h, 'pcpus', p, int, lo=1)
        kernel = _choice(_req(h, 'kernel', p, str, DEFAULT_KERNEL),
                         spec_kernel.KERNELS, p + '.kernel')
        slice_ms = _req(h, 'default_slice_ms', p, float, None, lo=0.1)
        hosts.append(Host(
            name=_req(h, 'name', p, str),
            pcpus=pcpus,
            ram_mb=_req(h, 'ram_mb', p, int, lo=1),
            # the kernel's own base slice for the host's size by default
            default_slice_us=(int(slice_ms * 1000) if slice_ms is not None
                              else spec_kernel.base_slice_us(pcpus)),
            kernel=kernel,
            disk_service_us=_req(h, 'disk_service_us', p, int, 150,
                                 lo=1),
            disk_parallelism=_req(h, 'disk_parallelism', p, int, 8, lo=1),
            cpu_allocation_ratio=_req(h, 'cpu_allocation_ratio', p, float,
                                      4.0, lo=0.1)))
    if not hosts:
        raise ScenarioError('hosts', 'needs at least one host')
    if len({h.name for h in hosts}) != len(hosts):
        raise ScenarioError('hosts', 'host names must be unique')
    return hosts


def _flavors(data):
    """``flavors``: name -> Flavor, extra specs as Nova checks them."""
    flavors = {}
    for fname, f in _names(_req(data, 'flavors', '', dict),
                           'flavors').items():
        p = 'flavors.%s' % fname
        _only(_mapping(f, p), p, FLAVOR_FIELDS)
        specs = _req(f, 'extra_specs', p, dict, {})
        flavors[fname] = Flavor(
            name=fname, vcpus=_req(f, 'vcpus', p, int, lo=1),
            ram_mb=_req(f, 'ram_mb', p, int, lo=1),
            extra_specs=_extra_specs(specs, p + '.extra_specs'))
    return flavors


def _volume_types(data):
    """``volume_types``: name -> SLO text ``cinder_qos`` accepts."""
    vtypes = {}
    for vname, v in _names(_req(data, 'volume_types', '', dict, {}),
                           'volume_types').items():
        p = 'volume_types.%s' % vname
        _only(_mapping(v, p), p, VOLUME_TYPE_FIELDS)
        vtypes[vname] = _req(v, 'slo', p, str)
        try:    # as the admin tool would refuse it, before any cloud exists
            slo_mod.parse(vtypes[vname])
        except slo_mod.SLOError as e:
            raise ScenarioError(p + '.slo', str(e))
    return vtypes


def _servers(data, flavors, vtypes):
    """``servers``, each ``count`` expanded (at most MAX_SERVERS)."""
    servers = []
    for i, s in enumerate(_req(data, 'servers', '', list)):
        p = 'servers[%d]' % i
        _only(_mapping(s, p), p, SERVER_FIELDS)
        fname = _choice(_req(s, 'flavor', p, str), flavors, p + '.flavor')
        vtype = _req(s, 'volume_type', p, str, '')
        if vtype:
            _choice(vtype, vtypes, p + '.volume_type')
        workload = _workload(_req(s, 'workload', p, dict), p + '.workload')
        base = _req(s, 'name', p, str)
        count = _req(s, 'count', p, int, 1, lo=1,
                     hi=MAX_SERVERS - len(servers))
        for n in range(count):
            servers.append(Server(
                name=base if count == 1 else '%s-%d' % (base, n + 1),
                flavor=flavors[fname], workload=workload,
                volume_type=vtype))
    if len({s.name for s in servers}) != len(servers):
        raise ScenarioError('servers', 'server names must be unique')
    return servers


def _policies(data):
    """``policies``: a non-empty list of POLICIES."""
    policies = _req(data, 'policies', '', list, list(DEFAULT_POLICIES))
    if not policies:
        raise ScenarioError('policies', 'empty; accepted: a list of %s'
                            % ', '.join(POLICIES))
    for i, pol in enumerate(policies):
        _choice(pol, POLICIES, 'policies[%d]' % i)
    return policies


def parse(data, name='scenario'):
    """The Scenario of ``data`` (a parsed file); the sections are checked
    in this order, the first bad field raising ScenarioError.
    """
    _only(_mapping(data, '<root>', 'a mapping of scenario fields'), '',
          FIELDS)
    hosts = _hosts(data)
    flavors = _flavors(data)
    vtypes = _volume_types(data)
    servers = _servers(data, flavors, vtypes)
    policies = _policies(data)
    return Scenario(
        name=_req(data, 'name', '', str, name),
        seed=_req(data, 'seed', '', int, 42),
        arrival_interval_s=_req(data, 'arrival_interval_s', '', float, 1.0,
                                lo=0.01),
        warmup_s=_req(data, 'warmup_s', '', float, 3.0, lo=0),
        measure_s=_req(data, 'measure_s', '', float, 20.0, lo=0.1),
        tick_s=_req(data, 'tick_s', '', float, 1.0, lo=0.05),
        hosts=tuple(hosts), flavors=flavors, volume_types=vtypes,
        servers=tuple(servers), policies=tuple(policies))


def load(path=None):
    path = path or DEFAULT_SCENARIO
    try:
        with open(path, encoding='utf-8') as fh:
            data = yaml.safe_load(fh)
    except OSError as e:
        raise ScenarioError('<file>', 'cannot read %s: %s' % (path, e))
    except (yaml.YAMLError, ValueError, RecursionError) as e:
        # ValueError: not UTF-8; RecursionError: nested deeper than the
        # parser's stack
        raise ScenarioError('<file>', 'not valid YAML: %s; accepted: a '
                            'UTF-8 YAML mapping of scenario fields (see %s)'
                            % (_short(str(e), 300), DEFAULT_SCENARIO))
    return parse(data, name=os.path.splitext(os.path.basename(path))[0])
