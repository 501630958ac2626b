/* traceprobe timeline: draws every .tp-timeline element of the page on a canvas.
 *
 * Data: the element's data-payload names a JSON script element holding
 * {"traces": [{"title", "lanes", "events", "critical"}, ...]}, one group of rows per trace,
 * one above the other on one time axis (each trace's time from the start of its own window):
 *   lanes    traceprobe.render.lanes.Lanes.to_payload(): overlap bands and GPU stream lanes,
 *            pieces delta-coded [gap, length, ...] in int ns (with busy density in per mille
 *            after downsampling), steps [[n, start, end], ...];
 *   events   traceprobe.render.events.EventDetail.payload() or null: every GPU activity and
 *            host event of the window as typed columns in one gzip+base64 blob, inflated
 *            here with the browser's DecompressionStream;
 *   critical [[start_ns, end_ns, kind, name], ...] or null: the report's critical path.
 * Colours come from the CSS variables --tp-<kind>.
 *
 * Level of detail: an event at least MIN_BOX_PX wide is drawn as its own box (named when
 * there is room); narrower ones add to a per-pixel coverage, and each pixel column shows
 * the kind that ran longest in it, paler the less of it was busy (as lanes.raster does
 * for the PNG). Zooming in therefore shows every event; zoomed out costs one pass.
 *
 * Interaction: wheel zooms at the pointer, drag pans, the buttons zoom and reset,
 * hovering shows a tooltip (name, lane, start, duration, bytes and GB/s, launch links),
 * clicking pins it and draws the launch -> kernel links; the search box takes a regex
 * and highlights and totals the matching events. After the first draw the element gets
 * data-rendered="N rows" and data-first-paint-ms; errors are written into #errors.
 * Self-contained: no network, no libraries.
 */
