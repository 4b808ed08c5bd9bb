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
"""The cloud's processes: started in their own session with a pidfile and
a log under the state dir (as DevStack's units would run them), probed,
and stopped with SIGTERM, then SIGKILL of the whole process group.

Stopping is systemd's KillMode=mixed (etc/systemd's agent unit): SIGTERM
to the main process, SIGKILL to the rest of the group after it exits.

A pidfile holds ``<pid> <start time>``: a pid reused by another process
after a reboot or crash is not taken for ours.
"""

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request

from iosched.cloud import layout as layout_mod


class ServiceFailed(RuntimeError):
    """A process exited or never answered; the message names its log."""


def _start_time(pid):
    """The process's start time (clock ticks since boot), None when it is
    gone or a zombie: a service whose starter exited is reparented to PID
    1, which in a container may never reap it.
    """
    try:
        with open('/proc/%d/stat' % pid) as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    if len(fields) < 20 or fields[0] in ('Z', 'X'):
        return None
    return fields[19]


def read_pid(pidfile):
    """The pid of a running process this pidfile names, else None."""
    try:
        with open(pidfile) as f:
            pid_s, _, started = f.read().strip().partition(' ')
        pid = int(pid_s)
    except (OSError, ValueError):
        return None
    now = _start_time(pid)
    if now is None or (started and now != started):
        return None
    return pid


def start(layout, name, argv, env=None):
    """Start ``argv`` as service ``name`` unless it already runs; its pid."""
    pidfile = layout.pidfile(name)
    pid = read_pid(pidfile)
    if pid:
        return pid
    os.makedirs(os.path.dirname(pidfile), exist_ok=True)
    os.makedirs(os.path.dirname(layout.log(name)), exist_ok=True)
    full_env = dict(os.environ)
    full_env['PATH'] = '%s:%s' % (os.path.dirname(layout.python),
                                  full_env.get('PATH', '/usr/bin:/bin'))
    full_env.update(env or {})
    with open(layout.log(name), 'ab') as log:
        log.write(('--- %s start: %s\n' % (
            time.strftime('%Y-%m-%d %H:%M:%S'), ' '.join(argv))).encode())
        log.flush()
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=full_env,
                                cwd=layout.state_dir, start_new_session=True)
    with open(pidfile, 'w') as f:
        f.write('%d %s\n' % (proc.pid, _start_time(proc.pid) or ''))
    with open(pidfile[:-len('.pid')] + '.json', 'w') as f:
        json.dump({'argv': list(argv), 'env': env or {}}, f)
    return proc.pid


def restart(layout, name):
    """Stop and start ``name`` with the command it was started with."""
    with open(layout.pidfile(name)[:-len('.pid')] + '.json') as f:
        started = json.load(f)
    stop(layout, name)
    return start(layout, name, started['argv'], started['env'])


def running(layout):
    """{name: pid} of every process of the cloud that runs."""
    rundir = os.path.dirname(layout.pidfile('x'))
    try:
        names = sorted(n[:-4] for n in os.listdir(rundir)
                       if n.endswith('.pid'))
    except FileNotFoundError:
        return {}
    return {n: p for n in names for p in [read_pid(layout.pidfile(n))] if p}


# belongs(argv, cwd, D) := cwd == D (``start`` runs every service there;
#   after ``down`` removed D the link reads "D (deleted)")
#   or some argument (or the value of --option=value) is a ``.conf`` file
#   inside D (a service's --config-file, a Ceph daemon's -c)
def belongs(argv, cwd, state_dir):
    """Whether a process with this command line and working directory
    is one of the cloud's in ``state_dir``.
    """
    root = os.path.normpath(state_dir)
    if cwd is not None:
        if cwd.endswith(' (deleted)'):
            cwd = cwd[:-len(' (deleted)')]
        if os.path.normpath(cwd) == root:
            return True
    for arg in argv:
        if arg.startswith('-') and '=' in arg:
            arg = arg.split('=', 1)[1]
        path = os.path.normpath(arg)
        if path.startswith(root + '/') and path.endswith('.conf'):
            return True
    return False


