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
"""Print the fault campaigns' tally (``tests/fault_tally.py``): one row per
campaign and the totals; exit 1 if any figure but ``cases`` is not 0.

    python -m tests.fault_summary TALLY_FILE
"""

import collections
import json
import sys

from tests import fault_tally


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print('usage: python -m tests.fault_summary TALLY_FILE',
              file=sys.stderr)
        return 2
    rows = collections.OrderedDict()
    try:
        with open(argv[0], encoding='utf-8') as fh:
            for line in fh:
                row = json.loads(line)
                acc = rows.setdefault(row['campaign'],
                                      dict.fromkeys(fault_tally.FIGURES, 0))
                for k in fault_tally.FIGURES:
                    acc[k] += row[k]
    except (OSError, ValueError, KeyError) as e:
        print('fault_summary: cannot read the tally %s: %s' % (argv[0], e),
              file=sys.stderr)
        return 1
    width = max([len(c) for c in rows] + [len('campaign'), len('total')])
    head = ('campaign'.ljust(width) + ''.join(
        '%16s' % k for k in fault_tally.FIGURES))
    print(head)
    total = dict.fromkeys(fault_tally.FIGURES, 0)
    for name, acc in rows.items():
        print(name.ljust(width) + ''.join('%16d' % acc[k]
                                          for k in fault_tally.FIGURES))
        for k in fault_tally.FIGURES:
            total[k] += acc[k]
    print('total'.ljust(width) + ''.join('%16d' % total[k]
                                         for k in fault_tally.FIGURES))
    bad = sum(total[k] for k in fault_tally.FIGURES if k != 'cases')
    print('faults campaign: %d cases in %d campaigns; %d exceptions escaped,'
          ' %d knobs left changed, %d reports wrongly stored' % (
              total['cases'], len(rows), total['escaped'],
              total['knobs_left'], total['wrongly_stored']))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
