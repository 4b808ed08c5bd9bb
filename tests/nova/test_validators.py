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
"""The ``iosched:*`` extra-spec validators inside Nova.

* ``LoaderTestCase``: Nova's own loader (stevedore group
  ``nova.api.extra_spec_validators``) finds the ``iosched`` entry point and
  registers every key of ``iosched.contract.flavor.SPECS``.
* ``RegistryTestCase``: every row of the table of
  tests/unit/nova_plugin/test_extra_specs_table.py through
  ``nova.api.validation.extra_specs.validators.validate``, the function the
  flavor extra-specs API calls.
* ``ApiV286TestCase``: the real Nova API (``_IntegratedTestBase``, WSGI
  app, database, policy) at microversion 2.86, where Nova validates extra
  specs: 200 for good values, 400 with our message for bad ones.
* ``ApiV285TestCase``: below 2.86 Nova validates nothing; a bad value is
  stored and the scheduler reads it as unset.
"""

from nova.api.validation.extra_specs import validators as nova_validators
from nova import exception
from nova import test
from nova.tests.functional.api import client as api_client
from nova.tests.functional import integrated_helpers
from stevedore import extension

from iosched.contract import flavor
from iosched.nova_plugin import scoring
from iosched.nova_plugin import validators
from tests.unit.nova_plugin import test_extra_specs_table as table


class LoaderTestCase(test.NoDBTestCase):

    def test_the_entry_point_is_found_by_stevedore(self):
        mgr = extension.ExtensionManager('nova.api.extra_spec_validators',
                                         invoke_on_load=False)
        self.assertIn('iosched', mgr.names())
        self.assertIs(validators, mgr['iosched'].plugin)
        # Named like Nova's own entries (one per namespace).
        self.assertIn('hw', mgr.names())

    def test_nova_registered_every_key_and_the_namespace(self):
        # Filled by nova's load_validators() when the module was imported.
        self.assertIn('iosched', nova_validators.NAMESPACES)
        for spec in flavor.SPECS:
            self.assertIs(
                validators.IoschedValidator,
                type(nova_validators.VALIDATORS[spec.key]), spec.key)
        self.assertIs(validators.UNKNOWN_KEY,
                      nova_validators.VALIDATORS['iosched:{key}'])

    def test_nova_value_schema_per_kind(self):
        got = {v.name: (v.value['type'], v.value.get('enum'),
                        v.value.get('min'), v.value.get('max'))
               for v in validators.register()}
        self.assertEqual({
            'iosched:io_profile': (str, ['io', 'cpu', 'mixed'], None, None),
            'iosched:latency_sensitive': (bool, None, None, None),
            'iosched:latency_ms': (int, None, 1, 10000),
            'iosched:turbo': (bool, None, None, None),
            'iosched:{key}': (str, None, None, None),
        }, got)


class RegistryTestCase(test.NoDBTestCase):
    """Every table row through the function nova-api calls."""

    def _rejects(self, key, value):
        # nova-api turns a JSON number into a string before validating.
        exc = self.assertRaises(exception.ValidationError,
                                nova_validators.validate, key, str(value))
        return exc.format_message()

    def test_good_values_pass(self):
        for key, value, _ in table.GOOD:
            with self.subTest(key=key, value=value):
                self.assertIsNone(nova_validators.validate(key, str(value)))

    def test_bad_values_name_the_key_the_value_and_what_is_accepted(self):
        for key, value, accepted in table.BAD:
            with self.subTest(key=key, value=value):
                msg = self._rejects(key, value)
                self.assertIn("flavor extra spec '%s'" % key, msg)
                self.assertIn('invalid value %r' % value, msg)
                self.assertIn('accepted: ' + accepted, msg)

    def test_unknown_keys_name_the_key_and_the_accepted_keys(self):
        for key, value in table.UNKNOWN:
            with self.subTest(key=key):
                msg = self._rejects(key, value)
                self.assertIn("unknown flavor extra spec '%s'" % key, msg)
                self.assertIn('accepted keys: ' + table.ACCEPTED_KEYS, msg)

    def test_other_namespaces_are_left_to_nova(self):
        nova_validators.validate('hw:cpu_policy', 'dedicated')
        nova_validators.validate('foo', 'bar')          # no namespace
        nova_validators.validate('acme:anything', 'x')  # unknown namespace
        msg = self._rejects('hw:cpu_policy', 'io')
        self.assertNotIn('iosched', msg)

    def test_unknown_key_validator_defers_to_a_known_key(self):
        # Nova may try the catch-all pattern before a row's own validator.
        validators.UNKNOWN_KEY.validate('iosched:latency_ms', '2')
        self.assertRaises(exception.ValidationError,
                          validators.UNKNOWN_KEY.validate,
                          'iosched:latency_ms', '0')