(function () {
  "use strict";

  var AXIS_H = 22, STEP_H = 16, LANE_H = 18, BAND_H = 11, LEVEL_H = 13, GROUP_H = 20;
  var GAP_H = 6, GUTTER = 200, MIN_VIEW_NS = 20, MIN_BOX_PX = 3, MAX_LEVELS = 16;
  var MAX_LINKS = 400, CHAR_PX = 6.3, FONT = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
  var KIND_LABEL = {
    kernel: "kernel", comm: "communication kernel", memcpy: "memory copy", memset: "memset",
    cpu_op: "op", runtime: "runtime call", sync: "synchronisation", annotation: "user annotation",
    dataloader: "DataLoader", python: "Python function", other: "host event", critical: "critical path"
  };

  function reportError(msg) {
    var box = document.getElementById("errors");
    if (!box) { return; }
    var p = document.createElement("p");
    p.textContent = String(msg);
    box.appendChild(p);
  }

  window.addEventListener("error", function (ev) {
    reportError("timeline error: " + (ev.message || ev));
  });

  // ------------------------------------------------------------------ data

  function decode(list) {
    var n = Math.floor(list.length / 2), s = new Float64Array(n), e = new Float64Array(n), t = 0;
    for (var i = 0; i < n; i++) {
      t += list[2 * i]; s[i] = t;
      t += list[2 * i + 1]; e[i] = t;
    }
    return { s: s, e: e };
  }

  function inflate(b64) {
    var bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (var i = 0; i < bin.length; i++) { bytes[i] = bin.charCodeAt(i); }
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser lacks DecompressionStream; " +
        "event detail (hover names, links, search) needs a browser from 2023 or later"));
    }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).arrayBuffer();
  }

  var TYPES = { u8: Uint8Array, u16: Uint16Array, i32: Int32Array, f64: Float64Array };

  // Columns of one table out of the inflated buffer; starts undone from their delta coding.
  function readTable(buf, offset, n, cols) {
    var out = {};
    for (var i = 0; i < cols.length; i++) {
      var T = TYPES[cols[i][1]], bytes = n * T.BYTES_PER_ELEMENT;
      out[cols[i][0]] = new T(buf, offset, n);
      offset += bytes + ((8 - bytes % 8) % 8);
    }
    var s = new Float64Array(n), e = new Float64Array(n), t = 0;
    for (var j = 0; j < n; j++) { t += out.start[j]; s[j] = t; e[j] = t + out.dur[j]; }
    out.s = s; out.e = e; out.n = n;
    return { table: out, offset: offset };
  }

  function buildEvents(ev, buf) {
    var g = readTable(buf, 0, ev.gpu_n, ev.gpu_cols);
    var c = readTable(buf, g.offset, ev.cpu_n, ev.cpu_cols);
    return { meta: ev, gpu: g.table, cpu: c.table };
  }

  // Events of one lane level, sorted by start, with the running maximum of their ends so
  // that the first event ending after t is found by bisection even if some overlap.
  function level(table, idx) {
    var n = idx.length, s = new Float64Array(n), e = new Float64Array(n), m = new Float64Array(n);
    var top = -Infinity;
    for (var i = 0; i < n; i++) {
      s[i] = table.s[idx[i]]; e[i] = table.e[idx[i]];
      top = Math.max(top, e[i]); m[i] = top;
    }
    return { idx: Int32Array.from(idx), s: s, e: e, m: m };
  }

  function firstEndingAfter(arr, t) {  // arr ascending
    var lo = 0, hi = arr.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (arr[mid] <= t) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  }

  function pieceAt(p, t) {
    var i = firstEndingAfter(p.e, t);
    return i < p.s.length && p.s[i] <= t ? i : -1;
  }

  // ------------------------------------------------------------------ formatting

  function fmtTime(ns) {
    var a = Math.abs(ns);
    if (a === 0) { return "0"; }
    var units = [[1, "ns"], [1e3, "µs"], [1e6, "ms"], [1e9, "s"]];
    for (var i = 0; i < units.length; i++) {
      var v = ns / units[i][0];
      if (Math.abs(v) < 1000 || i === units.length - 1) {
        var av = Math.abs(v);
        return (av >= 100 ? v.toFixed(0) : av >= 10 ? v.toFixed(1) : v.toFixed(2)) + " " + units[i][1];
      }
    }
    return String(ns);
  }

  // t in the unit of its magnitude, with as many decimals as a difference of `res` ns needs
  // (axis labels 300.05 ms, 300.10 ms when zoomed in far from the origin).
  function fmtAt(t, res) {
    var units = [[1, "ns"], [1e3, "µs"], [1e6, "ms"], [1e9, "s"]], u = units[0];
    for (var i = 0; i < units.length; i++) { if (Math.abs(t) >= units[i][0]) { u = units[i]; } }
    if (t === 0) { return "0"; }
    var dec = Math.max(0, Math.min(6, Math.ceil(-Math.log10(res / u[0]) - 1e-9)));
    return (t / u[0]).toFixed(dec) + " " + u[1];
  }

  // µs with ns precision: 1234.567 µs
  function fmtUs(ns) {
    return (ns / 1000).toLocaleString("en-US", { minimumFractionDigits: 3, maximumFractionDigits: 3 }) + " µs";
  }

  function fmtBytes(b) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(2) : String(b)) + " " + units[i];
  }

  function niceStep(range, count) {
    var raw = range / Math.max(1, count), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * mag >= raw) { return steps[i] * mag; }
    }
    return 10 * mag;
  }

  // ------------------------------------------------------------------ the picture

  function Timeline(el, data) {
    this.el = el;
    this.data = data;
    this.traces = data.traces;
    this.span = 1;
    for (var i = 0; i < this.traces.length; i++) {
      this.span = Math.max(this.span, this.traces[i].lanes.span_ns);
    }
    this.canvas = el.querySelector("canvas");
    this.tip = el.querySelector(".tp-tip");
    this.details = el.querySelector(".tp-details");
    this.results = el.querySelector(".tp-results");
    var style = window.getComputedStyle(el);
    var cache = {};
    this.color = function (kind) {
      if (!(kind in cache)) {
        cache[kind] = (style.getPropertyValue("--tp-" + kind) || "").trim() || "#888";
      }
      return cache[kind];
    };
    this.match = null;     // per trace: Uint8Array over names, or null (no search)
    this.selected = null;  // {trace, side, i}
    this.hovered = null;
    this.v0 = 0;
    this.v1 = this.span;
  }

  Timeline.prototype.start = function () {
    var self = this, t0 = performance.now();
    var jobs = this.traces.map(function (tr) {
      if (!tr.events) { return Promise.resolve(null); }
      return inflate(tr.events.blob).then(function (buf) { return buildEvents(tr.events, buf); });
    });
    return Promise.all(jobs.map(function (j) {
      return j.catch(function (err) { reportError("timeline: " + err.message); return null; });
    })).then(function (evs) {
      for (var i = 0; i < evs.length; i++) { self.traces[i].ev = evs[i]; }
      var t1 = performance.now();
      self.layout();
      self.bind();
      var t2 = performance.now();
      self.draw();
      var t3 = performance.now();
      self.el.setAttribute("data-timings-ms", [t1 - t0, t2 - t1, t3 - t2].map(Math.round).join(" "));
      self.el.setAttribute("data-first-paint-ms", String(Math.round(t3)));
      self.el.setAttribute("data-rendered", self.rows.length + " rows");
    });
  };

  Timeline.prototype.layout = function () {
    var y = AXIS_H + (this.hasSteps() ? STEP_H : 0) + 4, multi = this.traces.length > 1;
    this.rows = [];
    this.groups = [];
    for (var t = 0; t < this.traces.length; t++) {
      var tr = this.traces[t], lanes = tr.lanes, ev = tr.ev, top = y;
      if (multi) {
        this.rows.push({ type: "group", label: tr.title, y: y, h: GROUP_H, trace: t });
        y += GROUP_H + 2;
      }
      var gpuRow = {}, lastDevice = null;
      if (ev) {
        for (var r = 0; r < ev.meta.gpu.length; r++) {
          gpuRow[ev.meta.gpu[r].device + "/" + ev.meta.gpu[r].stream] = r;
        }
      }
      var byRow = ev ? this.splitRows(ev) : null;
      for (var i = 0; i < lanes.rows.length; i++) {
        var src = lanes.rows[i], h = src.type === "lane" ? LANE_H : BAND_H;
        if (src.device !== null && lastDevice !== null && src.device !== lastDevice) { y += GAP_H; }
        if (src.device !== null) { lastDevice = src.device; }
        var row = { type: src.type, label: src.label, kind: src.kind, y: y, h: h, trace: t, src: src };
        var key = src.device + "/" + src.stream;
        if (src.type === "lane" && ev && key in gpuRow && !ev.meta.dropped) {
          row.side = "gpu";
          row.levels = [level(ev.gpu, byRow.gpu[gpuRow[key]] || [])];
        } else {
          row.sets = [];
          for (var q = 0; q < lanes.kinds.length; q++) {
            var kind = lanes.kinds[q];
            if (Object.prototype.hasOwnProperty.call(src.kinds, kind)) {
              var dens = src.density && src.density[kind];
              row.sets.push({ kind: kind, p: decode(src.kinds[kind]), d: dens ? new Float32Array(dens) : null });
            }
          }
        }
        this.rows.push(row);
        y += h + 2;
      }
      if (ev) {
        if (ev.meta.host.length) { y += GAP_H; }
        for (var hr = 0; hr < ev.meta.host.length; hr++) {
          var info = ev.meta.host[hr], byDepth = [];
          var idx = byRow.cpu[hr] || [];
          for (var k = 0; k < idx.length; k++) {
            var d = ev.cpu.depth[idx[k]];
            if (d >= MAX_LEVELS) { continue; }
            (byDepth[d] = byDepth[d] || []).push(idx[k]);
          }
          var levels = [];
          for (var dd = 0; dd < byDepth.length; dd++) { levels.push(level(ev.cpu, byDepth[dd] || [])); }
          var hh = Math.max(1, levels.length) * LEVEL_H;
          this.rows.push({ type: "host", label: "host · " + info.label, y: y, h: hh, trace: t,
                           side: "cpu", levels: levels, deeper: info.depth > MAX_LEVELS });
          y += hh + 2;
        }
      }
      if (tr.critical && tr.critical.length) {
        this.rows.push({ type: "critical", label: "critical path", y: y, h: LANE_H, trace: t,
                         side: "crit", levels: [this.criticalLevel(tr)] });
        y += LANE_H + 2;
      }
      if (!lanes.rows.length && !(ev && (ev.meta.host.length || ev.meta.gpu.length))) {
        this.rows.push({ type: "empty", label: "", y: y, h: LANE_H, trace: t });
        y += LANE_H + 2;
      }
      this.groups.push({ top: top, bottom: y });
      y += multi ? GAP_H * 2 : 0;
    }
    this.height = Math.max(y + 4, AXIS_H + 40);
  };

  Timeline.prototype.splitRows = function (ev) {
    var out = { gpu: [], cpu: [] }, sides = ["gpu", "cpu"];
    for (var s = 0; s < 2; s++) {
      var tb = ev[sides[s]], lists = out[sides[s]];
      for (var i = 0; i < tb.n; i++) { (lists[tb.row[i]] = lists[tb.row[i]] || []).push(i); }
    }
    return out;
  };

  Timeline.prototype.criticalLevel = function (tr) {
    var segs = tr.critical.slice().sort(function (a, b) { return a[0] - b[0]; });
    var tb = { s: new Float64Array(segs.length), e: new Float64Array(segs.length), segs: segs };
    for (var i = 0; i < segs.length; i++) { tb.s[i] = segs[i][0]; tb.e[i] = segs[i][1]; }
    tr.crit = tb;
    var idx = [];
    for (var j = 0; j < segs.length; j++) { idx.push(j); }
    return level(tb, idx);
  };

  Timeline.prototype.hasSteps = function () {
    return this.traces.some(function (tr) { return tr.lanes.steps.length > 0; });
  };

  Timeline.prototype.reset = function () { this.setView(0, this.span); };

  Timeline.prototype.plotWidth = function () { return Math.max(50, this.cssWidth - GUTTER - 8); };

  Timeline.prototype.timeAt = function (x) {
    return this.v0 + (x - GUTTER) / this.plotWidth() * (this.v1 - this.v0);
  };

  Timeline.prototype.xAt = function (t) {
    return GUTTER + (t - this.v0) / (this.v1 - this.v0) * this.plotWidth();
  };

  Timeline.prototype.zoom = function (factor, centreX) {
    var t = this.timeAt(centreX === undefined ? GUTTER + this.plotWidth() / 2 : centreX);
    var width = Math.min(this.span, Math.max(MIN_VIEW_NS, (this.v1 - this.v0) * factor));
    var frac = (t - this.v0) / (this.v1 - this.v0);
    this.setView(t - frac * width, t - frac * width + width);
  };

  Timeline.prototype.setView = function (a, b) {
    var w = Math.max(MIN_VIEW_NS, b - a);
    if (a < 0) { a = 0; b = w; }
    if (b > this.span) { b = this.span; a = Math.max(0, b - w); }
    this.v0 = a;
    this.v1 = b;
    this.draw();
  };

  // The event of trace t (side "gpu" | "cpu" | "crit", index i) as the tooltip shows it.
  Timeline.prototype.eventInfo = function (t, side, i) {
    var tr = this.traces[t], ev = tr.ev, lines = [], name, kind, s, e;
    if (side === "crit") {
      var seg = tr.crit.segs[i];
      return { name: seg[3], lines: ["critical path · " + seg[2], "start " + fmtUs(seg[0]) +
        " · duration " + fmtUs(seg[1] - seg[0])] };
    }
    var tb = ev[side], meta = ev.meta;
    name = meta.names[tb.name[i]];
    kind = meta.kinds[tb.kind[i]];
    s = tb.s[i]; e = tb.e[i];
    var where = side === "gpu" ? meta.gpu[tb.row[i]].label : "host " + meta.host[tb.row[i]].label;
    lines.push(KIND_LABEL[kind] + " · " + where);
    lines.push("start " + fmtUs(s) + " · duration " + fmtUs(e - s) + " · end " + fmtUs(e));
    if (side === "gpu" && (kind === "memcpy" || kind === "memset") && tb.bytes[i] >= 0) {
      var rate = e > s ? " · " + (tb.bytes[i] / (e - s)).toFixed(2) + " GB/s" : "";
      lines.push(fmtBytes(tb.bytes[i]) + " (" + tb.bytes[i] + " bytes)" + rate);
    }
    if (tb.info[i]) { lines.push(meta.infos[tb.info[i]]); }
    var links = this.links(t, side, i);
    if (side === "gpu" && links.launcher >= 0) {
      var chain = [], j = links.launcher;
      while (j >= 0 && chain.length < 5) { chain.push(meta.names[ev.cpu.name[j]]); j = ev.cpu.parent[j]; }
      lines.push("launched by " + chain.join(" ← ") +
                 " (" + fmtUs(ev.cpu.s[links.launcher]) + ")");
    }
    if (side === "cpu" && links.kernels.length) {
      var total = 0, names = {};
      for (var k = 0; k < links.kernels.length; k++) {
        var g = links.kernels[k];
        total += ev.gpu.e[g] - ev.gpu.s[g];
        names[meta.names[ev.gpu.name[g]]] = true;
      }
      var list = Object.keys(names);
      lines.push(links.kernels.length + " GPU activit" + (links.kernels.length === 1 ? "y" : "ies") +
                 " launched, " + fmtUs(total) + " in all: " + list.slice(0, 3).join(", ") +
                 (list.length > 3 ? ", …" : ""));
    }
    return { name: name, lines: lines };
  };

  // Launch links through correlation ids: a GPU activity's runtime call (or, without one,
  // the op of the same external id); a host event's GPU activities (its own correlation,
  // or those of the runtime calls nested in it).
  Timeline.prototype.links = function (t, side, i) {
    var tr = this.traces[t], ev = tr.ev;
    if (!ev || side === "crit") { return { launcher: -1, kernels: [] }; }
    if (!ev.corrCpu) {
      ev.corrCpu = new Map(); ev.extCpu = new Map(); ev.corrGpu = new Map();
      var rt = ev.meta.kinds.indexOf("runtime"), op = ev.meta.kinds.indexOf("cpu_op");
      for (var c = 0; c < ev.cpu.n; c++) {
        if (ev.cpu.corr[c] >= 0 && ev.cpu.kind[c] === rt) { ev.corrCpu.set(ev.cpu.corr[c], c); }
        if (ev.cpu.ext[c] >= 0 && ev.cpu.kind[c] === op && !ev.extCpu.has(ev.cpu.ext[c])) {
          ev.extCpu.set(ev.cpu.ext[c], c);
        }
      }
      for (var g = 0; g < ev.gpu.n; g++) {
        var key = ev.gpu.corr[g];
        if (key < 0) { continue; }
        if (!ev.corrGpu.has(key)) { ev.corrGpu.set(key, []); }
        ev.corrGpu.get(key).push(g);
      }
    }
    if (side === "gpu") {
      var l = ev.corrCpu.get(ev.gpu.corr[i]);
      if (l === undefined) { l = ev.extCpu.get(ev.gpu.ext[i]); }
      return { launcher: l === undefined ? -1 : l, kernels: [i] };
    }
    var out = [], cpu = ev.cpu, end = cpu.e[i];
    for (var j = i; j < cpu.n && cpu.row[j] === cpu.row[i] && (j === i || cpu.s[j] < end); j++) {
      var ks = cpu.corr[j] >= 0 ? ev.corrGpu.get(cpu.corr[j]) : undefined;
      if (ks) { for (var q = 0; q < ks.length; q++) { out.push(ks[q]); } }
      if (out.length > 100000) { break; }
    }
    return { launcher: -1, kernels: out };
  };

  // Where event (t, side, i) sits on the canvas: {x0, x1, y, h} or null.
  Timeline.prototype.place = function (t, side, i) {
    var ev = this.traces[t].ev;
    for (var r = 0; r < this.rows.length; r++) {
      var row = this.rows[r];
      if (row.trace !== t || row.side !== side) { continue; }
      if (side === "gpu") {
        var m = ev.meta.gpu[ev.gpu.row[i]];
        if (row.src.device === m.device && row.src.stream === m.stream) {
          return { x0: this.xAt(ev.gpu.s[i]), x1: this.xAt(ev.gpu.e[i]), y: row.y, h: row.h };
        }
      } else if (side === "cpu" && this.rows[r].label === "host · " + ev.meta.host[ev.cpu.row[i]].label) {
        var d = Math.min(ev.cpu.depth[i], MAX_LEVELS - 1);
        return { x0: this.xAt(ev.cpu.s[i]), x1: this.xAt(ev.cpu.e[i]), y: row.y + d * LEVEL_H, h: LEVEL_H - 1 };
      }
    }
    return null;
  };

  Timeline.prototype.hit = function (x, y) {
    if (x < GUTTER) { return null; }
    var t = this.timeAt(x), tol = 3 * (this.v1 - this.v0) / this.plotWidth();
    for (var r = 0; r < this.rows.length; r++) {
      var row = this.rows[r];
      if (y < row.y || y > row.y + row.h) { continue; }
      if (!row.levels) { return row.type === "band" || row.type === "lane" ? { row: row, t: t } : null; }
      var lv = row.levels[row.type === "host" ? Math.floor((y - row.y) / LEVEL_H) : 0];
      if (!lv) { return { row: row, t: t }; }
      var k = pieceAt(lv, t), best = -1, bestGap = tol;
      if (k < 0) {  // nearest within a few pixels: a 1 µs kernel in a zoomed-out view
        var j = firstEndingAfter(lv.m, t - tol);
        for (; j < lv.s.length && lv.s[j] <= t + tol; j++) {
          var gap = lv.s[j] > t ? lv.s[j] - t : Math.max(0, t - lv.e[j]);
          if (gap <= bestGap) { bestGap = gap; best = j; }
        }
        k = best;
      }
      return { row: row, t: t, i: k >= 0 ? lv.idx[k] : -1 };
    }
    return null;
  };

  Timeline.prototype.showTip = function (h, x, y) {
    var tip = this.tip;
    if (!tip) { return; }
    if (!h) { tip.hidden = true; this.hovered = null; return; }
    var text;
    if (h.i === undefined || h.i < 0) {
      text = { name: h.row.label, lines: ["at " + fmtUs(h.t)] };
      this.hovered = null;
    } else {
      text = this.eventInfo(h.row.trace, h.row.side, h.i);
      this.hovered = { trace: h.row.trace, side: h.row.side, i: h.i };
    }
    tip.textContent = "";
    var b = document.createElement("b");
    b.textContent = text.name;
    tip.appendChild(b);
    for (var i = 0; i < text.lines.length; i++) {
      var div = document.createElement("div");
      div.textContent = text.lines[i];
      tip.appendChild(div);
    }
    tip.hidden = false;
    var wrap = this.canvas.parentNode.getBoundingClientRect();
    var left = Math.min(x + 14, wrap.width - tip.offsetWidth - 4);
    tip.style.left = Math.max(0, left) + "px";
    tip.style.top = (y + 16) + "px";
  };

  Timeline.prototype.select = function (h) {
    this.selected = h && h.i >= 0 && h.row.side ? { trace: h.row.trace, side: h.row.side, i: h.i } : null;
    if (this.details) {
      this.details.textContent = "";
      if (this.selected) {
        var info = this.eventInfo(this.selected.trace, this.selected.side, this.selected.i);
        var b = document.createElement("b");
        b.textContent = info.name;
        this.details.appendChild(b);
        for (var i = 0; i < info.lines.length; i++) {
          var div = document.createElement("div");
          div.textContent = info.lines[i];
          this.details.appendChild(div);
        }
      }
    }
    this.draw();
  };

  // ------------------------------------------------------------------ search

  Timeline.prototype.search = function (query) {
    var self = this;
    this.match = null;
    if (this.results) { this.results.textContent = ""; }
    if (!query) { this.draw(); return null; }
    var re;
    try { re = new RegExp(query, "i"); } catch (err) {
      if (this.results) { this.results.textContent = "not a regular expression: " + err.message; }
      this.draw();
      return null;
    }
    var totals = {}, count = 0, total = 0;
    this.match = this.traces.map(function (tr) {
      if (!tr.ev) { return null; }
      var names = tr.ev.meta.names, m = new Uint8Array(names.length);
      for (var i = 0; i < names.length; i++) { m[i] = re.test(names[i]) ? 1 : 0; }
      ["gpu", "cpu"].forEach(function (side) {
        var tb = tr.ev[side];
        for (var j = 0; j < tb.n; j++) {
          if (!m[tb.name[j]]) { continue; }
          var nm = names[tb.name[j]], d = tb.e[j] - tb.s[j];
          var row = totals[nm] || (totals[nm] = { count: 0, total: 0 });
          row.count++; row.total += d; count++; total += d;
        }
      });
      return m;
    });
    var list = Object.keys(totals).sort(function (a, b) { return totals[b].total - totals[a].total; });
    if (this.results) {
      var head = document.createElement("p");
      head.className = "tp-results-total";
      head.textContent = count + " matching event" + (count === 1 ? "" : "s") + " of " +
        list.length + " name" + (list.length === 1 ? "" : "s") + ", " + fmtUs(total) + " in all";
      this.results.appendChild(head);
      if (list.length) {
        var table = document.createElement("table");
        var tr0 = table.insertRow();
        ["name", "events", "total"].forEach(function (h) {
          var th = document.createElement("th"); th.textContent = h; tr0.appendChild(th);
        });
        list.slice(0, 20).forEach(function (nm) {
          var tr = table.insertRow();
          tr.insertCell().textContent = nm;
          tr.insertCell().textContent = String(totals[nm].count);
          tr.insertCell().textContent = fmtUs(totals[nm].total);
          tr.cells[0].className = "tp-name";
          tr.cells[1].className = "r";
          tr.cells[2].className = "r";
        });
        this.results.appendChild(table);
      }
    }
    self.draw();
    return { count: count, total_ns: total, names: list.length };
  };

  // ------------------------------------------------------------------ events

  Timeline.prototype.bind = function () {
    var self = this, c = this.canvas, drag = null;
    c.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      self.zoom(Math.exp(ev.deltaY * 0.002), Math.max(GUTTER, ev.offsetX));
    }, { passive: false });
    c.addEventListener("mousedown", function (ev) {
      drag = { x: ev.clientX, v0: self.v0, v1: self.v1, moved: false };
      c.classList.add("tp-dragging");
    });
    window.addEventListener("mouseup", function () {
      drag = null;
      c.classList.remove("tp-dragging");
    });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) { return; }
      if (Math.abs(ev.clientX - drag.x) > 2) { drag.moved = true; }
      var dt = (ev.clientX - drag.x) / self.plotWidth() * (drag.v1 - drag.v0);
      self.setView(drag.v0 - dt, drag.v1 - dt);
    });
    c.addEventListener("mousemove", function (ev) {
      self.showTip(self.hit(ev.offsetX, ev.offsetY), ev.offsetX, ev.offsetY);
    });
    c.addEventListener("mouseleave", function () { self.showTip(null); });
    c.addEventListener("click", function (ev) {
      if (drag && drag.moved) { return; }
      self.select(self.hit(ev.offsetX, ev.offsetY));
    });
    c.addEventListener("dblclick", function () { self.reset(); });
    var on = function (cls, name, fn) {
      var b = self.el.querySelector(cls);
      if (b) { b.addEventListener(name, fn); }
    };
    on(".tp-reset", "click", function () { self.reset(); });
    on(".tp-zoom-in", "click", function () { self.zoom(0.5); });
    on(".tp-zoom-out", "click", function () { self.zoom(2); });
    on(".tp-search", "input", function (ev) { self.search(ev.target.value); });
    var pending = false;
    window.addEventListener("resize", function () {
      if (pending) { return; }
      pending = true;
      window.requestAnimationFrame(function () { pending = false; self.draw(); });
    });
  };

  // ------------------------------------------------------------------ drawing

  // Overlap rows: each pixel column shows the kind that ran longest in it, more opaque
  // the more of the pixel was busy (as traceprobe.render.lanes.raster does for the PNG).
  Timeline.prototype.drawSets = function (ctx, row) {
    var W = Math.floor(this.plotWidth()), K = row.sets.length;
    if (!K || W < 1) { return; }
    var v0 = this.v0, v1 = this.v1, k = W / (v1 - v0);
    var cov = new Float32Array(K * W);
    for (var j = 0; j < K; j++) {
      var p = row.sets[j].p, d = row.sets[j].d, n = p.s.length, base = j * W;
      for (var i = firstEndingAfter(p.e, v0); i < n && p.s[i] < v1; i++) {
        addCoverage(cov, base, W, (Math.max(p.s[i], v0) - v0) * k, (Math.min(p.e[i], v1) - v0) * k,
                    d ? d[i] / 1000 : 1);
      }
    }
    var colors = row.sets.map(function (s) { return this.color(s.kind); }, this);
    paintCoverage(ctx, cov, K, W, colors, row.y, row.h);
  };

  function addCoverage(cov, base, W, a, b, w) {
    var ia = Math.floor(a), ib = Math.floor(b);
    if (ib >= W) { ib = W - 1; b = Math.min(b, W); }
    if (ia < 0) { ia = 0; a = Math.max(a, 0); }
    if (ia === ib) { cov[base + ia] += Math.max(b - a, 0.05) * w; return; }
    cov[base + ia] += (ia + 1 - a) * w;
    for (var x = ia + 1; x < ib; x++) { cov[base + x] += w; }
    cov[base + ib] += (b - ib) * w;
  }

  function paintCoverage(ctx, cov, K, W, colors, y, h) {
    var runX = -1, runKind = -1, runAlpha = 0;
    var flush = function (end) {
      if (runX >= 0 && runKind >= 0) {
        ctx.globalAlpha = runAlpha;
        ctx.fillStyle = colors[runKind];
        ctx.fillRect(GUTTER + runX, y, end - runX, h);
      }
    };
    for (var px = 0; px < W; px++) {
      var best = -1, bestCov = 0, total = 0;
      for (var q = 0; q < K; q++) {
        var c = cov[q * W + px];
        total += c;
        if (c > bestCov) { bestCov = c; best = q; }
      }
      var alpha = best < 0 ? 0 : Math.round((0.2 + 0.8 * Math.min(1, total)) * 20) / 20;
      if (best !== runKind || alpha !== runAlpha) {
        flush(px);
        runX = px; runKind = best; runAlpha = alpha;
      }
    }
    flush(W);
    ctx.globalAlpha = 1;
  }

  // Event rows: wide events as named boxes, narrow ones as per-pixel coverage.
  Timeline.prototype.drawLevels = function (ctx, row) {
    var tr = this.traces[row.trace], W = Math.floor(this.plotWidth());
    var v0 = this.v0, v1 = this.v1, k = W / (v1 - v0), self = this;
    var tb = row.side === "crit" ? null : tr.ev[row.side];
    var kinds = row.side === "crit" ? ["critical"] : tr.ev.meta.kinds;
    var match = this.match && row.side !== "crit" ? this.match[row.trace] : null;
    var K = kinds.length + 2, DIM = kinds.length, HIT = kinds.length + 1;
    var colors = kinds.map(function (kd) { return self.color(kd); }).concat(["#d8d8d8", "#111"]);
    var lh = row.type === "host" ? LEVEL_H : row.h;
    for (var L = 0; L < row.levels.length; L++) {
      var lv = row.levels[L], y = row.y + L * lh, h = row.type === "host" ? LEVEL_H - 1 : row.h;
      var cov = null, boxes = [];
      for (var j = firstEndingAfter(lv.m, v0); j < lv.s.length && lv.s[j] < v1; j++) {
        if (lv.e[j] <= v0) { continue; }
        var i = lv.idx[j], a = (Math.max(lv.s[j], v0) - v0) * k, b = (Math.min(lv.e[j], v1) - v0) * k;
        var kind = tb ? tb.kind[i] : 0, hitMatch = match ? match[tb.name[i]] === 1 : false;
        var q = match ? (hitMatch ? HIT : DIM) : kind;
        if ((lv.e[j] - lv.s[j]) * k >= MIN_BOX_PX) {  // its full width, even if partly in view
          boxes.push([i, a, b, kind, hitMatch]);
          this.stats.boxes++;
        } else {
          this.stats.aggregated++;
          if (!cov) { cov = new Float32Array(K * W); }
          addCoverage(cov, q * W, W, a, b, 1);
        }
      }
      if (cov) { paintCoverage(ctx, cov, K, W, colors, y, h); }
      ctx.font = FONT;
      ctx.textAlign = "left";
      for (var n = 0; n < boxes.length; n++) {
        var bx = boxes[n], x0 = GUTTER + bx[1], w = bx[2] - bx[1];
        ctx.globalAlpha = match && !bx[4] ? 0.25 : 1;
        ctx.fillStyle = colors[bx[3]];
        ctx.fillRect(x0, y, Math.max(1, w - 1), h);
        ctx.globalAlpha = 1;
        if (match && bx[4]) {
          ctx.strokeStyle = "#111"; ctx.lineWidth = 2;
          ctx.strokeRect(x0 + 1, y + 1, Math.max(1, w - 3), h - 2);
          ctx.lineWidth = 1;
        }
        var room = Math.floor((Math.min(x0 + w, GUTTER + W) - Math.max(x0, GUTTER) - 6) / CHAR_PX);
        if (room >= 4) {
          var label = row.side === "crit" ? tr.crit.segs[bx[0]][3] : tr.ev.meta.names[tb.name[bx[0]]];
          ctx.fillStyle = "#111";
          ctx.fillText(label.length > room ? label.slice(0, room - 1) + "…" : label,
                       Math.max(x0, GUTTER) + 3, y + h / 2);
        }
      }
    }
  };

  Timeline.prototype.drawLinks = function (ctx) {
    var sel = this.selected;
    if (!sel || sel.side === "crit") { return; }
    var ev = this.traces[sel.trace].ev, links = this.links(sel.trace, sel.side, sel.i);
    var pairs = [];
    if (sel.side === "gpu" && links.launcher >= 0) {
      pairs.push([["cpu", links.launcher], ["gpu", sel.i]]);
    } else if (sel.side === "cpu") {
      var launchers = new Map();
      for (var k = 0; k < links.kernels.length && pairs.length < MAX_LINKS; k++) {
        var g = links.kernels[k], l = this.links(sel.trace, "gpu", g).launcher;
        if (l >= 0 && !launchers.has(g)) { launchers.set(g, l); pairs.push([["cpu", l], ["gpu", g]]); }
      }
    }
    ctx.save();
    ctx.strokeStyle = "#111";
    ctx.fillStyle = "#111";
    ctx.lineWidth = 1.2;
    for (var p = 0; p < pairs.length; p++) {
      var a = this.place(sel.trace, pairs[p][0][0], pairs[p][0][1]);
      var b = this.place(sel.trace, pairs[p][1][0], pairs[p][1][1]);
      if (!a || !b) { continue; }
      var ax = Math.max(GUTTER, Math.min(a.x0, this.cssWidth)), bx = Math.max(GUTTER, Math.min(b.x0, this.cssWidth));
      var ay = a.y > b.y ? a.y : a.y + a.h, by = a.y > b.y ? b.y + b.h : b.y;
      ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, by); ctx.stroke();
      ctx.beginPath(); ctx.arc(bx, by, 2.5, 0, 2 * Math.PI); ctx.fill();
    }
    var me = this.place(sel.trace, sel.side, sel.i);
    if (me) {
      ctx.lineWidth = 2;
      ctx.strokeRect(Math.max(GUTTER, me.x0) - 1, me.y - 1,
                     Math.max(3, Math.min(me.x1, this.cssWidth) - Math.max(GUTTER, me.x0)) + 2, me.h + 2);
    }
    ctx.restore();
  };

  Timeline.prototype.draw = function () {
    var c = this.canvas, dpr = window.devicePixelRatio || 1;
    this.cssWidth = Math.max(300, this.el.clientWidth || 1200);
    c.style.width = this.cssWidth + "px";
    c.style.height = this.height + "px";
    c.width = Math.round(this.cssWidth * dpr);
    c.height = Math.round(this.height * dpr);
    var ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.cssWidth, this.height);
    var W = this.plotWidth(), x1 = GUTTER + W, v0 = this.v0, v1 = this.v1, self = this;
    var X = function (t) { return self.xAt(t); };
    this.stats = { boxes: 0, aggregated: 0 };  // events drawn as boxes / as pixel coverage
    ctx.font = FONT;
    ctx.textBaseline = "middle";

    // time axis and grid
    var step = niceStep(v1 - v0, Math.max(2, Math.floor(W / 110)));
    ctx.strokeStyle = "#e3e3e3";
    ctx.fillStyle = "#555";
    ctx.textAlign = "center";
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      var gx = Math.round(X(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(gx, AXIS_H - 4); ctx.lineTo(gx, this.height); ctx.stroke();
      var label = fmtAt(t, step), half = ctx.measureText(label).width / 2 + 2;
      ctx.fillText(label, Math.min(Math.max(gx, GUTTER + half), this.cssWidth - half), AXIS_H / 2 - 1);
    }
    ctx.strokeStyle = "#999";
    ctx.beginPath(); ctx.moveTo(GUTTER, AXIS_H - 0.5); ctx.lineTo(x1, AXIS_H - 0.5); ctx.stroke();

    // steps of the first trace with any: a labelled box each
    var stepsOf = this.traces.filter(function (tr) { return tr.lanes.steps.length; });
    if (stepsOf.length) {
      var steps = stepsOf[0].lanes.steps;
      ctx.textAlign = "left";
      ctx.fillStyle = "#333";
      ctx.fillText("ProfilerStep", 8, AXIS_H + STEP_H / 2);
      for (var s = 0; s < steps.length; s++) {
        var a = Math.max(GUTTER, X(steps[s][1])), b = Math.min(x1, X(steps[s][2]));
        if (b <= GUTTER || a >= x1) { continue; }
        ctx.fillStyle = s % 2 ? "#ececec" : "#f6f6f6";
        ctx.fillRect(a, AXIS_H + 1, Math.max(1, b - a), STEP_H - 2);
        if (b - a > 24) {
          ctx.fillStyle = "#333";
          ctx.fillText("#" + steps[s][0], a + 3, AXIS_H + STEP_H / 2);
        }
      }
    }

    for (var i = 0; i < this.rows.length; i++) {
      var row = this.rows[i];
      ctx.textAlign = "left";
      if (row.type === "group") {
        ctx.font = "bold " + FONT;
        ctx.fillStyle = "#111";
        ctx.fillText(row.label, 8, row.y + row.h / 2, this.cssWidth - 16);
        ctx.font = FONT;
        continue;
      }
      if (row.type === "empty") {
        ctx.fillStyle = "#666";
        ctx.fillText("No GPU or host activity in this window.", GUTTER, row.y + row.h / 2);
        continue;
      }
      var band = row.type === "band";
      ctx.fillStyle = band ? this.color(row.kind) : "#222";
      ctx.font = (band ? "italic " : "") + FONT;
      ctx.fillText(row.label + (row.deeper ? " (depth ≤ " + MAX_LEVELS + ")" : ""), 8,
                   row.y + Math.min(row.h, LANE_H) / 2, GUTTER - 14);
      ctx.font = FONT;
      ctx.fillStyle = band ? "#f7f4fb" : "#fafafa";
      ctx.fillRect(GUTTER, row.y, W, row.h);
      if (row.levels) { this.drawLevels(ctx, row); } else { this.drawSets(ctx, row); }
    }

    // step boundaries, per trace through its own rows
    ctx.save();
    ctx.strokeStyle = this.color("step");
    ctx.setLineDash([4, 3]);
    for (var g = 0; g < this.traces.length; g++) {
      var st = this.traces[g].lanes.steps;
      if (!st.length) { continue; }
      var marks = st.map(function (x) { return x[1]; });
      marks.push(st[st.length - 1][2]);
      var top = g === 0 ? AXIS_H + 1 : this.groups[g].top, bottom = this.groups[g].bottom;
      for (var m = 0; m < marks.length; m++) {
        var mx = Math.round(X(marks[m])) + 0.5;
        if (mx < GUTTER || mx > x1) { continue; }
        ctx.beginPath(); ctx.moveTo(mx, top); ctx.lineTo(mx, bottom); ctx.stroke();
      }
    }
    ctx.restore();
    this.drawLinks(ctx);

    var info = this.el.querySelector(".tp-view");
    if (info) {
      var merged = this.traces.some(function (tr) { return tr.lanes.merge_ns && !tr.ev; });
      var res = niceStep(v1 - v0, 10);
      info.textContent = "showing " + fmtAt(v0, res) + " – " + fmtAt(v1, res) + " of " + fmtTime(this.span) +
        (merged ? " (overlap pieces merged below a pixel)" : "");
    }
  };

  function init() {
    var els = document.querySelectorAll(".tp-timeline");
    for (var i = 0; i < els.length; i++) {
      try {
        var src = document.getElementById(els[i].getAttribute("data-payload"));
        if (!src) { throw new Error("no payload for timeline " + i); }
        var tl = new Timeline(els[i], JSON.parse(src.textContent));
        els[i].tpTimeline = tl;
        tl.start().catch(function (err) { reportError("timeline: " + (err && err.stack ? err.stack : err)); });
      } catch (err) {
        reportError("timeline " + i + ": " + (err && err.stack ? err.stack : err));
      }
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", init);
  } else {
    init();
  }
}());