def _ancestors(proc_root, pid):
    """``pid`` and its ancestors (their parent pids from ``stat``)."""
    out = set()
    while pid > 0 and pid not in out:
        out.add(pid)
        try:
            with open(os.path.join(proc_root, str(pid), 'stat')) as f:
                pid = int(f.read().rsplit(')', 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def strays(state_dir, proc_root='/proc', self_pid=None):
    """{pid: command line} of the processes that ``belongs`` to the cloud
    in ``state_dir``, whatever pidfiles say (``down`` removes them with
    the state dir), except this process and its ancestors.
    """
    mine = _ancestors(proc_root, os.getpid() if self_pid is None
                      else self_pid)
    found = {}
    for entry in os.listdir(proc_root):
        if not entry.isdigit() or int(entry) in mine:
            continue
        base = os.path.join(proc_root, entry)
        try:
            with open(os.path.join(base, 'cmdline'), 'rb') as f:
                argv = [a for a in f.read().decode('utf-8', 'replace')
                        .split('\0') if a]
        except OSError:
            continue
        if not argv:             # a kernel thread or a zombie
            continue
        try:
            cwd = os.readlink(os.path.join(base, 'cwd'))
        except OSError:
            cwd = None
        if belongs(argv, cwd, state_dir):
            found[int(entry)] = ' '.join(argv)[:200]
    return found


def send_signal(layout, name, sig=signal.SIGTERM):
    """Send ``sig`` to the service's main process without waiting."""
    pid = read_pid(layout.pidfile(name))
    if pid:
        _signal_pid(pid, sig)
    return pid


def stop(layout, name, timeout=15.0):
    """SIGTERM the service's main process; when it has exited, or after
    ``timeout``, SIGKILL what is left of its process group.

    True when it was running.
    """
    pidfile = layout.pidfile(name)
    pid = read_pid(pidfile)
    if not pid:
        _unlink(pidfile)
        return False
    # SIGTERM to the main process only, as systemd's KillMode=mixed: the
    # agent restores its knobs through its privsep daemon, which must not
    # get the signal too; what is left of the group is killed after.
    _signal_pid(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _start_time(pid) is not None:
        _reap(pid)
        time.sleep(0.2)
    _signal_group(pid, signal.SIGKILL)
    time.sleep(0.2)
    _reap(pid)
    _unlink(pidfile)
    return True


def _signal_pid(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _signal_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass
    except PermissionError:
        os.kill(pid, sig)


def _reap(pid):
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def log_tail(layout, name, lines=15):
    try:
        with open(layout.log(name), errors='replace') as f:
            return ''.join(f.readlines()[-lines:])
    except OSError:
        return '(no log)'


def _failed(layout, name, what):
    return ServiceFailed('%s %s; last lines of %s:\n%s' % (
        name, what, layout.log(name), log_tail(layout, name)))


def wait_http(layout, name, url, timeout=120.0):
    """Wait until ``url`` answers any HTTP status; raise if ``name`` dies."""
    deadline = time.monotonic() + timeout
    while True:
        if not read_pid(layout.pidfile(name)):
            raise _failed(layout, name, 'exited')
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return
        except urllib.error.HTTPError:
            return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise _failed(layout, name, 'did not answer %s within %ds'
                          % (url, timeout))
        time.sleep(0.5)


def fatal_line(layout, name, marker):
    """The first line with ``marker`` since the service's last start (a
    service that logs its fatal error and hangs instead of exiting, as
    nova-compute does when its init_host fails), else None.
    """
    try:
        with open(layout.log(name), errors='replace') as f:
            lines = f.read().rsplit('\n--- ', 1)[-1].splitlines()
    except OSError:
        return None
    return next((ln for ln in lines if marker in ln), None)


def wait_until(layout, name, probe, what, timeout=120.0, interval=1.0,
               fatal=None):
    """Wait until ``probe()`` is true; raise if ``name`` dies, logs the
    ``fatal`` marker or times out.
    """
    deadline = time.monotonic() + timeout
    while not probe():
        if name and not read_pid(layout.pidfile(name)):
            raise _failed(layout, name, 'exited')
        if name and fatal and fatal_line(layout, name, fatal):
            raise _failed(layout, name, 'failed: %s' % fatal_line(
                layout, name, fatal).strip())
        if time.monotonic() > deadline:
            raise _failed(layout, name, 'did not %s within %ds'
                          % (what, timeout))
        time.sleep(interval)


def run(argv, layout=None, check=True, env=None, log_name=None, **kw):
    """A setup command (db sync, bootstrap): output to the log, errors raised
    with its tail.
    """
    full_env = dict(os.environ)
    if layout is not None:
        full_env['PATH'] = '%s:%s' % (os.path.dirname(layout.python),
                                      full_env.get('PATH', '/usr/bin:/bin'))
    full_env.update(env or {})
    res = subprocess.run(argv, capture_output=True, text=True, env=full_env,
                         **kw)
    if layout is not None and log_name:
        os.makedirs(os.path.dirname(layout.log(log_name)), exist_ok=True)
        with open(layout.log(log_name), 'a') as f:
            f.write('$ %s\n%s%s' % (' '.join(argv), res.stdout, res.stderr))
    if check and res.returncode:
        raise ServiceFailed('%s exited %d:\n%s' % (
            ' '.join(argv), res.returncode,
            (res.stderr or res.stdout)[-3000:]))
    return res


def main(argv=None):
    """``python -m iosched.cloud.procs STATE_DIR start|stop|restart NAME
    [COMMAND]``: the DevStack functions' run_process, stop_process and
    systemctl restart (iosched/cloud/devstack_functions.sh).
    """
    import shlex
    import sys
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 3 or args[1] not in ('start', 'stop', 'restart'):
        sys.exit('usage: python -m iosched.cloud.procs STATE_DIR '
                 'start|stop|restart NAME [COMMAND]')
    state_dir, action, name = args[:3]
    layout = layout_mod.load(state_dir)
    name = layout_mod.DEVSTACK_NAMES.get(name, name)
    if action == 'start':
        if len(args) != 4:
            sys.exit('start needs NAME and one COMMAND string')
        print('%s: pid %d' % (name, start(layout, name, shlex.split(args[3]))))
    elif action == 'stop':
        stop(layout, name, timeout=300.0)
    else:
        print('%s: pid %d' % (name, restart(layout, name)))


if __name__ == '__main__':
    main()
