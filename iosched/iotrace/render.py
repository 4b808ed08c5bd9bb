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
"""The pictures (matplotlib, PNG) and one self-contained HTML page.

``render(trace, outdir)`` writes ``time.png`` (cumulative bytes per VM),
``share.png`` (per-layer share, stacked, over time), ``integrated.png``
(per VM: Request-layer share, vCPU state spans, long queue waits and
findings on one time axis), ``waits.png`` (queue wait of every request
against the time it was queued) and ``report.html``: the four images
inlined as base64, inline CSS, the fairness and findings tables, no
external URL (a Content-Security-Policy forbids any), and a small inline
script that writes into the page whether every image decoded
(``#selfcheck``), for a headless-browser check. How to read them:
docs/iotrace.md.
"""

import base64
import contextlib
import html
import io
import os

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

from iosched.iotrace import analyze  # noqa: E402
from iosched.iotrace import fmt  # noqa: E402

PICTURES = ('time', 'share', 'integrated', 'waits')
STATE_COLORS = {'running': '#4daf4a', 'runnable': '#ffbf00',
                'idle': '#cccccc', 'inactive': '#e41a1c'}
CAPTIONS = {
    'time': 'Time view: bytes each VM has got back (Response layer, else '
            'Completion) over time. A flat stretch is a VM that got '
            'nothing; dashed lines are finish times.',
    'share': 'Share view: each VM\'s share of the bytes reaching each '
             'layer (moving average). Equal bands = fair; a band that '
             'narrows at Dispatch before it narrows at Request is a '
             'scheduler decision, not the guest.',
    'integrated': 'Integrated view, one lane per VM: Request-layer share '
                  '(blue), vCPU state underneath (red = inactive, grey = '
                  'idle, green = running, yellow = runnable), long queue '
                  'waits of async writes as red bars at the top, '
                  'detector findings shaded orange.',
    'waits': 'Queue wait (Dispatch - Queuing) of every request against '
             'when it was queued; x = async write, dot = sync. Points '
             'high above the rest are requests the scheduler held back.',
}


def _colors(vms):
    cmap = plt.get_cmap('tab10')
    return {vm: cmap(i % 10) for i, vm in enumerate(vms)}


def _label(vm):
    """A VM name as matplotlib text: '$' is not the start of math."""
    return vm.replace('$', r'\$')


def _fig_bytes(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format='png', dpi=90)
    plt.close(fig)
    return buf.getvalue()


