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
"""The agent's privilege boundaries: two oslo.privsep contexts.

Every root-only change goes through an ``@sys_admin_pctxt.entrypoint``
function in ``iosched.host_agent.linux.privileged`` (a thread's slice, deadline
reservation, return to the fair class, CPU affinity; one CPU-weight or
bandwidth cgroup file) or ``iosched.host_agent.linux.privileged_probe`` (the
wake-up self-test, run once at start). The agent itself runs
unprivileged; the privsep daemon keeps uid 0 but only these capabilities:

* ``CAP_SYS_NICE``: ``sched_setattr`` on a thread of another user (QEMU
  vCPU threads run as libvirt-qemu) is refused with EPERM without it
  (``user_check_sched_setscheduler``: "can't change other user's
  priorities").

Deliberately *not* kept (measured on the project's kernel, see
``tests/functional/test_linux_knobs.py``):

* ``CAP_DAC_OVERRIDE`` / ``CAP_DAC_READ_SEARCH``: cgroup files are owned by
  root with mode 0644 and directories 0755; the daemon's uid 0 is their
  owner, so plain permission bits allow the writes. Only needed if an
  operator sets ``[host_agent_privsep] user`` to a non-root user.
* ``CAP_SYS_ADMIN``: writing ``cpu.*`` files needs no capability check;
  only creating hierarchies (mount) or ``release_agent`` would.

A second context, ``cgroup_admin_pctxt`` (section
``[host_agent_privsep_cgroup]``), keeps only ``CAP_DAC_OVERRIDE`` and
serves one call (``iosched.host_agent.linux.privileged_group.make_parent``):
creating the LSVM parent group at the top of a cgroup v1 cpu hierarchy,
whose root directory is mode 0555 (``linux.lsvm_group``). Kept apart, as
os-vif keeps its contexts apart, so that the daemon that writes knobs all
day holds no capability over file permissions.

How the daemon starts
---------------------

On the first entrypoint call, oslo.privsep runs ``helper_command``
(default: ``sudo privsep-helper --config-file <the agent's files>``) with
``--privsep_context iosched.host_agent.privsep.sys_admin_pctxt
--privsep_sock_path <tmp>/privsep.sock``. The helper connects back,
forks, drops to the capabilities above and serves calls. It reads its
configuration files itself, so ``[host_paths] cgroup_root`` in the
privileged process comes from root-owned files, not from the caller.
Typical deployment (the agent as user ``iosched``; privsep-helper linked
into /usr/local/bin for sudo's secure_path). Pin the arguments: with a
wildcard the user could pass its own config file or another context::

    # /etc/sudoers.d/iosched
    iosched ALL = (root) NOPASSWD: /usr/local/bin/privsep-helper \
        --config-file /etc/iosched/host-agent.conf \
        --privsep_context iosched.host_agent.privsep.sys_admin_pctxt \
        --privsep_sock_path *
    iosched ALL = (root) NOPASSWD: /usr/local/bin/privsep-helper \
        --config-file /etc/iosched/host-agent.conf \
        --privsep_context iosched.host_agent.privsep.cgroup_admin_pctxt \
        --privsep_sock_path *

A ``[host_agent_privsep] helper_command`` replaces the whole prefix (only
``--privsep_context`` and ``--privsep_sock_path`` are appended), so it
must carry its own ``--config-file``. rootwrap instead of sudo:
``oslo_privsep.priv_context.init(root_helper=[...])`` in the agent's main,
as nova does. An agent started as root can instead call
``sys_admin_pctxt.start(priv_context.Method.FORK)`` before dropping its
own privileges. Unit tests run entrypoints in-process with
``sys_admin_pctxt.set_client_mode(False)``.
"""

import os
import signal
import threading

from oslo_privsep import capabilities as caps
from oslo_privsep import priv_context