def _api_message(exc):
    return exc.response.json()['badRequest']['message']


class _NoService(object):
    def stop(self):
        pass


class _ApiTestCase(integrated_helpers._IntegratedTestBase):
    """The real API; no conductor, scheduler or compute service.

    The flavor and extra-specs APIs touch only the API database, so the
    services _IntegratedTestBase would start are left out (about 4 s per
    test).
    """

    REQUIRES_LOCKING = False

    def _setup_conductor_service(self):
        return _NoService()

    def _setup_scheduler_service(self):
        return _NoService()

    def _setup_compute_service(self):
        return _NoService()


class ApiV286TestCase(_ApiTestCase):
    """The flavor extra-specs API validates at microversion >= 2.86."""

    microversion = '2.86'

    def setUp(self):
        super(ApiV286TestCase, self).setUp()
        self.flavor_id = self._create_flavor(vcpu=2)

    def _post(self, specs):
        return self.admin_api.post_extra_spec(
            self.flavor_id, {'extra_specs': specs})

    def _post_fails(self, specs):
        exc = self.assertRaises(api_client.OpenStackApiException,
                                self._post, specs)
        self.assertEqual(400, exc.response.status_code)
        return _api_message(exc)

    def test_good_specs_are_stored_and_read_by_the_scheduler(self):
        specs = {'iosched:io_profile': 'mixed',
                 'iosched:latency_sensitive': 'True',
                 'iosched:latency_ms': '2'}
        self._post(specs)
        stored = self.admin_api.get_extra_specs(self.flavor_id)
        self.assertEqual(specs, stored)
        self.assertEqual(
            scoring.Request(2, 'mixed', True, 2),
            scoring.Request.from_extra_specs(2, stored))

    def test_every_good_table_row_is_accepted(self):
        for key, value, want in table.GOOD:
            with self.subTest(key=key, value=value):
                self._post({key: value})
                stored = self.admin_api.get_extra_specs(self.flavor_id)
                self.assertEqual(want, getattr(flavor.read(stored),
                                               flavor.BY_KEY[key].field))

    def test_json_number_latency(self):
        self._post({'iosched:latency_ms': 5})
        self.assertEqual({'iosched:latency_ms': '5'},
                         self.admin_api.get_extra_specs(self.flavor_id))
        msg = self._post_fails({'iosched:latency_ms': 2.5})
        self.assertIn("invalid value '2.5'", msg)

    def test_every_bad_table_row_is_a_400_with_our_message(self):
        for key, value, accepted in table.BAD:
            with self.subTest(key=key, value=value):
                msg = self._post_fails({key: value})
                self.assertEqual(
                    "Validation failed; invalid value %r for flavor extra "
                    "spec '%s': accepted: " % (value, key), msg[:len(
                        "Validation failed; invalid value %r for flavor "
                        "extra spec '%s': accepted: " % (value, key))])
                self.assertIn(accepted, msg)
        self.assertEqual({}, self.admin_api.get_extra_specs(self.flavor_id))

    def test_unknown_iosched_key_is_a_400_listing_the_keys(self):
        msg = self._post_fails({'iosched:nonsense': 'io'})
        self.assertEqual(
            "Validation failed; unknown flavor extra spec "
            "'iosched:nonsense' (value 'io') in the 'iosched' namespace: "
            "accepted keys: " + table.ACCEPTED_KEYS + ".", msg)

    def test_one_bad_key_rejects_the_whole_request(self):
        msg = self._post_fails({'iosched:io_profile': 'io',
                                'hw:cpu_policy': 'shared',
                                'iosched:latency_ms': '20000'})
        self.assertIn("'iosched:latency_ms'", msg)
        self.assertEqual({}, self.admin_api.get_extra_specs(self.flavor_id))

    def test_a_miscased_namespace_is_stored_and_read_by_no_one(self):
        # Nova checks only the namespaces it knows: 'IOSCHED' is not one.
        # Every reader ignores the key (keys are case-sensitive), with a
        # warning (iosched.contract.flavor, decision "Keys are exact").
        specs = {'IOSCHED:latency_sensitive': 'true'}
        self._post(specs)
        stored = self.admin_api.get_extra_specs(self.flavor_id)
        self.assertEqual(specs, stored)
        reading = flavor.read(stored)
        self.assertFalse(reading.latency_sensitive)
        self.assertEqual(['IOSCHED:latency_sensitive'],
                         [i.key for i in reading.ignored])
        self.assertIn("accepted: 'iosched:latency_sensitive'",
                      str(reading.ignored[0].error))

    def test_put_one_key(self):
        key = 'iosched:latency_sensitive'
        self.admin_api.put_extra_spec(self.flavor_id, key, {key: 'yes'})
        self.assertEqual({key: 'yes'},
                         self.admin_api.get_extra_spec(self.flavor_id, key))
        exc = self.assertRaises(
            api_client.OpenStackApiException, self.admin_api.put_extra_spec,
            self.flavor_id, key, {key: 'maybe'})
        self.assertEqual(400, exc.response.status_code)
        self.assertIn(table.ACCEPTED_BOOL, _api_message(exc))
        self.assertEqual({key: 'yes'},
                         self.admin_api.get_extra_spec(self.flavor_id, key))

    def test_flavor_create_then_set_like_the_openstack_client(self):
        # `openstack flavor set --property` posts to os-extra_specs, one
        # request for all properties.
        flavor_id = self._create_flavor(
            name='lsvm.small', vcpu=1,
            extra_spec={'iosched:latency_sensitive': 'true',
                        'iosched:latency_ms': '2'})
        self.assertEqual('2', self.admin_api.get_extra_spec(
            flavor_id, 'iosched:latency_ms')['iosched:latency_ms'])
        exc = self.assertRaises(
            api_client.OpenStackApiException, self._create_flavor,
            name='io.typo', extra_spec={'iosched:io_profle': 'io'})
        self.assertEqual(400, exc.response.status_code)
        self.assertIn("unknown flavor extra spec 'iosched:io_profle'",
                      _api_message(exc))


class ApiV285TestCase(_ApiTestCase):
    """Below 2.86 Nova stores any value; the scheduler reads it as unset."""

    microversion = '2.85'

    def test_bad_values_are_stored_unchecked(self):
        flavor_id = self._create_flavor(vcpu=2)
        bad = {'iosched:io_profile': 'disk',
               'iosched:latency_sensitive': 'maybe',
               'iosched:latency_ms': 'fast',
               'iosched:nonsense': 'x'}
        self.admin_api.post_extra_spec(flavor_id, {'extra_specs': bad})
        stored = self.admin_api.get_extra_specs(flavor_id)
        self.assertEqual(bad, stored)
        self.assertEqual(scoring.Request(2),
                         scoring.Request.from_extra_specs(2, stored))
