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
"""The exit codes of every installed command: the one source of the table
in docs/reliability.md §9c (``markdown()`` prints it; test_cli_fuzz
checks the doc holds exactly that text) and of the codes the fuzz tests
accept per command (``codes(name)``).

Every command also exits 2 for an argparse usage error and 0 for
``--help``.
"""

# command -> ((code, meaning), ...)
TABLE = {
    'io-host-agent': (
        (0, 'stopped by SIGTERM or SIGINT, every knob put back'),
        (1, 'the journal stopped taking entries (read-only, full): every '
            'knob it records put back, then stopped rather than act '
            'unjournaled'),
        (2, 'bad argument, configuration file or option value, report key '
            'or driver; another agent holds the journal (its PID named); '
            'the journal cannot be read: one line, nothing changed on the '
            'host'),
        (131, '128 + N after another ending signal N (131: SIGQUIT; '
              'SIGUSR1, SIGALRM likewise), every knob put back'),
    ),
    'iosched-explain': (
        (0, 'explained (also when nothing is held)'),
        (2, 'bad input: journal, report, configuration file'),
    ),
    'iosched-wakeup-probe': (
        (0, 'measured (also when a case was refused)'),
        (1, 'the test could not run (privilege)'),
        (2, 'bad input: numbers, cases, configuration file'),
    ),
    'iosched-placement': (
        (0, 'answered (also when no host passes)'),
        (1, '--check-flavors: some flavor needs a fix'),
        (2, 'bad input: report file, configuration file, options, '
            'unreachable broker or cloud'),
        (3, 'no report to answer from'),
    ),
    'iosched-status': (
        (0, 'every --host reported'),
        (1, 'a --host did not report within --wait'),
        (2, 'bad input: options, configuration file, unreachable broker'),
    ),
    'iosched-report-key': (
        (0, 'key printed'),
        (2, 'bad input: host, configuration file, no master key'),
    ),
    'iosched-demo': (
        (0, 'both runs done, report written'),
        (1, 'the --transport-url broker did not answer (nothing written)'),
        (2, 'bad input: scenario file, --output-dir, --transport-url'),
    ),
    'iosched-slo': (
        (0, 'done or unchanged (check: no problem)'),
        (1, 'check found problems; Cinder refused or unreachable'),
        (2, 'bad input: SLO, option, --config-file (nothing sent to '
            'Cinder)'),
        (3, 'conflict: spec differs, type associated elsewhere or in use'),
        (4, 'not found'),
    ),
    'openstack volume slo type': (
        (0, 'done or unchanged'),
        (1, 'Cinder refused or unreachable'),
        (2, 'bad input: SLO, option, --config-file (nothing sent to '
            'Cinder)'),
        (3, 'conflict: spec differs, type associated elsewhere or in use'),
        (4, 'not found'),
    ),
    'iosched-testbed': (
        (0, 'done'),
        (1, 'bad guest spec, libvirt or testbed error'),
        (2, 'usage error'),
    ),
    'iosched-cloud': (
        (0, 'done; status: every process running'),
        (1, 'up/down failed or left something behind; not root'),
        (2, 'usage error; a --state-dir that is no cloud state directory'),
        (3, 'status: no cloud, or a process not running'),
    ),
    'iosched-iotrace': (
        (0, 'done (also when analyze finds an inversion)'),
        (1, 'the recording could not run (tracefs, privilege, libvirt)'),
        (2, 'bad input: trace file, options, output path'),
        (130, 'interrupted before a recording started'),
    ),
}


def row(name):
    """The TABLE key of a command or sub-command name (longest prefix)."""
    keys = [k for k in TABLE if name == k or name.startswith(k + ' ')]
    if not keys:
        raise KeyError('%s: no row in the exit code table' % name)
    return max(keys, key=len)


def codes(name):
    """The exit codes ``name`` may return (0 included)."""
    return frozenset(code for code, _ in TABLE[row(name)])


def markdown():
    """The table as docs/reliability.md §9c holds it."""
    out = ['| command | exit code | meaning |', '|---|---|---|']
    for name, rows in TABLE.items():
        for i, (code, meaning) in enumerate(rows):
            out.append('| %s | %d | %s |' % ('`%s`' % name if i == 0 else '',
                                            code, meaning))
    return '\n'.join(out)
