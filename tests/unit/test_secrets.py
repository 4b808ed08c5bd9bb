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
"""docs/security.md "Secrets": never logged, never in reports.

* every option that holds a credential is ``secret=True`` (a new option
  named like one fails here until it is);
* ``log_opt_values`` (the agent logs its configuration at DEBUG on start)
  prints ``****`` for each of them;
* a rejected report's WARNING names the host and the reason, never the
  signature or a key; an accepted report carries no key.
"""

import logging
import re

from oslo_config import cfg
import pytest

from iosched.cinder_qos import conf as cinder_conf
from iosched.contract import signature
from iosched.host_agent.conf import opts as agent_opts
from iosched.nova_plugin import conf as nova_conf
from iosched.nova_plugin import endpoint
from iosched.nova_plugin import store
from tests.unit.nova_plugin import reports

SENTINEL = 'S3CRET-sentinel-0123456789abcdef-0123456789abcdef'
CREDENTIAL = re.compile(r'(password|secret|token|(^|_)key$|transport_url)')


def _all_opts():
    for list_opts in (agent_opts.list_opts, nova_conf.list_opts,
                      cinder_conf.list_opts):
        for group, opts in list_opts():
            for opt in opts:
                yield group, opt


def test_every_credential_option_is_secret():
    named = [(g, o.name) for g, o in _all_opts()
             if CREDENTIAL.search(o.name)]
    assert ('reporter', 'report_key') in named
    assert ('iosched', 'report_master_key') in named
    assert [(g, o.name) for g, o in _all_opts()
            if CREDENTIAL.search(o.name) and not o.secret] == []


def test_log_opt_values_masks_every_secret(caplog):
    conf = cfg.ConfigOpts()
    secrets, plain = [], None
    for group, opt in _all_opts():
        if opt.required:
            continue
        try:
            conf.register_opt(opt, group=group)
        except cfg.DuplicateOptError:
            continue
        if opt.secret and isinstance(opt, cfg.StrOpt):
            secrets.append((group, opt.name))
        elif plain is None and type(opt) is cfg.StrOpt and \
                not getattr(opt.type, 'choices', None):
            plain = (group, opt.name)
    conf([], default_config_files=[])
    for group, name in secrets:
        conf.set_override(name, SENTINEL, group=group)
    conf.set_override(plain[1], 'plain-visible-value', group=plain[0])
    log = logging.getLogger('iosched.test.secrets')
    with caplog.at_level(logging.DEBUG, logger='iosched.test.secrets'):
        conf.log_opt_values(log, logging.DEBUG)
    text = '\n'.join(r.getMessage() for r in caplog.records)
    assert len(secrets) >= 3
    assert 'plain-visible-value' in text        # the test can see values
    assert SENTINEL not in text
    for group, name in secrets:
        assert re.search(r'%s\.%s\s+= \*\*\*\*' % (group, name), text), (
            group, name)


@pytest.mark.parametrize('tamper', [True, False])
def test_rejected_reports_log_no_signature_and_no_key(caplog, tamper):
    master = SENTINEL
    st = store.ReportStore()
    ep = endpoint.ReportEndpoint(st, auth='hmac', master_key=master)
    data = reports.report(host='c1').to_dict()
    key = signature.derive_host_key(master, 'c1')
    sig = signature.sign(data, key if not tamper else
                         signature.derive_host_key(master, 'c2'))
    if not tamper:
        sig = sig[:-1] + ('0' if sig[-1] != '0' else '1')
    with caplog.at_level(logging.DEBUG):
        ep.report_host_io({}, data, sig)
    text = '\n'.join(r.getMessage() for r in caplog.records)
    assert 'bad signature for host c1' in text
    for secret in (master, key, sig, sig.split(':', 1)[1]):
        assert secret not in text


def test_a_signed_report_does_not_carry_the_key():
    data = reports.report(host='c1').to_dict()
    key = signature.derive_host_key(SENTINEL, 'c1')
    sig = signature.sign(data, key)
    assert key not in sig and key not in repr(data)
    assert SENTINEL not in sig