CFG_SECTION = 'host_agent_privsep'
CAPABILITIES = [caps.CAP_SYS_NICE]
CGROUP_CFG_SECTION = 'host_agent_privsep_cgroup'
CGROUP_CAPABILITIES = [caps.CAP_DAC_OVERRIDE]

sys_admin_pctxt = priv_context.PrivContext(
    'iosched.host_agent',
    cfg_section=CFG_SECTION,
    pypath=__name__ + '.sys_admin_pctxt',
    capabilities=CAPABILITIES,
)

cgroup_admin_pctxt = priv_context.PrivContext(
    'iosched.host_agent',
    cfg_section=CGROUP_CFG_SECTION,
    pypath=__name__ + '.cgroup_admin_pctxt',
    capabilities=CGROUP_CAPABILITIES,
)


def ensure_started(conf=None):
    """Start the daemon before the first privileged call.

    oslo.privsep's default start runs ``sudo privsep-helper``. An agent that
    already runs as root (the usual compute-node setup, and this project's
    machines, which have no sudo) forks the daemon instead
    (``Method.FORK``); it still drops to ``CAPABILITIES``. A configured
    ``[host_agent_privsep] helper_command`` always wins.
    """
    from oslo_config import cfg
    conf = conf or cfg.CONF
    _ensure(sys_admin_pctxt, conf, CFG_SECTION)


def ensure_cgroup_started(conf=None):
    """The same for ``cgroup_admin_pctxt``."""
    from oslo_config import cfg
    _ensure(cgroup_admin_pctxt, conf or cfg.CONF, CGROUP_CFG_SECTION)


def _ensure(ctx, conf, section):
    if not ctx.client_mode or ctx.channel is not None:
        return
    if os.geteuid() == 0 and not conf[section].helper_command:
        _start_forked(ctx)


def _start_forked(ctx):
    """``Method.FORK``, made safe for the caller.

    oslo.privsep's forked daemon runs ``Daemon(...).run()`` and then
    ``os._exit(0)``; an exception out of ``run()`` skips the exit and
    unwinds the *child* back into the caller, which then carries on as a
    second copy of the program with the daemon's reduced capabilities
    (seen in CI: a second pytest run of the remaining tests, failing with
    EACCES as root and overwriting the first run's results). The child
    never returns here: it exits, saying why.
    """
    import sys
    import traceback
    parent = os.getpid()
    saved = _daemon_signals()
    try:
        ctx.start(priv_context.Method.FORK)
    except BaseException:
        if os.getpid() != parent:
            traceback.print_exc(file=sys.stderr)
            os._exit(70)
        raise
    finally:
        if os.getpid() == parent:
            for signum, handler in saved.items():
                signal.signal(signum, handler)
    if os.getpid() != parent:      # the daemon's run() returned oddly
        os._exit(0)


# What the forked daemon does with a signal (it inherits the dispositions
# in force at the fork). It must outlive the agent's stop, since the agent
# restores its knobs through it: a terminal's Ctrl-C, Ctrl-\ or hang-up
# (SIGINT, SIGQUIT, SIGHUP to the whole foreground process group) and the
# agent's own reload and report signals (SIGHUP, SIGUSR2: the agent's
# handlers, inherited, would run in the daemon) are ignored; SIGTERM and
# the rest end it as usual. It exits by itself when the agent is gone
# (its socket closes).
DAEMON_IGNORES = ('SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGUSR2')
DAEMON_DEFAULTS = ('SIGTERM', 'SIGUSR1', 'SIGALRM')


def _daemon_signals():
    """Set the dispositions the daemon is forked with; return the
    caller's, to put back after the fork. Only the main thread may set
    them: from another one the daemon inherits the caller's.
    """
    saved = {}
    if threading.current_thread() is not threading.main_thread():
        return saved
    for names, how in ((DAEMON_IGNORES, signal.SIG_IGN),
                       (DAEMON_DEFAULTS, signal.SIG_DFL)):
        for name in names:
            signum = getattr(signal, name)
            saved[signum] = signal.signal(signum, how)
    return saved
