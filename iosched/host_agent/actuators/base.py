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
"""Actuator base: the only writers. Idempotent, journaled, reversible."""

import abc


class Actuator(metaclass=abc.ABCMeta):
    name = 'base'

    @abc.abstractmethod
    def apply(self, plan, ts):
        """Apply a ``model.Plan``; return the list of ``model.Change``."""

    @abc.abstractmethod
    def restore_all(self):
        """Put every changed knob back; return how many were restored."""

    def read_knob(self, kind, instance_uuid, target):
        """A knob's live value as this actuator's knob set reads it, or
        None when it reads none (a dry run).
        """
        return None

    def forget_instances(self, uuids):
        """Instances that are gone: nothing of theirs to restore."""

    def decisions(self):
        """Latest ``model.Decision`` per knob key ``(kind, uuid, target)``:
        applied, already set, failed or dry run. For explanation (report,
        logs); bounded, and instances that are gone are forgotten.
        """
        return {}
