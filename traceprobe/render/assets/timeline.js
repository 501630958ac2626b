/* traceprobe timeline: draws every .tp-timeline element of the page on a canvas.
 *
 * Data: the element's data-payload names the JSON script element (application/json) holding
 * the payload of traceprobe.render.lanes.Lanes.to_payload(): rows (lanes and overlap
 * bands) whose pieces are delta-coded [gap, length, ...] int ns from the window start,
 * (optionally with per-piece busy density in per mille after downsampling) and steps
 * [[n, start, end], ...]. Colours come from the CSS variables --tp-<kind>. Each pixel
 * column shows the kind that ran longest in it, paler the less of it was busy.
 *
 * Interaction: mouse wheel zooms around the pointer, dragging pans, the buttons zoom
 * and reset, hovering names the piece under the pointer. After each draw the element
 * gets data-rendered="N lanes"; any error is written into #errors. Self-contained:
 * no network, no libraries.
 */
(function () {
  "use strict";

  var AXIS_H = 22, STEP_H = 16, LANE_H = 18, BAND_H = 11, GAP_H = 6, GUTTER = 200;
  var MIN_VIEW_NS = 20;

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

  function decode(list) {
    var n = Math.floor(list.length / 2), s = new Float64Array(n), e = new Float64Array(n), t = 0;
    for (var i = 0; i < n; i++) {
      t += list[2 * i]; s[i] = t;
      t += list[2 * i + 1]; e[i] = t;
    }
    return { s: s, e: e };
  }

  // First piece whose end is after t (pieces are sorted and disjoint).
  function firstEndingAfter(p, t) {
    var lo = 0, hi = p.e.length;
    while (lo < hi) {
      var mid = (lo + hi) >> 1;
      if (p.e[mid] <= t) { lo = mid + 1; } else { hi = mid; }
    }
    return lo;
  }

  function pieceAt(p, t) {
    var i = firstEndingAfter(p, t);
    return i < p.s.length && p.s[i] <= t ? i : -1;
  }

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

  function niceStep(range, count) {
    var raw = range / Math.max(1, count), mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var steps = [1, 2, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (steps[i] * mag >= raw) { return steps[i] * mag; }
    }
    return 10 * mag;
  }

  function Timeline(el, data) {
    this.el = el;
    this.data = data;
    this.span = Math.max(1, data.span_ns);
    this.canvas = el.querySelector("canvas");
    this.readout = el.querySelector(".tp-readout");
    var style = window.getComputedStyle(el);
    this.color = function (kind) {
      return (style.getPropertyValue("--tp-" + kind) || "").trim() || "#888";
    };
    this.rows = [];
    var y = AXIS_H + (data.steps.length ? STEP_H : 0) + 4, lastDevice = null;
    for (var i = 0; i < data.rows.length; i++) {
      var r = data.rows[i], h = r.type === "lane" ? LANE_H : BAND_H;
      if (r.device !== null && lastDevice !== null && r.device !== lastDevice) { y += GAP_H; }
      if (r.device !== null) { lastDevice = r.device; }
      var row = { src: r, y: y, h: h, sets: [], colors: [] };
      for (var q = 0; q < data.kinds.length; q++) {  // a fixed kind order breaks ties alike
        var kind = data.kinds[q];
        if (Object.prototype.hasOwnProperty.call(r.kinds, kind)) {
          var dens = r.density && r.density[kind];
          row.sets.push({ kind: kind, p: decode(r.kinds[kind]), d: dens ? new Float32Array(dens) : null });
          row.colors.push(this.color(kind));
        }
      }
      this.rows.push(row);
      y += h + 2;
    }
    this.height = Math.max(y + 4, AXIS_H + 40);
    this.reset();
    this.bind();
  }

  Timeline.prototype.reset = function () {
    this.v0 = 0;
    this.v1 = this.span;
    this.draw();
  };

  Timeline.prototype.plotWidth = function () {
    return Math.max(50, this.cssWidth - GUTTER - 8);
  };

  Timeline.prototype.timeAt = function (x) {
    return this.v0 + (x - GUTTER) / this.plotWidth() * (this.v1 - this.v0);
  };

  Timeline.prototype.zoom = function (factor, centreX) {
    var t = this.timeAt(centreX === undefined ? GUTTER + this.plotWidth() / 2 : centreX);
    var width = Math.min(this.span, Math.max(MIN_VIEW_NS, (this.v1 - this.v0) * factor));
    var frac = (t - this.v0) / (this.v1 - this.v0);
    this.setView(t - frac * width, t - frac * width + width);
  };

  Timeline.prototype.setView = function (a, b) {
    var w = b - a;
    if (a < 0) { a = 0; b = w; }
    if (b > this.span) { b = this.span; a = Math.max(0, b - w); }
    this.v0 = a;
    this.v1 = b;
    this.draw();
  };

  Timeline.prototype.bind = function () {
    var self = this, c = this.canvas, drag = null;
    c.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var x = ev.offsetX;
      if (x < GUTTER) { x = GUTTER; }
      self.zoom(Math.exp(ev.deltaY * 0.002), x);
    }, { passive: false });
    c.addEventListener("mousedown", function (ev) {
      drag = { x: ev.clientX, v0: self.v0, v1: self.v1 };
      c.classList.add("tp-dragging");
    });
    window.addEventListener("mouseup", function () {
      drag = null;
      c.classList.remove("tp-dragging");
    });
    window.addEventListener("mousemove", function (ev) {
      if (!drag) { return; }
      var dt = (ev.clientX - drag.x) / self.plotWidth() * (drag.v1 - drag.v0);
      self.setView(drag.v0 - dt, drag.v1 - dt);
    });
    c.addEventListener("mousemove", function (ev) { self.hover(ev.offsetX, ev.offsetY); });
    c.addEventListener("dblclick", function () { self.reset(); });
    var on = function (cls, fn) {
      var b = self.el.querySelector(cls);
      if (b) { b.addEventListener("click", fn); }
    };
    on(".tp-reset", function () { self.reset(); });
    on(".tp-zoom-in", function () { self.zoom(0.5); });
    on(".tp-zoom-out", function () { self.zoom(2); });
    var pending = false;
    window.addEventListener("resize", function () {
      if (pending) { return; }
      pending = true;
      window.requestAnimationFrame(function () { pending = false; self.draw(); });
    });
  };

  Timeline.prototype.hover = function (x, y) {
    if (!this.readout) { return; }
    if (x < GUTTER) { this.readout.textContent = ""; return; }
    var t = this.timeAt(x), text = "at " + fmtTime(t);
    for (var i = 0; i < this.rows.length; i++) {
      var row = this.rows[i];
      if (y < row.y || y > row.y + row.h) { continue; }
      text += " · " + row.src.label;
      var tol = 2 * (this.v1 - this.v0) / this.plotWidth();
      for (var j = 0; j < row.sets.length; j++) {
        var p = row.sets[j].p, k = pieceAt(p, t);
        if (k < 0) { k = pieceAt(p, t - tol); }
        if (k < 0) { k = pieceAt(p, t + tol); }
        if (k >= 0) {
          var d = row.sets[j].d;
          text += " · " + row.sets[j].kind + " " + fmtTime(p.s[k]) + " – " + fmtTime(p.e[k]) +
            " (" + fmtTime(p.e[k] - p.s[k]) +
            (d ? ", merged: " + (d[k] / 10).toFixed(1) + "% busy" : "") + ")";
          break;
        }
      }
    }
    this.readout.textContent = text;
  };

  // Each pixel column shows the kind that ran longest in it, more opaque the more of
  // the pixel was busy (as traceprobe.render.lanes.raster does for the PNG).
  Timeline.prototype.drawRow = function (ctx, row) {
    var W = Math.floor(this.plotWidth()), K = row.sets.length;
    if (!K || W < 1) { return; }
    var v0 = this.v0, v1 = this.v1, k = W / (v1 - v0);
    var cov = new Float32Array(K * W);
    for (var j = 0; j < K; j++) {
      var p = row.sets[j].p, d = row.sets[j].d, n = p.s.length, base = j * W;
      for (var i = firstEndingAfter(p, v0); i < n && p.s[i] < v1; i++) {
        var a = (Math.max(p.s[i], v0) - v0) * k, b = (Math.min(p.e[i], v1) - v0) * k;
        var w = d ? d[i] / 1000 : 1, ia = Math.floor(a), ib = Math.floor(b);
        if (ib >= W) { ib = W - 1; b = Math.min(b, W); }
        if (ia === ib) { cov[base + ia] += (b - a) * w; continue; }
        cov[base + ia] += (ia + 1 - a) * w;
        for (var x = ia + 1; x < ib; x++) { cov[base + x] += w; }
        cov[base + ib] += (b - ib) * w;
      }
    }
    var runX = -1, runKind = -1, runAlpha = 0;
    var flush = function (end) {
      if (runX >= 0 && runKind >= 0) {
        ctx.globalAlpha = runAlpha;
        ctx.fillStyle = row.colors[runKind];
        ctx.fillRect(GUTTER + runX, row.y, end - runX, row.h);
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
    var W = this.plotWidth(), x1 = GUTTER + W, v0 = this.v0, v1 = this.v1;
    var X = function (t) { return GUTTER + (t - v0) / (v1 - v0) * W; };
    ctx.font = "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
    ctx.textBaseline = "middle";

    // time axis and grid
    var step = niceStep(v1 - v0, Math.max(2, Math.floor(W / 110)));
    ctx.strokeStyle = "#e3e3e3";
    ctx.fillStyle = "#555";
    ctx.textAlign = "center";
    for (var t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      var gx = Math.round(X(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(gx, AXIS_H - 4); ctx.lineTo(gx, this.height); ctx.stroke();
      var label = fmtTime(t), half = ctx.measureText(label).width / 2 + 2;
      ctx.fillText(label, Math.min(Math.max(gx, GUTTER + half), this.cssWidth - half), AXIS_H / 2 - 1);
    }
    ctx.strokeStyle = "#999";
    ctx.beginPath(); ctx.moveTo(GUTTER, AXIS_H - 0.5); ctx.lineTo(x1, AXIS_H - 0.5); ctx.stroke();

    // steps: a labelled box each, and a dashed boundary through all rows
    var steps = this.data.steps;
    if (steps.length) {
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

    // rows
    for (var i = 0; i < this.rows.length; i++) {
      var row = this.rows[i];
      ctx.textAlign = "left";
      ctx.fillStyle = row.src.type === "lane" ? "#222" : this.color(row.src.kind);
      ctx.font = (row.src.type === "lane" ? "" : "italic ") +
        "11px system-ui, -apple-system, 'Segoe UI', sans-serif";
      ctx.fillText(row.src.label, 8, row.y + row.h / 2, GUTTER - 14);
      ctx.fillStyle = row.src.type === "lane" ? "#fafafa" : "#f7f4fb";
      ctx.fillRect(GUTTER, row.y, W, row.h);
      this.drawRow(ctx, row);
    }
    if (!this.rows.length) {
      ctx.textAlign = "left";
      ctx.fillStyle = "#666";
      ctx.fillText("No GPU activity in this window.", GUTTER, AXIS_H + 20);
    }

    if (steps.length) {
      ctx.save();
      ctx.strokeStyle = this.color("step");
      ctx.setLineDash([4, 3]);
      var top = AXIS_H + 1, bottom = this.height - 2;
      var marks = steps.map(function (st) { return st[1]; });
      marks.push(steps[steps.length - 1][2]);
      for (var m = 0; m < marks.length; m++) {
        var mx = Math.round(X(marks[m])) + 0.5;
        if (mx < GUTTER || mx > x1) { continue; }
        ctx.beginPath(); ctx.moveTo(mx, top); ctx.lineTo(mx, bottom); ctx.stroke();
      }
      ctx.restore();
    }

    var info = this.el.querySelector(".tp-view");
    if (info) {
      info.textContent = "showing " + fmtTime(v0) + " – " + fmtTime(v1) + " of " + fmtTime(this.span) +
        (this.data.merge_ns ? " (pieces closer than " + fmtTime(this.data.merge_ns) + " merged)" : "");
    }
    this.el.setAttribute("data-rendered", this.data.lanes + " lanes");
  };

  function init() {
    var els = document.querySelectorAll(".tp-timeline");
    for (var i = 0; i < els.length; i++) {
      try {
        var src = document.getElementById(els[i].getAttribute("data-payload"));
        if (!src) { throw new Error("no payload for timeline " + i); }
        els[i].tpTimeline = new Timeline(els[i], JSON.parse(src.textContent));
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
