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
"""openstack.cloud < 2.6 with openstacksdk 4.x: import ``openstack.version``.

The collection's ``module_utils/openstack.py`` (2.5.0, the one the
``ansible`` 12.x wheel bundles) reads ``openstack.version.__version__``
after ``import openstack``, but openstacksdk 4.x no longer imports that
(deprecated) submodule from its ``__init__``, so every module of the
collection fails with "module 'openstack' has no attribute 'version'".
The role puts this directory first on the flavor task's ``PYTHONPATH``
(``iosched_cloud_objects_sdk_compat``), so the module's interpreter imports
the submodule at start-up. Without openstacksdk, or with an sdk that no
longer has the submodule, it does nothing. A ``sitecustomize`` it shadows
(later on ``sys.path``, e.g. the distribution's) is run after it.
"""

import importlib.machinery
import importlib.util
import os
import sys
import warnings

try:
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        importlib.import_module('openstack.version')
except ImportError:
    pass

_here = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.machinery.PathFinder.find_spec(
    'sitecustomize', [p for p in sys.path
                      if os.path.abspath(p or os.curdir) != _here])
if _spec is not None and _spec.loader is not None:
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
