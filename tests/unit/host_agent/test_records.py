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
"""``records.quick_init``: the same record as the dataclass's own
``__init__`` gives (fields, defaults, equality, hash, repr, replace,
pickle, frozen), and a refusal for what it does not handle.
"""

import dataclasses
import inspect
import pickle

import pytest

from iosched.host_agent import model
from iosched.host_agent import records


@dataclasses.dataclass(frozen=True)
class Plain:
    a: int
    b: str
    c: tuple = ()
    d: float = 0.5


Quick = records.quick_init(dataclasses.dataclass(frozen=True)(
    type('Quick', (), {'__annotations__': dict(Plain.__annotations__),
                       'c': (), 'd': 0.5})))


@pytest.mark.parametrize('args,kwargs', [
    ((1, 'x'), {}), ((1, 'x', (2,)), {}), ((), dict(a=1, b='x', d=2.0)),
    ((1,), dict(b='y', c=(1, 2))),
])
def test_same_record_as_the_dataclass(args, kwargs):
    want, got = Plain(*args, **kwargs), Quick(*args, **kwargs)
    assert dataclasses.astuple(got) == dataclasses.astuple(want)
    assert repr(got).replace('Quick', 'Plain') == repr(want)
    assert got == Quick(*args, **kwargs)
    assert hash(got) == hash(Quick(*args, **kwargs))
    assert dataclasses.replace(got, a=9).a == 9
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.a = 2


@pytest.mark.parametrize('args,kwargs', [
    ((), {}), ((1,), {}), ((1, 'x'), dict(a=2)), ((1, 'x'), dict(e=1)),
    ((1, 'x', (), 0.5, 7), {}),
])
def test_same_errors_as_the_dataclass(args, kwargs):
    for cls in (Plain, Quick):
        with pytest.raises(TypeError):
            cls(*args, **kwargs)


@pytest.mark.parametrize('cls', [model.VcpuSample, model.VcpuIoStrength,
                                 model.Change])
def test_model_records_keep_their_signature(cls):
    assert cls.__init__.__qualname__ == '%s.__init__' % cls.__name__
    assert list(inspect.signature(cls).parameters) == [
        f.name for f in dataclasses.fields(cls)]


def test_a_model_record_pickles_and_defaults():
    s = model.VcpuSample(instance_uuid='u', vcpu=0, ts=1.0, pcpu=2,
                         run_ns=5, wait_ns=6, wakeups=7)
    assert pickle.loads(pickle.dumps(s)) == s
    assert (s.io_events, s.io_events_unit_ns, s.io_event_count,
            s.run_delays_ns, s.io_requests) == (None, 1, None, None, None)


@pytest.mark.parametrize('cls', [
    dataclasses.dataclass(frozen=True)(type('F', (), {
        '__annotations__': {'a': list},
        'a': dataclasses.field(default_factory=list)})),
    dataclasses.dataclass(frozen=True)(type('P', (), {
        '__annotations__': {'a': int},
        '__post_init__': lambda self: None})),
    dataclasses.dataclass(frozen=True)(type('E', (), {})),
])
def test_refuses_what_it_does_not_handle(cls):
    with pytest.raises(TypeError):
        records.quick_init(cls)
