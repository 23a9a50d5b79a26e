// The path panel of the experiments demo ("go run ./experiments demo"),
// which serves the viewer's page through a proxy, adds this script (and
// pathctl.css) to it, and answers GET api/path with the emulated path's
// rate and RTT. It lets a presenter change the path while the streams
// play; if api/path does not answer, the panel stays hidden.
'use strict';

(function () {
  const PRESETS = [100e3, 500e3, 2e6, 10e6]; // bits per second

  function fmtRate(bps) {
    return bps >= 1e6 ? (bps / 1e6) + ' Mb/s' : (bps / 1e3) + ' kb/s';
  }

  function el(tag, text) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  let state = null;

  function show(path) {
    setTextOf('now', 'path ' + fmtRate(path.rate_bps) + ', RTT ' + path.rtt_ms + ' ms, one bottleneck shared by every stream');
    document.getElementById('path-rate').value = Math.round(path.rate_bps / 1000);
    document.getElementById('path-rtt').value = path.rtt_ms;
  }

  function setTextOf(id, text) {
    const e = document.getElementById('path-' + id);
    if (e) e.textContent = text;
  }

  async function post(body) {
    try {
      const res = await fetch('api/path', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      });
      if (!res.ok) {
        setTextOf('now', 'path: ' + (await res.text()).trim());
        return;
      }
      show(await res.json());
    } catch (e) {
      setTextOf('now', 'path: ' + e.message);
    }
  }

  function build(path) {
    const form = el('form');
    form.id = 'path';
    form.className = 'path';
    const now = el('span');
    now.id = 'path-now';
    const rate = el('input');
    rate.id = 'path-rate';
    rate.type = 'number';
    rate.min = '10';
    rate.title = 'bottleneck rate in kb/s';
    const rtt = el('input');
    rtt.id = 'path-rtt';
    rtt.type = 'number';
    rtt.min = '1';
    rtt.title = 'round-trip time in ms';
    const apply = el('button', 'set');
    apply.type = 'submit';
    form.append(now, rate, el('span', 'kb/s'), rtt, el('span', 'ms'), apply);
    for (const bps of PRESETS) {
      const b = el('button', fmtRate(bps));
      b.type = 'button';
      b.onclick = () => post({ rate_bps: bps });
      form.append(b);
    }
    const reset = el('button', 'reset');
    reset.type = 'button';
    reset.onclick = () => post({ reset: true });
    form.append(reset);
    form.onsubmit = (ev) => {
      ev.preventDefault();
      post({ rate_bps: Math.round(Number(rate.value) * 1000), rtt_ms: Number(rtt.value) });
    };
    document.querySelector('header.top').append(form);
    show(path);
  }

  async function load() {
    try {
      const res = await fetch('api/path', { cache: 'no-store' });
      if (!res.ok) return;
      state = await res.json();
    } catch (e) {
      return;
    }
    build(state);
  }

  load();
})();
