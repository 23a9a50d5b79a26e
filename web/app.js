// The viewer page: receives VP8 frames over a WebSocket, decodes them with
// WebCodecs, draws them to canvases, reads the capture time back from the
// pixels and reports per-frame results to the viewer. Each stream can also
// play through the browser's own WebRTC player (WHEP, a video element):
// its frames' capture times are read the same way, from the pixels of each
// frame the browser presents (requestVideoFrameCallback), and reported as
// a separate ("native") series.
//
// Times sent to the viewer are in the viewer's clock, in ms since the Unix
// epoch: the page estimates its offset to the viewer with GET api/time
// (NTP-style, the probe with the smallest round trip wins).
'use strict';

(function () {
  const Stamp = window.ReplenishStamp;

  const params = new URLSearchParams(location.search);
  const token = params.get('token') || '';
  const query = token ? '?token=' + encodeURIComponent(token) : '';
  // WHEP requests carry the token as a bearer token.
  const authHeaders = () => (token ? { Authorization: 'Bearer ' + token } : {});

  const REPORT_EVERY_MS = 250;
  const STATS_EVERY_MS = 1000;
  const CLOCK_EVERY_MS = 10000;
  const CLOCK_PROBES = 5;
  const CHART_SPAN_MS = 30000;
  const STALL_MS = 2000;
  const MAX_DECODE_QUEUE = 3;
  const KEY_REQUEST_MS = 500;
  const MAX_PENDING = 64;
  const RECENT = 60;
  const MAX_REPORT = 500;
  const NO_STAMP_AFTER = 30; // frames displayed without a readable stamp
  const GATHER_MS = 3000; // longest wait for the native player's ICE candidates

  const PARTS = [
    ['wait', 'wait'],
    ['encode', 'encode'],
    ['source_delay', 'source delay'],
    ['network', 'network'],
    ['delivery', 'delivery'],
    ['decode', 'decode'],
    ['draw', 'draw'],
  ];

  // The page's own counters, for people with a console and for tests.
  const R = (window.replenish = {
    connected: false,
    clientId: null,
    clock: { offsetMs: null, rttMs: null, synced: false },
    streams: {},
    reportsSent: 0,
    nativeReportsSent: 0,
    errors: [],
    supported: typeof window.VideoDecoder === 'function',
  });
  // The frame header parser, for tests (JSON.stringify(R) leaves it out).
  Object.defineProperty(R, 'parseFrame', { value: (buf) => parseFrame(buf) });

  function note(msg) {
    R.errors.push(String(msg));
    if (R.errors.length > 50) R.errors.shift();
    const el = document.getElementById('notice');
    if (el) el.textContent = String(msg);
  }

  // Clocks. localNow is this machine's clock in ms since the epoch;
  // viewerNow is the viewer's, as estimated.
  let clockOffsetMs = 0;
  const localNow = () => performance.timeOrigin + performance.now();
  const viewerNow = () => localNow() + clockOffsetMs;

  async function syncClock() {
    let best = null;
    for (let i = 0; i < CLOCK_PROBES; i++) {
      const t0 = localNow();
      const res = await fetch('api/time' + query, { cache: 'no-store' });
      if (!res.ok) throw new Error('api/time: ' + res.status);
      const body = await res.json();
      const t1 = localNow();
      const rtt = t1 - t0;
      const offset = body.now_us / 1000 - (t0 + t1) / 2;
      if (!best || rtt < best.rtt) best = { rtt, offset };
    }
    clockOffsetMs = best.offset;
    R.clock = { offsetMs: best.offset, rttMs: best.rtt, synced: true };
    setText(document.getElementById('clock'),
      'page clock ' + fmtSigned(best.offset) + ' ms from viewer (rtt ' + best.rtt.toFixed(1) + ' ms)');
  }

  // Small helpers.
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function setText(e, text) {
    if (e && e.textContent !== text) e.textContent = text;
  }
  function fmt(v, digits = 1) {
    return v === null || v === undefined || !isFinite(v) ? '–' : v.toFixed(digits);
  }
  function fmtSigned(v) {
    return (v >= 0 ? '+' : '') + v.toFixed(1);
  }
  function fmtRate(bps) {
    if (bps === null || bps === undefined) return '–';
    if (bps >= 1e6) return (bps / 1e6).toFixed(2) + ' Mb/s';
    if (bps >= 1e3) return (bps / 1e3).toFixed(0) + ' kb/s';
    return bps + ' b/s';
  }
  function median(values) {
    if (!values.length) return null;
    const s = values.slice().sort((a, b) => a - b);
    return s[Math.ceil(s.length / 2) - 1];
  }
  function pushBounded(arr, v, n) {
    arr.push(v);
    if (arr.length > n) arr.shift();
  }

  // Frame header: see the comment on the header layout in package viewer.
  const HEADER_VERSION = 1;
  const HEADER_MIN = 48;
  function parseFrame(buf) {
    if (buf.byteLength < HEADER_MIN) return null;
    const dv = new DataView(buf);
    if (dv.getUint8(0) !== HEADER_VERSION) return null;
    const flags = dv.getUint8(1);
    const hlen = dv.getUint16(2);
    if (hlen < HEADER_MIN || hlen > buf.byteLength) return null;
    const layered = (flags & 4) !== 0;
    return {
      key: (flags & 1) !== 0,
      offsetKnown: (flags & 2) !== 0,
      layered, // the stream has temporal layers: tid and layerSync are the frame's
      tid: layered ? (flags >> 4) & 3 : 0,
      layerSync: layered && (flags & 8) !== 0,
      // Catch-up: sent from the stream's latest keyframe on when this page
      // joined; decode it whatever the decoder's queue.
      catchUp: (flags & 64) !== 0,
      stream: dv.getUint32(4),
      frame: dv.getUint32(8),
      rtpTimestamp: dv.getUint32(12),
      width: dv.getUint16(16),
      height: dv.getUint16(18),
      captureMs: Number(dv.getBigInt64(24)) / 1000,
      receivedMs: Number(dv.getBigInt64(32)) / 1000,
      offsetMs: Number(dv.getBigInt64(40)) / 1000,
      data: new Uint8Array(buf, hlen),
    };
  }

  let socket = null;
  const views = new Map(); // stream id -> StreamView
  let pendingReports = [];
  let pendingNative = [];

  // gathered resolves once pc has gathered its ICE candidates (the viewer
  // takes no trickled ones), or after GATHER_MS with what it has.
  function gathered(pc) {
    if (pc.iceGatheringState === 'complete') return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        if (pc.iceGatheringState === 'complete') resolve();
      };
      pc.addEventListener('icegatheringstatechange', done);
      setTimeout(resolve, GATHER_MS);
    });
  }

  function send(obj) {
    if (socket && socket.readyState === WebSocket.OPEN) {
      socket.send(JSON.stringify(obj));
    }
  }

  // StreamView is one stream's panel, decoder and counters.
  class StreamView {
    constructor(info) {
      this.id = info.id;
      this.info = info;
      this.counters = {
        name: info.name,
        transport: '',
        mode: '',
        framesReceived: 0,
        framesDecoded: 0,
        framesDisplayed: 0,
        framesSkipped: 0,
        misreads: 0,
        stampMismatches: 0,
        keyRequests: 0,
        decoderErrors: 0,
        // Frames displayed by temporal layer (TID 0 to 3); keyframes and
        // the frames of a stream without layers count in 0.
        displayedByLayer: [0, 0, 0, 0],
        catchUp: 0,
        lastG2G: null,
        width: 0,
        height: 0,
        noStamp: false,
        // The native player (WHEP), while it is on.
        native: {
          on: false, connected: false, framesDisplayed: 0, misreads: 0,
          lastG2G: null, width: 0, height: 0, noStamp: false, error: '',
        },
      };
      R.streams[this.id] = this.counters;
      this.waitKey = true;
      this.lastKeyRequest = -Infinity;
      this.lastFrameAt = 0; // local clock
      this.pending = new Map(); // chunk timestamp -> frame info
      this.g2g = []; // [viewer ms, g2g ms] over the chart span
      this.nativeG2G = []; // the same, of the native player
      this.recent = { g2g: [], delivery: [], decode: [], draw: [], nativeG2G: [] };
      this.reads = []; // recent stamp reads: true when the stamp read
      this.nativeReads = [];
      this.lastOffsetMs = 0; // the sender's clock offset, from the last frame
      this.native = null; // the native player while it is on
      this.serverStats = null;
      this.clientStats = null;
      this.decoder = null;
      this.build();
      this.update(info);
    }

    build() {
      const p = (this.panel = el('section', 'panel'));
      const head = el('header');
      const title = el('span', 'title');
      this.nameEl = el('span', 'name');
      // The transport the viewer received the stream over, and the
      // sender's buffer policy as it states it.
      this.transportEl = el('span', 'tag transport');
      this.modeEl = el('span', 'tag mode');
      title.append(this.nameEl, this.transportEl, this.modeEl);
      this.stateEl = el('span', 'state');
      // The native player's switch: off by default.
      this.nativeBtn = el('button', 'toggle native-toggle', 'native player');
      this.nativeBtn.title = "Play the stream beside this one through the browser's own WebRTC player (WHEP)";
      this.nativeBtn.setAttribute('aria-pressed', 'false');
      this.nativeBtn.onclick = () => this.setNative(!this.native);
      const right = el('span', 'right');
      right.append(this.nativeBtn, this.stateEl);
      head.append(title, right);
      this.views = el('div', 'views');
      this.canvas = el('canvas', 'video');
      this.canvas.width = 320;
      this.canvas.height = 180;
      this.ctx = this.canvas.getContext('2d', { willReadFrequently: true, alpha: false });
      this.views.append(this.canvas);
      const big = el('div', 'g2g');
      this.bigEl = el('span', 'big', '–');
      this.nativeBigEl = el('span', 'big native', '–');
      this.nativeUnitEl = el('span', 'unit', 'ms native player');
      this.nativeBigEl.hidden = this.nativeUnitEl.hidden = true;
      big.append(this.bigEl, el('span', 'unit', 'ms glass-to-glass'), this.nativeBigEl, this.nativeUnitEl);
      this.noteEl = el('div', 'note');
      this.chart = el('canvas', 'chart');
      this.chart.width = 480;
      this.chart.height = 120;
      const facts = el('dl', 'facts');
      this.facts = {};
      for (const [k, label] of [
        ['fps', 'fps'], ['bitrate', 'bitrate'], ['resolution', 'resolution'],
        ['offset', 'clock offset'], ['dropped', 'dropped'], ['misreads', 'misreads'],
        ['layers', 'TL0 · TL1 · TL2 %'],
      ]) {
        const dt = el('dt', '', label);
        const dd = el('dd', '', '–');
        this.facts[k] = dd;
        facts.append(dt, dd);
      }
      this.bar = el('div', 'bar');
      this.barParts = {};
      const table = el('table', 'parts');
      const row1 = el('tr');
      const row2 = el('tr');
      this.partEls = {};
      PARTS.forEach(([k, label], i) => {
        const seg = el('span', 'seg p' + i);
        seg.title = label;
        this.bar.append(seg);
        this.barParts[k] = seg;
        const th = el('th', 'p' + i, label);
        const td = el('td', '', '–');
        row1.append(th);
        row2.append(td);
        this.partEls[k] = td;
      });
      table.append(row1, row2);
      p.append(head, this.views, big, this.noteEl, this.chart, facts, this.bar, table);
      document.getElementById('streams').append(p);
    }

    update(info) {
      this.info = info;
      this.counters.name = info.name;
      this.counters.transport = info.transport || '';
      this.counters.mode = info.mode || '';
      setText(this.nameEl, info.name + ' #' + info.id);
      setText(this.transportEl, this.counters.transport);
      setText(this.modeEl, this.counters.mode);
      this.transportEl.hidden = !this.counters.transport;
      this.modeEl.hidden = !this.counters.mode;
    }

    remove() {
      this.setNative(false);
      this.closeDecoder();
      this.panel.remove();
      delete R.streams[this.id];
    }

    closeDecoder() {
      if (this.decoder && this.decoder.state !== 'closed') {
        try { this.decoder.close(); } catch (e) { /* already closed */ }
      }
      this.decoder = null;
      this.pending.clear();
    }

    ensureDecoder() {
      if (this.decoder && this.decoder.state !== 'closed') return true;
      if (!R.supported) return false;
      this.decoder = new VideoDecoder({
        output: (frame) => this.onOutput(frame),
        error: (e) => {
          this.counters.decoderErrors++;
          note('stream ' + this.id + ': decoder error: ' + e.message);
          this.decoder = null;
          this.pending.clear();
          this.resync();
        },
      });
      this.decoder.configure({ codec: 'vp8', optimizeForLatency: true });
      return true;
    }

    // resync drops delta frames until the next keyframe and asks for one.
    resync() {
      this.waitKey = true;
      this.requestKeyframe();
    }

    requestKeyframe() {
      const now = localNow();
      if (now - this.lastKeyRequest < KEY_REQUEST_MS) return;
      this.lastKeyRequest = now;
      this.counters.keyRequests++;
      send({ type: 'keyframe', stream: this.id });
    }

    onFrame(f, arrivedMs) {
      this.counters.framesReceived++;
      this.lastFrameAt = localNow();
      this.layered = f.layered;
      this.lastOffsetMs = f.offsetMs; // for the native player too
      if (!this.ensureDecoder()) return;
      if (f.catchUp) this.counters.catchUp++;
      if (!f.key && (this.waitKey || (!f.catchUp && this.decoder.decodeQueueSize > MAX_DECODE_QUEUE))) {
        this.counters.framesSkipped++;
        this.resync();
        return;
      }
      this.waitKey = false;
      if (this.pending.size >= MAX_PENDING) {
        // Outputs that never came: forget the oldest.
        this.pending.delete(this.pending.keys().next().value);
      }
      this.pending.set(f.frame, {
        frame: f.frame,
        captureMs: f.captureMs,
        offsetMs: f.offsetMs,
        receivedMs: f.receivedMs,
        arrivedMs,
        submitLocal: localNow(), // durations on this machine's clock: the offset may move meanwhile
        tid: f.layered ? f.tid : null,
      });
      try {
        this.decoder.decode(new EncodedVideoChunk({
          type: f.key ? 'key' : 'delta',
          timestamp: f.frame,
          data: f.data,
        }));
      } catch (e) {
        this.counters.decoderErrors++;
        note('stream ' + this.id + ': decode: ' + e.message);
        this.closeDecoder();
        this.resync();
      }
    }

    onOutput(frame) {
      const outLocal = localNow();
      const info = this.pending.get(frame.timestamp);
      this.pending.delete(frame.timestamp);
      const w = frame.displayWidth;
      const h = frame.displayHeight;
      if (this.canvas.width !== w || this.canvas.height !== h) {
        this.canvas.width = w;
        this.canvas.height = h;
      }
      this.ctx.drawImage(frame, 0, 0, w, h);
      frame.close();
      const band = Math.min(h, Stamp.bandHeight(w));
      const img = band > 0 ? this.ctx.getImageData(0, 0, w, band) : null;
      const drawnLocal = localNow();
      const drawnMs = drawnLocal + clockOffsetMs;
      this.counters.framesDecoded++;
      this.counters.width = w;
      this.counters.height = h;
      if (!info) return;
      this.counters.framesDisplayed++;
      const offsetMs = info.offsetMs;
      const captureMs = img ? Stamp.read(img.data, w, w, drawnMs - offsetMs) : null;
      const report = {
        stream: this.id,
        frame: info.frame,
        ok: captureMs !== null,
        arrived_ms: info.arrivedMs,
        display_ms: drawnMs,
        decode_ms: Math.max(0, outLocal - info.submitLocal),
        draw_ms: Math.max(0, drawnLocal - outLocal),
      };
      if (info.tid !== null) report.tid = info.tid;
      this.counters.displayedByLayer[info.tid || 0]++;
      pushBounded(this.recent.delivery, info.arrivedMs - info.receivedMs, RECENT);
      pushBounded(this.recent.decode, report.decode_ms, RECENT);
      pushBounded(this.recent.draw, report.draw_ms, RECENT);
      pushBounded(this.reads, captureMs !== null, NO_STAMP_AFTER);
      if (captureMs === null) {
        this.counters.misreads++;
      } else {
        report.capture_ms = captureMs;
        if (info.captureMs > 0 && Math.abs(info.captureMs - captureMs) > 1.5) {
          // The stamp passed its check but disagrees with the RTP
          // capture time: count it, for whoever is debugging the source.
          this.counters.stampMismatches++;
        }
        const g2g = drawnMs - (captureMs + offsetMs);
        this.counters.lastG2G = g2g;
        pushBounded(this.recent.g2g, g2g, 15);
        this.g2g.push([drawnMs, g2g]);
      }
      if (pendingReports.length < MAX_REPORT) pendingReports.push(report);
    }

    // setNative turns the native player on or off.
    setNative(on) {
      if (on && !this.native) {
        this.startNative().catch((e) => this.nativeFailed('native player: ' + e.message));
      } else if (!on && this.native) {
        this.stopNative();
      }
    }

    // startNative plays the stream through the browser's WebRTC stack:
    // a receive-only offer with every ICE candidate, POSTed to the
    // viewer's WHEP endpoint, and the answer.
    async startNative() {
      const video = el('video', 'video native');
      video.muted = true;
      video.autoplay = true;
      video.playsInline = true;
      const canvas = document.createElement('canvas');
      const pc = new RTCPeerConnection();
      const nat = (this.native = { pc, video, canvas, location: null, ctx: canvas.getContext('2d', { willReadFrequently: true }) });
      const n = this.counters.native;
      Object.assign(n, { on: true, connected: false, error: '' });
      this.nativeReads = [];
      this.nativeBtn.classList.add('on');
      this.nativeBtn.setAttribute('aria-pressed', 'true');
      this.views.append(video);
      pc.addTransceiver('video', { direction: 'recvonly' });
      pc.ontrack = (ev) => {
        video.srcObject = ev.streams[0] || new MediaStream([ev.track]);
        video.requestVideoFrameCallback((now, meta) => this.onNativeFrame(nat, meta));
      };
      pc.onconnectionstatechange = () => {
        n.connected = pc.connectionState === 'connected';
        if (pc.connectionState === 'failed') this.nativeFailed('native player: the connection failed');
      };
      await pc.setLocalDescription(await pc.createOffer());
      await gathered(pc);
      const headers = Object.assign({ 'Content-Type': 'application/sdp' }, authHeaders());
      const res = await fetch('whep/' + encodeURIComponent(this.info.name), {
        method: 'POST', headers, body: pc.localDescription.sdp, cache: 'no-store',
      });
      const body = await res.text();
      const location = res.status === 201 ? new URL(res.headers.get('Location'), res.url).href : null;
      if (this.native !== nat) { // turned off meanwhile
        if (location) fetch(location, { method: 'DELETE', headers: authHeaders() }).catch(() => {});
        return;
      }
      if (!location) throw new Error(res.status + ' ' + body.trim());
      nat.location = location;
      await pc.setRemoteDescription({ type: 'answer', sdp: body });
    }

    stopNative() {
      const nat = this.native;
      this.native = null;
      this.counters.native.on = false;
      this.counters.native.connected = false;
      this.nativeBtn.classList.remove('on');
      this.nativeBtn.setAttribute('aria-pressed', 'false');
      if (nat.location) {
        fetch(nat.location, { method: 'DELETE', headers: authHeaders() }).catch(() => {});
      }
      nat.pc.close();
      nat.video.remove();
      this.nativeG2G = [];
      this.recent.nativeG2G = [];
    }

    nativeFailed(msg) {
      note('stream ' + this.id + ': ' + msg);
      if (this.native) this.stopNative();
      this.counters.native.error = msg;
    }

    // onNativeFrame reads the stamp of a frame the browser presents and
    // reports it; display_ms is when the browser handed the frame to its
    // compositor, on the viewer's clock.
    onNativeFrame(nat, meta) {
      if (this.native !== nat) return;
      nat.video.requestVideoFrameCallback((now, m) => this.onNativeFrame(nat, m));
      const w = meta.width;
      const h = meta.height;
      const band = Math.min(h, Stamp.bandHeight(w));
      if (band <= 0) return;
      if (nat.canvas.width !== w || nat.canvas.height !== band) {
        nat.canvas.width = w;
        nat.canvas.height = band;
      }
      nat.ctx.drawImage(nat.video, 0, 0, w, band, 0, 0, w, band);
      const img = nat.ctx.getImageData(0, 0, w, band);
      const displayMs = performance.timeOrigin + meta.presentationTime + clockOffsetMs;
      const captureMs = Stamp.read(img.data, w, w, displayMs - this.lastOffsetMs);
      const n = this.counters.native;
      n.framesDisplayed++;
      n.width = w;
      n.height = h;
      pushBounded(this.nativeReads, captureMs !== null, NO_STAMP_AFTER);
      const report = { stream: this.id, ok: captureMs !== null, display_ms: displayMs };
      if (captureMs === null) {
        n.misreads++;
      } else {
        report.capture_ms = captureMs;
        const g2g = displayMs - (captureMs + this.lastOffsetMs);
        n.lastG2G = g2g;
        pushBounded(this.recent.nativeG2G, g2g, 15);
        this.nativeG2G.push([displayMs, g2g]);
      }
      if (pendingNative.length < MAX_REPORT) pendingNative.push(report);
    }

    render(nowViewer) {
      while (this.g2g.length && this.g2g[0][0] < nowViewer - CHART_SPAN_MS) this.g2g.shift();
      while (this.nativeG2G.length && this.nativeG2G[0][0] < nowViewer - CHART_SPAN_MS) this.nativeG2G.shift();
      const connected = this.info.connected;
      const stalled = connected && localNow() - this.lastFrameAt > STALL_MS;
      const state = !connected ? 'disconnected' : stalled ? 'stalled' : 'live';
      setText(this.stateEl, state);
      this.stateEl.className = 'state ' + state;
      const g = median(this.recent.g2g);
      setText(this.bigEl, g === null || stalled || !connected ? '–' : g.toFixed(0));
      const ng = median(this.recent.nativeG2G);
      this.nativeBigEl.hidden = this.nativeUnitEl.hidden = !this.native;
      setText(this.nativeBigEl, ng === null || stalled || !connected ? '–' : ng.toFixed(0));
      // A stream without the pixel timestamp (another WHIP publisher)
      // plays without glass-to-glass numbers: say so.
      const none = (reads) => reads.length >= NO_STAMP_AFTER && !reads.some(Boolean);
      this.counters.noStamp = none(this.reads);
      this.counters.native.noStamp = this.native !== null && none(this.nativeReads);
      const noStamp = this.counters.noStamp || this.counters.native.noStamp;
      setText(this.noteEl, noStamp
        ? 'No timestamp in the pixels of this stream: it plays without glass-to-glass numbers.'
        : this.counters.native.error);
      const ss = this.serverStats;
      const cs = this.clientStats;
      setText(this.facts.fps, ss ? fmt(ss.fps) : '–');
      setText(this.facts.bitrate, ss ? fmtRate(ss.bitrate_bps) : '–');
      setText(this.facts.resolution, this.counters.width ? this.counters.width + '×' + this.counters.height : '–');
      setText(this.facts.offset, ss && ss.clock_offset_ms !== null ? fmtSigned(ss.clock_offset_ms) + ' ms' : '–');
      setText(this.facts.dropped, String((cs ? cs.frames_dropped : 0) + this.counters.framesSkipped));
      setText(this.facts.misreads, String(this.counters.misreads));
      // The share of each temporal layer in the frames displayed: a page
      // behind a slow link shows fewer of the upper layers.
      const byLayer = this.counters.displayedByLayer;
      const shown = byLayer.reduce((a, b) => a + b, 0);
      setText(this.facts.layers, this.layered && shown
        ? byLayer.slice(0, 3).map((v) => (100 * v / shown).toFixed(0)).join(' · ')
        : '–');
      const values = {};
      for (const [k] of PARTS) values[k] = null;
      if (ss && ss.parts_ms) {
        for (const k of ['wait', 'encode', 'source_delay', 'network']) {
          values[k] = ss.parts_ms[k] ? ss.parts_ms[k].p50 : null;
        }
      }
      values.delivery = median(this.recent.delivery);
      values.decode = median(this.recent.decode);
      values.draw = median(this.recent.draw);
      let total = 0;
      for (const [k] of PARTS) total += Math.max(0, values[k] || 0);
      for (const [k] of PARTS) {
        setText(this.partEls[k], fmt(values[k]));
        const v = Math.max(0, values[k] || 0);
        this.barParts[k].style.width = total > 0 ? (100 * v / total).toFixed(2) + '%' : '0';
      }
      this.drawChart(nowViewer);
    }

    drawChart(nowViewer) {
      const c = this.chart;
      const ctx = c.getContext('2d');
      const W = c.width;
      const H = c.height;
      ctx.fillStyle = '#10141a';
      ctx.fillRect(0, 0, W, H);
      let peak = 0;
      for (const [, v] of this.g2g) peak = Math.max(peak, v);
      for (const [, v] of this.nativeG2G) peak = Math.max(peak, v);
      // Four grid steps of a round size that covers the peak.
      const step = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000].find((s) => 4 * s >= peak) || Math.ceil(peak / 4000) * 1000;
      const top = 4 * step;
      ctx.strokeStyle = '#2a3340';
      ctx.fillStyle = '#7d8a99';
      ctx.font = '10px sans-serif';
      ctx.lineWidth = 1;
      for (let i = 0; i <= 4; i++) {
        const y = H - (i / 4) * (H - 12) - 1;
        ctx.beginPath();
        ctx.moveTo(0, y);
        ctx.lineTo(W, y);
        ctx.stroke();
        ctx.fillText(String(step * i), 2, y - 2);
      }
      ctx.lineWidth = 1.5;
      for (const [series, color] of [[this.g2g, '#4fc3f7'], [this.nativeG2G, '#f6b26b']]) {
        ctx.strokeStyle = color;
        ctx.beginPath();
        let first = true;
        for (const [t, v] of series) {
          const x = W - ((nowViewer - t) / CHART_SPAN_MS) * W;
          const y = H - (Math.max(0, v) / top) * (H - 12) - 1;
          if (first) ctx.moveTo(x, y); else ctx.lineTo(x, y);
          first = false;
        }
        ctx.stroke();
      }
    }
  }

  function onStreams(list) {
    const seen = new Set();
    for (const info of list) {
      seen.add(info.id);
      const v = views.get(info.id);
      if (v) v.update(info);
      else views.set(info.id, new StreamView(info));
    }
    for (const [id, v] of views) {
      if (!seen.has(id)) {
        v.remove();
        views.delete(id);
      }
    }
    setText(document.getElementById('empty'), views.size ? '' : 'No streams yet: start a sender.');
  }

  function onText(data) {
    let msg;
    try {
      msg = JSON.parse(data);
    } catch (e) {
      note('bad message from viewer');
      return;
    }
    if (msg.type === 'hello') {
      R.clientId = msg.client;
    } else if (msg.type === 'streams') {
      onStreams(msg.streams || []);
    }
  }

  function onBinary(buf) {
    const arrivedMs = viewerNow();
    const f = parseFrame(buf);
    if (!f) {
      note('bad frame from viewer');
      return;
    }
    const v = views.get(f.stream);
    if (v) v.onFrame(f, arrivedMs);
  }

  let backoff = 500;
  function connect() {
    const url = new URL('ws' + query, location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const ws = new WebSocket(url.href);
    ws.binaryType = 'arraybuffer';
    socket = ws;
    ws.onopen = () => {
      backoff = 500;
      R.connected = true;
      setText(document.getElementById('conn'), 'connected');
      for (const v of views.values()) {
        v.closeDecoder();
        v.waitKey = true;
      }
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data === 'string') onText(ev.data);
      else onBinary(ev.data);
    };
    ws.onclose = (ev) => {
      R.connected = false;
      // The viewer says why it refused the page (too many pages open).
      setText(document.getElementById('conn'), ev.reason ? ev.reason + ': retrying' : 'disconnected: retrying');
      if (socket === ws) socket = null;
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    };
  }

  function flushReports() {
    if (!socket || socket.readyState !== WebSocket.OPEN) return;
    if (pendingReports.length) {
      const frames = pendingReports;
      pendingReports = [];
      send({ type: 'report', frames });
      R.reportsSent++;
    }
    if (pendingNative.length) {
      const frames = pendingNative;
      pendingNative = [];
      send({ type: 'native', frames });
      R.nativeReportsSent++;
    }
  }

  async function pollStats() {
    try {
      const res = await fetch('api/stats' + query, { cache: 'no-store' });
      if (!res.ok) return;
      const st = await res.json();
      for (const s of st.streams || []) {
        const v = views.get(s.id);
        if (v) v.serverStats = s;
      }
      const me = (st.clients || []).find((c) => c.id === R.clientId);
      if (me) {
        for (const cs of me.streams || []) {
          const v = views.get(cs.stream);
          if (v) v.clientStats = cs;
        }
      }
    } catch (e) {
      // The viewer may be restarting; the WebSocket shows it.
    }
  }

  function render() {
    const now = viewerNow();
    for (const v of views.values()) v.render(now);
  }

  async function start() {
    if (!R.supported) {
      note('This browser has no WebCodecs VideoDecoder (it needs a secure context: ' +
        'open the page on localhost or over HTTPS).');
    }
    for (;;) {
      try {
        await syncClock();
        break;
      } catch (e) {
        note('clock sync failed: ' + e.message);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    connect();
    setInterval(flushReports, REPORT_EVERY_MS);
    setInterval(pollStats, STATS_EVERY_MS);
    setInterval(render, 250);
    setInterval(() => syncClock().catch((e) => note('clock sync failed: ' + e.message)), CLOCK_EVERY_MS);
  }

  start();
})();