def time_view(trace, fair):
    layer = fair['layer']
    cum = analyze.cumulative(trace, layer)
    col = _colors(trace.vms)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for vm in trace.vms:
        ts, cb = cum[vm]
        ax.step(ts, [b / 1e6 for b in cb], where='post', color=col[vm],
                label=_label(vm))
        if vm in fair['finish']:
            ax.axvline(fair['finish'][vm], color=col[vm], ls='--', lw=0.8)
    ax.set_xlabel('time (s)')
    ax.set_ylabel('MB at %s' % fmt.LAYER_NAMES[layer])
    ax.set_title('Time view: cumulative bytes per VM')
    ax.legend(loc='upper left', fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _fig_bytes(fig)


def share_view(trace, times, sh):
    layers = [la for la in fmt.LAYERS
              if any(v is not None for vm in trace.vms for v in sh[la][vm])]
    vms = trace.vms
    col = _colors(vms)
    fig, axes = plt.subplots(len(layers) or 1, 1, sharex=True,
                             figsize=(9, 1.5 + 1.3 * max(1, len(layers))),
                             squeeze=False)
    for ax, layer in zip(axes[:, 0], layers):
        ys = [[(v if v is not None else 0.0) * 100 for v in sh[layer][vm]]
              for vm in vms]
        ax.stackplot(times, ys, colors=[col[vm] for vm in vms],
                     labels=[_label(vm) for vm in vms], step='pre')
        for k in range(1, len(vms)):
            ax.axhline(100.0 * k / len(vms), color='k', lw=0.4, ls=':')
        ax.set_ylim(0, 100)
        ax.set_ylabel('%s\n%%' % fmt.LAYER_NAMES[layer], fontsize=8)
    axes[0, 0].set_title('Share view: per-layer share of bytes, stacked '
                         '(dotted: equal shares)')
    axes[0, 0].legend(loc='upper right', fontsize=7, ncol=len(vms))
    axes[-1, 0].set_xlabel('time (s)')
    fig.tight_layout()
    return _fig_bytes(fig)


def integrated_view(trace, times, sh, long_waits, findings):
    vms = trace.vms
    fig, axes = plt.subplots(len(vms) or 1, 1, sharex=True,
                             figsize=(9, 0.8 + 1.25 * max(1, len(vms))),
                             squeeze=False)
    fair = 1.0 / max(1, len(vms))
    req_layer = 'req' if any(e.layer == 'req' for e in trace.io) else 'que'
    for ax, vm in zip(axes[:, 0], vms):
        ys = [v if v is not None else 0.0 for v in sh[req_layer][vm]]
        ax.fill_between(times, ys, step='pre', color='#377eb8', alpha=0.45,
                        lw=0)
        ax.axhline(fair, color='#377eb8', lw=0.6, ls=':')
        for state, c in STATE_COLORS.items():
            spans = [(s.start, s.end - s.start) for s in trace.vcpu
                     if s.vm == vm and s.state == state]
            if spans:
                ax.broken_barh(spans, (-0.32, 0.22), color=c, lw=0)
        for w in long_waits:
            if w.vm == vm:
                ax.plot([w.start, w.start + w.wait], [1.12, 1.12],
                        color='#e41a1c', lw=3, solid_capstyle='butt')
        for f in findings:
            if f['vm'] == vm:
                ax.axvspan(f['queued'], f['dispatched'], color='#ff7f00',
                           alpha=0.18, lw=0)
        ax.set_ylim(-0.38, 1.25)
        ax.set_yticks([0, 0.5, 1.0])
        ax.set_ylabel(_label(vm), rotation=0, ha='right', va='center')
    axes[0, 0].set_title('Integrated view: %s share (blue), vCPU state '
                         '(bar), long queue waits (red), findings (orange)'
                         % fmt.LAYER_NAMES[req_layer], fontsize=9)
    axes[-1, 0].set_xlabel('time (s)')
    fig.tight_layout()
    return _fig_bytes(fig)


def waits_view(trace, qwaits, min_wait):
    col = _colors(trace.vms)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for vm in trace.vms:
        for sync, marker in ((True, '.'), (False, 'x')):
            pts = [(w.start, max(w.wait, 1e-6)) for w in qwaits
                   if w.vm == vm and w.sync == sync]
            if pts:
                ax.scatter([p[0] for p in pts], [p[1] for p in pts],
                           s=4 if sync else 30, marker=marker,
                           color=col[vm], rasterized=True,
                           label='%s %s' % (_label(vm),
                                            'sync' if sync else 'async'))
    ax.axhline(min_wait, color='k', lw=0.6, ls='--')
    ax.set_yscale('log')
    ax.set_xlabel('queued at (s)')
    ax.set_ylabel('queue wait (s)')
    ax.set_title('Queue waits (Dispatch - Queuing); dashed: the '
                 "detector's threshold")
    ax.legend(loc='upper left', fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return _fig_bytes(fig)


def pictures(trace, window=1.0, step=0.1, min_wait=0.5, findings=None):
    """{name: PNG bytes} of the four pictures."""
    times, sh = analyze.shares(trace, window=window, step=step)
    reqs = analyze.requests(trace)
    qw = analyze.waits(reqs)
    fair = analyze.fairness(trace)
    if findings is None:
        findings = analyze.detect(trace, min_wait=min_wait, window=window)
    long_waits = [w for w in qw if not w.sync and w.wait >= min_wait]
    return {
        'time': time_view(trace, fair),
        'share': share_view(trace, times, sh),
        'integrated': integrated_view(trace, times, sh, long_waits,
                                      findings),
        'waits': waits_view(trace, qw, min_wait),
    }


CSS = """
body{font-family:sans-serif;margin:1.5em;max-width:1000px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}
td,th{border:1px solid #bbb;padding:.2em .5em;font-size:90%;text-align:left}
th{background:#eee} img{max-width:100%;border:1px solid #ddd}
figure{margin:1em 0} figcaption{font-size:90%;color:#444}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:85%}
.none{color:#2a7a2a}
"""

SELFCHECK = """
(function(){
  var errors = 0;
  window.addEventListener('error', function(){ errors++; }, true);
  window.addEventListener('load', function(){
    var imgs = document.images, ok = 0;
    for (var i = 0; i < imgs.length; i++)
      if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
    var d = document.getElementById('selfcheck');
    d.setAttribute('data-images', imgs.length);
    d.setAttribute('data-decoded', ok);
    d.setAttribute('data-errors', errors);
    d.textContent = ok + ' of ' + imgs.length + ' images decoded';
  });
})();
"""

CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'")


def _e(x):
    return html.escape(str(x))


def _f(x, nd=3):
    return 'n/a' if x is None else ('%.*f' % (nd, x))


def page(trace, pngs, summary):
    """The HTML text (self-contained)."""
    hdr = trace.header
    fair = summary['fairness']
    out = ['<!DOCTYPE html><html><head><meta charset="utf-8">',
           '<meta http-equiv="Content-Security-Policy" content="%s">' % CSP,
           '<title>iosched-iotrace report</title><style>%s</style>' % CSS,
           '</head><body>',
           '<h1>iosched-iotrace: five-layer I/O report</h1>',
           '<p>Source: <b>%s</b>; %d VMs; %d requests; layers present: %s.'
           '</p>' % (_e(hdr.get('source')), len(trace.vms),
                     summary['requests'], _e(', '.join(
                         fmt.LAYER_NAMES[x] for x in summary['layers'])))]
    srcs = hdr.get('sources') or {}
    if srcs:
        out.append('<h2>Where each layer comes from</h2><table>'
                   '<tr><th>layer</th><th>source</th></tr>')
        for key in list(fmt.LAYERS) + ['vcpu']:
            if key in srcs:
                out.append('<tr><td>%s</td><td>%s</td></tr>' % (
                    _e(fmt.LAYER_NAMES.get(key, 'vCPU state')),
                    _e(srcs[key])))
        out.append('</table>')
    out.append('<h2>Findings</h2>')
    if summary['findings']:
        out.append('<table><tr><th>VM</th><th>from (s)</th><th>to (s)</th>'
                   '<th>longest async wait (s)</th><th>others\' sync '
                   'dispatched</th><th>vCPU inactive (s)</th><th>Request '
                   'share before &rarr; during</th></tr>')
        for f in summary['findings']:
            out.append('<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td>'
                       '<td>%d (%s)</td><td>%s</td><td>%s &rarr; %s</td>'
                       '</tr>' % (
                           _e(f['vm']), _f(f['queued']),
                           _f(f['dispatched']),
                           _f(max(w['wait'] for w in f['writes'])),
                           f['others']['count'],
                           _e(', '.join(f['others']['vms'])),
                           _e('; '.join('%.3f-%.3f' % s
                                        for s in f['inactive'])),
                           analyze._as_percent(f['request_share_before']),
                           analyze._as_percent(f['request_share_during'])))
        out.append('</table><pre>%s</pre>' % _e('\n\n'.join(
            analyze.describe(f) for f in summary['findings'])))
    else:
        out.append('<p class="none">No I/O priority inversion found.</p>')
    out.append('<h2>Fairness</h2><table><tr><th>VM</th><th>finish (s)'
               '</th><th>MB</th></tr>')
    for vm in trace.vms:
        out.append('<tr><td>%s</td><td>%s</td><td>%s</td></tr>' % (
            _e(vm), _f(fair['finish'].get(vm)),
            _f(fair['bytes'].get(vm, 0) / 1e6, 1)))
    out.append('</table><p>Finish-time SD %s s; slowest %s / fastest %s = '
               '%s; Jain\'s index over throughput %s.</p>' % (
                   _f(fair['sd']), _e(fair['slowest']),
                   _e(fair['fastest']), _f(fair['ratio']),
                   _f(fair['jain'], 4)))
    for name in PICTURES:
        if name in pngs:
            out.append('<figure><img alt="%s" src="data:image/png;base64,'
                       '%s"><figcaption>%s</figcaption></figure>' % (
                           name, base64.b64encode(pngs[name]).decode(),
                           _e(CAPTIONS[name])))
    out.append('<p id="selfcheck">(script did not run)</p>')
    out.append('<script>%s</script></body></html>' % SELFCHECK)
    return '\n'.join(out)


def render(trace, outdir, window=1.0, step=0.1, min_wait=0.5,
           summary=None):
    """Write the PNGs and report.html into ``outdir``; returns the paths.

    Everything is drawn before the first file is written; a write that
    fails removes what this call wrote (and ``outdir`` if it made it).
    """
    if summary is None:
        summary = analyze.summary(trace, window=window, step=step,
                                  min_wait=min_wait)
    pngs = pictures(trace, window, step, min_wait, summary['findings'])
    files = [(name + '.png', data) for name, data in pngs.items()]
    files.append(('report.html', page(trace, pngs, summary).encode('utf-8')))
    made = not os.path.isdir(outdir)
    paths = []
    try:
        os.makedirs(outdir, exist_ok=True)
        for name, data in files:
            p = os.path.join(outdir, name)
            paths.append(p)
            with open(p, 'wb') as fh:
                fh.write(data)
    except OSError:
        for p in paths:
            with contextlib.suppress(OSError):
                os.unlink(p)
        if made:
            with contextlib.suppress(OSError):
                os.removedirs(outdir)
        raise
    return paths
