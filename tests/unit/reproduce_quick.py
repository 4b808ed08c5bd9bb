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
"""The quick rows of bench/reproduce's experiments, each experiment run
once per test process (in-process, as ``python -m bench.reproduce
--quick`` runs it in a worker), shared by the per-paper reproduction
tests.
"""

import functools
import importlib


@functools.lru_cache(maxsize=None)
def rows(module, exp):
    """The rows of ``bench.reproduce.<module>``'s experiment ``exp``."""
    mod = importlib.import_module('bench.reproduce.' + module)
    return tuple(dict(mod.EXPERIMENTS)[exp](True))
