// view.js: physc view's page. The data are inline (physc-data); nothing is fetched. Plain
// canvas 2-D drawing: a scene of points and segments and two error curves need no library.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($("physc-data").textContent);
  const COLORS = ["#d1495b", "#2e86ab", "#3c9d4e", "#8e6bbf", "#e08a1e", "#00798c"];
  const GHOST = "rgba(60, 60, 60, 0.35)";

  // ---- the runs' data ----
  function decode(b64) {
    const bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }
  function parseCsv(text) {
    const lines = text.trim().split("\n"), head = lines[0].split(",");
    return { head, rows: lines.slice(1).map((l) => l.split(",").map(Number)) };
  }
  const runs = data.runs.map((r, i) => {
    // each time: the truth's W rows (N coordinates, then velocities; format 1: coordinates only), then the model's
    const s = r.scene, N = s.coords, W = s.rows || N, T = s.times, n = s.trajectories;
    const label = r.seed === undefined ? s.model : `${s.model} (seed ${r.seed}${r.size ? `, ${r.size} trajectories` : ""})`;
    const run = { name: r.name, label, visible: true, scene: s, metrics: r.metrics, color: COLORS[i % COLORS.length], N, W, T, n,
                  pos: decode(r.rollouts), series: {}, perTraj: null };
    if (run.pos.length !== n * T * 2 * W) throw new Error(`${r.name}: rollouts.bin holds ${run.pos.length} numbers, not ${n * T * 2 * W}`);
    const e = parseCsv(r.errors);
    e.head.slice(2).forEach((h, j) => {
      const v = new Float64Array(n * T).fill(NaN);
      for (const row of e.rows) if (row[1] / s.dt < T + 0.5) v[row[0] * T + Math.round(row[1] / s.dt)] = row[2 + j];
      run.series[h] = v;
    });
    const t = parseCsv(r.trajectories);
    run.perTraj = t.rows.map((row) => row[1]); // its relative error over the rollout
    return run;
  });
  const base = runs[0], S = base.scene, D = S.dim, T = base.T, NT = base.n;
  const vis = () => runs.filter((r) => r.visible); // the models drawn (the legend's boxes); the truth is always

  // ---- geometry: a coordinate vector to world points ----
  // A body's point with coefficients c along its axes: centre + sum c_i (axis_i - centre) for
  // Cartesian points (CHNN Eq. 9), q + R c for an SO(3) body (R row-major).
  function bodyPoint(x, o, b, c) {
    const f = b.first_coord, p = [];
    for (let d = 0; d < D; d++) p.push(x[o + f + d]);
    if (!c || !c.length) return p;
    for (let i = 0; i < c.length; i++)
      for (let d = 0; d < D; d++)
        p[d] += c[i] * (b.state === "so3" ? x[o + f + D + d * D + i] : x[o + f + (i + 1) * D + d] - x[o + f + d]);
    return p;
  }
  function frame(run, traj, k, model) { // world points of the bodies and segments at time k
    const x = run.pos, o = (traj * run.T + k) * 2 * run.W + (model ? run.W : 0), sc = run.scene;
    const bodies = sc.bodies.map((b) => {
      const centre = bodyPoint(x, o, b, null), axes = [];
      for (let i = 0; i < b.n; i++) { const c = new Array(b.n).fill(0); c[i] = 1; axes.push(bodyPoint(x, o, b, c)); }
      return { centre, axes, so3: b.state === "so3" };
    });
    const end = (e) => (e.world ? e.world.slice(0, D).concat([0, 0, 0]).slice(0, D) : bodyPoint(x, o, sc.bodies[e.body], e.c));
    const segs = sc.segments.map((s) => [end(s.a), end(s.b)]);
    const finite = bodies.every((b) => b.centre.every(Number.isFinite));
    return { bodies, segs, finite };
  }

  // ---- the camera: 2-D as it is, 3-D orbit (drag), zoom (wheel), pan (shift-drag) ----
  const cam = { yaw: 0.6, pitch: 0.35, zoom: 1, panX: 0, panY: 0 };
  let bounds = null;
  function fitBounds() {
    const lo = new Array(D).fill(Infinity), hi = new Array(D).fill(-Infinity);
    for (let k = 0; k < T; k++)
      for (const m of [false, true]) {
        const f = frame(base, state.traj, k, m);
        // (an SO(3) body's frame is a direction of unit length, drawn at the scene's scale: not a point)
        const pts = f.bodies.flatMap((b) => (b.so3 ? [b.centre] : [b.centre, ...b.axes])).concat(f.segs.flat());
        for (const p of pts) if (p.every(Number.isFinite)) for (let d = 0; d < D; d++) { lo[d] = Math.min(lo[d], p[d]); hi[d] = Math.max(hi[d], p[d]); }
      }
    const mid = lo.map((l, d) => (l + hi[d]) / 2), span = Math.max(1e-9, ...lo.map((l, d) => hi[d] - l));
    bounds = { mid, span };
  }
  function project(p, cv, half) { // world to canvas pixels; half: -1 left, 1 right, 0 whole
    const w = half ? cv.width / 2 : cv.width, x0 = half > 0 ? cv.width / 2 : 0;
    const s = (0.8 * Math.min(w, cv.height) / bounds.span) * cam.zoom;
    let u = p[0] - bounds.mid[0], v = p[1] - bounds.mid[1], depth = 0;
    if (D === 3) {
      const z = p[2] - bounds.mid[2], cy = Math.cos(cam.yaw), sy = Math.sin(cam.yaw), cp = Math.cos(cam.pitch), sp = Math.sin(cam.pitch);
      const xr = cy * u - sy * v, yr = sy * u + cy * v; // about z (up)
      u = xr; v = cp * z - sp * yr; depth = cp * yr + sp * z;
    }
    return [x0 + w / 2 + cam.panX + s * u, cv.height / 2 + cam.panY - s * v, depth];
  }

  // ---- state, controls ----
  const state = { traj: 0, k: 0, playing: false, layout: "overlay", speed: 1, phase: 0 };
  const order = base.perTraj.map((e, i) => [e, i]).filter((p) => Number.isFinite(p[0])).sort((a, b) => a[0] - b[0]);
  function fillPicker() {
    const sel = $("traj"), add = (v, label) => { const o = document.createElement("option"); o.value = v; o.textContent = label; sel.appendChild(o); };
    if (order.length) {
      add(order[order.length - 1][1], `worst (#${order[order.length - 1][1]})`);
      add(order[Math.floor(order.length / 2)][1], `median (#${order[Math.floor(order.length / 2)][1]})`);
      add(order[0][1], `best (#${order[0][1]})`);
    }
    for (let i = 0; i < NT; i++) add(i, `#${i}: error ${Number.isFinite(base.perTraj[i]) ? base.perTraj[i].toExponential(2) : "none"}`);
    sel.value = String(state.traj);
    const ph = $("phasepick");
    (S.phase || []).forEach((p, i) => { const o = document.createElement("option"); o.value = i; o.textContent = S.names[p[0]]; ph.appendChild(o); });
    ph.value = String(state.phase);
  }
  function fromHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    if (h.has("traj")) state.traj = Math.max(0, Math.min(NT - 1, parseInt(h.get("traj"), 10) || 0));
    if (h.has("t")) state.k = Math.max(0, Math.min(T - 1, Math.round(parseFloat(h.get("t")) / S.dt)));
    if (h.has("layout")) state.layout = h.get("layout") === "side" ? "side" : "overlay";
    if (h.has("hide")) { const hide = h.get("hide").split(","); runs.forEach((r) => { r.visible = !hide.includes(r.name); }); }
    if (h.has("phase")) state.phase = Math.max(0, Math.min((S.phase || [0]).length - 1, parseInt(h.get("phase"), 10) || 0));
  }

  // ---- drawing ----
  function drawFrame(ctx, cv, f, color, ghost, half) {
    ctx.lineCap = "round";
    ctx.strokeStyle = ghost ? GHOST : color;
    ctx.lineWidth = ghost ? 5 : 2.5;
    for (const [a, b] of f.segs) {
      const p = project(a, cv, half), q = project(b, cv, half);
      ctx.beginPath(); ctx.moveTo(p[0], p[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
    }
    const axisColors = ["#c0392b", "#27ae60", "#2c6fbb"];
    for (const b of f.bodies) {
      const c = project(b.centre, cv, half);
      b.axes.forEach((a, i) => { // a rigid body's frame: a line to each axis point (SO(3): a tenth of the scene)
        const L = b.so3 ? 0.1 * bounds.span / cam.zoom : 1;
        const q = project(b.centre.map((c, d) => c + L * (a[d] - c)), cv, half);
        ctx.strokeStyle = ghost ? GHOST : axisColors[i % 3]; ctx.lineWidth = ghost ? 5 : 2;
        ctx.beginPath(); ctx.moveTo(c[0], c[1]); ctx.lineTo(q[0], q[1]); ctx.stroke();
      });
      ctx.fillStyle = ghost ? GHOST : color;
      ctx.beginPath(); ctx.arc(c[0], c[1], ghost ? 9 : 6, 0, 2 * Math.PI); ctx.fill();
    }
  }
  function drawGravity(ctx, cv) { // where the standard library's uniform gravity pulls (scene.json: gravity)
    if (!S.gravity) return;
    const o = project(bounds.mid, cv, 0), p = project(bounds.mid.map((m, d) => m + 0.1 * bounds.span * S.gravity[d] / cam.zoom), cv, 0);
    const dx = p[0] - o[0], dy = p[1] - o[1], len = Math.hypot(dx, dy);
    if (!(len > 1)) return; // (seen end-on)
    const ux = dx / len, uy = dy / len, ax = cv.width - 40, ay = 30, bx = ax + 36 * ux, by = ay + 36 * uy;
    ctx.strokeStyle = "#7a4f00"; ctx.fillStyle = "#7a4f00"; ctx.lineWidth = 2;
    ctx.beginPath(); ctx.moveTo(ax, ay); ctx.lineTo(bx, by); ctx.stroke();
    ctx.beginPath(); ctx.moveTo(bx, by); ctx.lineTo(bx - 8 * ux + 5 * uy, by - 8 * uy - 5 * ux); ctx.lineTo(bx - 8 * ux - 5 * uy, by - 8 * uy + 5 * ux); ctx.fill();
    ctx.font = "12px sans-serif"; ctx.fillText("g", ax - 16, ay + 4);
  }
  function drawAxes(ctx, cv) { // which way the world's axes point
    const names = ["x", "y", "z"], o = project(bounds.mid, cv, 0), len = 0.12 * bounds.span / cam.zoom;
    ctx.font = "12px sans-serif"; ctx.lineWidth = 1.5;
    for (let d = 0; d < D; d++) {
      const p = bounds.mid.slice(); p[d] += len;
      const q = project(p, cv, 0), dx = q[0] - o[0], dy = q[1] - o[1];
      ctx.strokeStyle = "#666"; ctx.beginPath(); ctx.moveTo(40, cv.height - 40); ctx.lineTo(40 + dx, cv.height - 40 + dy); ctx.stroke();
      ctx.fillStyle = "#444"; ctx.fillText(names[d], 40 + 1.15 * dx - 3, cv.height - 40 + 1.15 * dy + 4);
    }
    ctx.fillText(`+: the origin${S.gravity ? "; g: gravity" : ""}`, 10, cv.height - 8);
  }
  function drawOrigin(ctx, cv, half) {
    const o = project(new Array(D).fill(0), cv, half);
    ctx.strokeStyle = "#999"; ctx.lineWidth = 1;
    ctx.beginPath(); ctx.moveTo(o[0] - 6, o[1]); ctx.lineTo(o[0] + 6, o[1]); ctx.moveTo(o[0], o[1] - 6); ctx.lineTo(o[0], o[1] + 6); ctx.stroke();
  }
  function drawTrails(ctx, cv, run, model, color, half) { // each body's centre from t = 0 to now
    ctx.strokeStyle = color; ctx.lineWidth = 1;
    for (let b = 0; b < run.scene.bodies.length; b++) {
      ctx.beginPath();
      let pen = false;
      for (let k = 0; k <= state.k; k++) {
        const c = frame(run, state.traj, k, model).bodies[b].centre;
        if (!c.every(Number.isFinite)) break;
        const p = project(c, cv, half);
        if (pen) ctx.lineTo(p[0], p[1]); else ctx.moveTo(p[0], p[1]);
        pen = true;
      }
      ctx.stroke();
    }
  }
  const shown = { truth: [], model: [] };
  function drawScene() {
    const cv = $("scene"), ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    const side = state.layout === "side", truth = frame(base, state.traj, state.k, false);
    if (!side) drawAxes(ctx, cv);
    drawGravity(ctx, cv);
    drawOrigin(ctx, cv, side ? -1 : 0);
    drawTrails(ctx, cv, base, false, side ? "#999" : "rgba(60, 60, 60, 0.25)", side ? -1 : 0);
    vis().forEach((run) => drawTrails(ctx, cv, run, true, run.color + "80", side ? 1 : 0));
    drawFrame(ctx, cv, truth, "#444", !side, side ? -1 : 0);
    shown.truth = truth.bodies.map((b) => b.centre);
    shown.model = [];
    let lost = [];
    vis().forEach((run) => {
      const f = frame(run, state.traj, state.k, true);
      if (!f.finite) { lost.push(run.name); shown.model.push(null); return; }
      if (side) drawOrigin(ctx, cv, 1);
      drawFrame(ctx, cv, f, run.color, false, side ? 1 : 0);
      shown.model.push(f.bodies.map((b) => b.centre));
    });
    if (side) {
      ctx.fillStyle = "#555"; ctx.font = "14px sans-serif";
      ctx.fillText("truth", 10, 20); ctx.fillText("model", cv.width / 2 + 10, 20);
      ctx.strokeStyle = "#ddd"; ctx.beginPath(); ctx.moveTo(cv.width / 2, 0); ctx.lineTo(cv.width / 2, cv.height); ctx.stroke();
    }
    const note = $("notice");
    note.hidden = !lost.length;
    note.textContent = lost.length ? `${lost.join(", ")}: the model's rollout is not finite at this time (drawn up to where it was)` : "";
  }
  // the curves over time: each of errors.csv's columns a panel (the chaos floor a dashed line
  // in the state error's), on a log axis, with the cursor at the slider's time
  const CURVES = { rel_error: "relative state error", energy_rel_error: "relative energy error",
                   constraint_violation: S.bodies.some((b) => b.state === "so3") ? "constraint & manifold error" : "constraint violation |Phi|",
                   orientation_error: "orientation error (rad)", position_error: "positions |dq| (App. E)" };
  function curveAt(run, key, k) { return run.series[key] ? run.series[key][state.traj * T + k] : NaN; }
  function drawCurves() {
    const cv = $("plot"), ctx = cv.getContext("2d"), W = cv.width, H = cv.height;
    ctx.clearRect(0, 0, W, H);
    const keys = Object.keys(base.series).filter((key) => key !== "chaos_floor");
    const panels = keys.filter((key) => vis().some((run) => { for (let k = 1; k < T; k++) if (curveAt(run, key, k) > 0) return true; return false; }));
    shown.panels = panels;
    const pw = W / Math.max(1, panels.length);
    panels.forEach((key, pi) => {
      const x0 = pi * pw + 60, x1 = (pi + 1) * pw - 15, y0 = 30, y1 = H - 40;
      const floor = key === "rel_error" ? base.series.chaos_floor : null;
      let lo = Infinity, hi = -Infinity;
      const take = (v) => { if (v > 0) { lo = Math.min(lo, v); hi = Math.max(hi, v); } };
      // (from the second time on: at t = 0 the model starts on the truth, its error rounding)
      vis().forEach((run) => { for (let k = 1; k < T; k++) take(curveAt(run, key, k)); });
      if (floor) for (let k = 1; k < T; k++) take(floor[state.traj * T + k]);
      lo = Math.pow(10, Math.floor(Math.log10(lo))); hi = Math.pow(10, Math.ceil(Math.log10(hi)));
      if (hi <= lo) hi = lo * 10;
      const X = (k) => x0 + (x1 - x0) * k / (T - 1), Y = (v) => y1 - (y1 - y0) * (Math.log10(v) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo));
      ctx.strokeStyle = "#888"; ctx.lineWidth = 1; ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
      ctx.fillStyle = "#333"; ctx.font = "12px sans-serif";
      ctx.fillText(`${CURVES[key] || key} (log), #${state.traj}`, x0, y0 - 10);
      const decades = Math.round(Math.log10(hi / lo)), step = Math.max(1, Math.ceil(decades / 6));
      for (let e = Math.round(Math.log10(lo)); e <= Math.log10(hi) + 1e-9; e += step) {
        ctx.fillText(`1e${e}`, x0 - 50, Y(Math.pow(10, e)) + 4);
        ctx.strokeStyle = "#eee"; ctx.beginPath(); ctx.moveTo(x0, Y(Math.pow(10, e))); ctx.lineTo(x1, Y(Math.pow(10, e))); ctx.stroke();
      }
      ctx.fillText("0", x0 - 3, y1 + 15); ctx.fillText(`${((T - 1) * S.dt).toFixed(2)}`, x1 - 20, y1 + 15);
      ctx.fillText("time t", (x0 + x1) / 2 - 15, y1 + 30);
      const line = (value, color, dash) => {
        ctx.strokeStyle = color; ctx.lineWidth = 1.8; ctx.setLineDash(dash); ctx.beginPath();
        let pen = false;
        for (let k = 1; k < T; k++) {
          const v = value(k);
          if (!(v > 0)) { pen = false; continue; }
          if (pen) ctx.lineTo(X(k), Y(Math.max(v, lo))); else ctx.moveTo(X(k), Y(Math.max(v, lo)));
          pen = true;
        }
        ctx.stroke(); ctx.setLineDash([]);
      };
      if (floor) {
        line((k) => floor[state.traj * T + k], "#999", [2, 3]);
        ctx.fillStyle = "#777"; ctx.fillText("dotted: chaos floor", x1 - 110, y1 - 6);
      }
      vis().forEach((run) => line((k) => curveAt(run, key, k), run.color, []));
      ctx.strokeStyle = "#000"; ctx.setLineDash([4, 3]); ctx.beginPath(); ctx.moveTo(X(state.k), y0); ctx.lineTo(X(state.k), y1); ctx.stroke(); ctx.setLineDash([]);
    });
  }

  // a phase portrait of the chosen coordinate (scene.json's pairs: a position and its
  // velocity): the whole trajectory, truth wide and pale, each model dashed, a dot at now
  function drawPhase() {
    const cv = $("phase"), ctx = cv.getContext("2d"), W = cv.width, H = cv.height, x0 = 60, x1 = W - 12, y0 = 26, y1 = H - 40;
    ctx.clearRect(0, 0, W, H);
    const pair = (S.phase || [])[state.phase];
    shown.phase = null;
    if (!pair) return;
    const at = (run, model, k) => { const o = (state.traj * run.T + k) * 2 * run.W + (model ? run.W : 0); return [run.pos[o + pair[0]], run.pos[o + pair[1]]]; };
    let xlo = Infinity, xhi = -Infinity, ylo = Infinity, yhi = -Infinity;
    for (const [run, model] of [[base, false], ...vis().map((r) => [r, true])])
      for (let k = 0; k < T; k++) {
        const [x, y] = at(run, model, k);
        if (Number.isFinite(x) && Number.isFinite(y)) { xlo = Math.min(xlo, x); xhi = Math.max(xhi, x); ylo = Math.min(ylo, y); yhi = Math.max(yhi, y); }
      }
    if (!(xhi >= xlo)) return;
    const padx = (xhi - xlo) * 0.05 || 1e-3, pady = (yhi - ylo) * 0.05 || 1e-3;
    xlo -= padx; xhi += padx; ylo -= pady; yhi += pady;
    const X = (x) => x0 + (x1 - x0) * (x - xlo) / (xhi - xlo), Y = (y) => y1 - (y1 - y0) * (y - ylo) / (yhi - ylo);
    ctx.strokeStyle = "#888"; ctx.lineWidth = 1; ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
    ctx.fillStyle = "#333"; ctx.font = "12px sans-serif";
    ctx.fillText(`${S.names[pair[1]]} against ${S.names[pair[0]]}, trajectory #${state.traj}`, x0, y0 - 8);
    ctx.fillText(xlo.toPrecision(3), x0, y1 + 14); ctx.fillText(xhi.toPrecision(3), x1 - 40, y1 + 14);
    ctx.fillText(`${S.names[pair[0]]} (position)`, (x0 + x1) / 2 - 40, y1 + 30);
    ctx.fillText(yhi.toPrecision(3), 4, y0 + 10); ctx.fillText(ylo.toPrecision(3), 4, y1);
    ctx.save(); ctx.translate(14, (y0 + y1) / 2 + 40); ctx.rotate(-Math.PI / 2); ctx.fillText(`${S.names[pair[1]]} (velocity)`, 0, 0); ctx.restore();
    const path = (run, model, color, width, dash) => {
      ctx.strokeStyle = color; ctx.lineWidth = width; ctx.setLineDash(dash); ctx.beginPath();
      let pen = false;
      for (let k = 0; k < T; k++) {
        const [x, y] = at(run, model, k);
        if (!Number.isFinite(x) || !Number.isFinite(y)) break;
        if (pen) ctx.lineTo(X(x), Y(y)); else ctx.moveTo(X(x), Y(y));
        pen = true;
      }
      ctx.stroke(); ctx.setLineDash([]);
    };
    const dot = (p, color, r) => { if (p.every(Number.isFinite)) { ctx.fillStyle = color; ctx.beginPath(); ctx.arc(X(p[0]), Y(p[1]), r, 0, 2 * Math.PI); ctx.fill(); } };
    path(base, false, GHOST, 5, []);
    vis().forEach((run) => path(run, true, run.color, 1.6, [5, 3]));
    const now = at(base, false, state.k);
    dot(now, "#555", 6);
    shown.phase = { rows: pair, truth: now, model: vis().map((run) => at(run, true, state.k)) };
    vis().forEach((run) => dot(at(run, true, state.k), run.color, 4));
    ctx.fillStyle = "#333"; ctx.fillText("wide grey: truth; dashed: model; dots: now", x0 + 5, y0 + 14);
  }
  function report() { // what the page shows, for tests and scripts
    const curves = {};
    for (const key of Object.keys(base.series)) curves[key] = base.series[key][state.traj * T + state.k];
    $("physc-state").textContent = JSON.stringify({ traj: state.traj, k: state.k, t: state.k * S.dt, layout: state.layout,
      runs: runs.map((r) => r.name), visible: vis().map((r) => r.name), truth: shown.truth, model: shown.model, curves, panels: shown.panels, phase: shown.phase,
      loss_epochs: shown.lossEpochs, gravity: S.gravity || null });
  }
  function draw() {
    $("time").value = String(state.k);
    $("layout").value = state.layout;
    $("clock").textContent = `t = ${(state.k * S.dt).toFixed(3)}`;
    drawScene(); drawCurves(); drawPhase(); report();
  }

  // the loss per epoch (log scale) of each run, training solid and validation dashed, with
  // the integrator floor (the system's own dynamics under the training step) as a grey line
  function drawLoss() {
    const cv = $("loss"), ctx = cv.getContext("2d"), W = cv.width, H = cv.height, x0 = 55, x1 = W - 10, y0 = 24, y1 = H - 36;
    ctx.clearRect(0, 0, W, H);
    const curves = vis().flatMap((r) => [[r, r.metrics.train_loss || [], []], [r, r.metrics.valid_loss || [], [5, 3]]]);
    const floor = base.metrics.integrator_floor, E = Math.max(1, ...curves.map((c) => c[1].length));
    shown.lossEpochs = E;
    let lo = Infinity, hi = -Infinity;
    for (const [, v] of curves) for (const x of v) if (x > 0) { lo = Math.min(lo, x); hi = Math.max(hi, x); }
    if (floor > 0) { lo = Math.min(lo, floor); hi = Math.max(hi, floor); }
    if (!(hi > 0)) return;
    lo = Math.pow(10, Math.floor(Math.log10(lo))); hi = Math.pow(10, Math.ceil(Math.log10(hi))); if (hi <= lo) hi = lo * 10;
    const X = (e) => x0 + (x1 - x0) * (E > 1 ? (e - 1) / (E - 1) : 0.5), Y = (v) => y1 - (y1 - y0) * Math.log10(v / lo) / Math.log10(hi / lo);
    ctx.strokeStyle = "#888"; ctx.lineWidth = 1; ctx.strokeRect(x0, y0, x1 - x0, y1 - y0);
    ctx.fillStyle = "#333"; ctx.font = "12px sans-serif";
    ctx.fillText(`${runs.length > 1 ? "each model's" : `${base.scene.model}:`} loss per epoch (log scale)`, x0, y0 - 8);
    const step = Math.max(1, Math.ceil(Math.log10(hi / lo) / 5));
    for (let e = Math.round(Math.log10(lo)); e <= Math.log10(hi) + 1e-9; e += step) ctx.fillText(`1e${e}`, 5, Y(Math.pow(10, e)) + 4);
    ctx.fillText("1", x0 - 3, y1 + 14); ctx.fillText(String(E), x1 - 12, y1 + 14); ctx.fillText("epoch", (x0 + x1) / 2 - 15, y1 + 28);
    for (const [r, v, dash] of curves) {
      ctx.strokeStyle = r.color; ctx.fillStyle = r.color; ctx.setLineDash(dash); ctx.lineWidth = 1.8; ctx.beginPath();
      v.forEach((x, i) => { if (x > 0) (i ? ctx.lineTo(X(i + 1), Y(x)) : ctx.moveTo(X(i + 1), Y(x))); });
      ctx.stroke(); ctx.setLineDash([]);
      if (v.length === 1 && v[0] > 0) { ctx.beginPath(); ctx.arc(X(1), Y(v[0]), 3, 0, 2 * Math.PI); ctx.fill(); }
    }
    if (floor > 0) {
      ctx.strokeStyle = "#999"; ctx.setLineDash([2, 3]); ctx.beginPath(); ctx.moveTo(x0, Y(floor)); ctx.lineTo(x1, Y(floor)); ctx.stroke(); ctx.setLineDash([]);
      ctx.fillStyle = "#666"; ctx.fillText("integrator floor", x1 - 95, Y(floor) - 4);
    }
    ctx.fillStyle = "#333"; ctx.fillText("solid: training, dashed: validation", x0 + 5, y0 + 14);
  }

  // ---- the page's text ----
  function fillText() {
    const m = base.metrics;
    $("title").textContent = `${S.system}: ${runs.map((r) => `${r.scene.model} (${r.scene.kind})`).join(", ")}`;
    $("subtitle").textContent = `${NT} test trajectories of ${T} times, dt ${S.dt}; the truth is grey${runs.length > 1 ? "" : ", the model in colour"}`;
    $("legend").innerHTML = "";
    const item = (color, text) => { const s = document.createElement("span"); s.innerHTML = `<b style="color:${color}">&#9679;</b> `; s.appendChild(document.createTextNode(text)); $("legend").appendChild(s); };
    item("#777", "truth (ghost)");
    runs.forEach((r) => { // a box per model: drawn or not
      const s = document.createElement("label"), box = document.createElement("input");
      box.type = "checkbox"; box.checked = r.visible; box.setAttribute("data-run", r.name);
      box.addEventListener("change", () => { r.visible = box.checked; drawLoss(); draw(); });
      s.appendChild(box); s.insertAdjacentHTML("beforeend", ` <b style="color:${r.color}">&#9679;</b> `);
      s.appendChild(document.createTextNode(`${r.label}: relative error ${fmt(r.metrics.test_geomean_rel_error)}`));
      $("legend").appendChild(s);
    });
    const rows = (id, pairs) => { const t = $(id); t.innerHTML = ""; for (const [k, v] of pairs) { const tr = t.insertRow(); tr.insertCell().textContent = k; tr.insertCell().textContent = v; } };
    rows("figures", runs.flatMap((r) => [
      [`${r.label}: relative state error`, `${fmt(r.metrics.test_geomean_rel_error)} [${(r.metrics.test_geomean_rel_error_ci95 || []).map(fmt).join(", ")}]`],
      [`${r.label}: relative energy error`, fmt(r.metrics.test_energy_rel_error)],
      [`${r.label}: constraint violation`, fmt(r.metrics.test_constraint_violation)],
      ...(r.metrics.test_orientation_error !== undefined ? [[`${r.label}: orientation error (rad)`, fmt(r.metrics.test_orientation_error)]] : [])]));
    rows("settings", [["system", S.system], ["dimension", D], ["model", `${S.model} (${S.kind})`], ["epochs", m.epochs_done],
      ["parameters", m.param_count], ["precision", m.precision], ["seed", m.seed], ["training trajectories", m.train_trajectories],
      ["test rollouts from", m.eval_from]].filter((p) => p[1] !== undefined));
    $("hint").textContent = D === 3 ? "drag to turn the scene, shift-drag to pan, wheel to zoom" : "shift-drag to pan, wheel to zoom";
  }
  // a sweep's folder: its table of every run (which are drawn marked) and its figures
  function fillSweep() {
    if (!data.sweep) return;
    $("sweep").hidden = false;
    const sum = data.sweep.summary || {}, all = sum.runs || [], t = $("sweeptable");
    const cols = [["rel_error", "relative state error"], ["energy_error", "energy error"], ["constraint_violation", "|Phi|"],
                  ["orientation_error", "orientation error (rad)"]].filter(([k]) => all.some((r) => typeof r[k] === "number"));
    const head = t.createTHead().insertRow();
    for (const h of ["model", "seed", "training trajectories", "status", ...cols.map((c) => c[1]), "drawn"]) head.insertCell().textContent = h;
    const body = t.createTBody();
    for (const r of all) {
      const tr = body.insertRow(), drawn = data.runs.some((d) => d.name === r.model && d.seed === r.seed && (!d.size || d.size === r.train_trajectories));
      for (const v of [r.model, r.seed, r.train_trajectories, r.status]) tr.insertCell().textContent = v === undefined ? "" : String(v);
      for (const [k] of cols) tr.insertCell().textContent = fmt(r[k]);
      tr.insertCell().textContent = drawn ? "yes" : "";
    }
    $("sweepnote").textContent = `${all.length} runs; ${data.runs.length} drawn above (physc view --models, --seed and --size choose others).`;
    for (const fig of data.sweep.figures || []) {
      const box = document.createElement("figure"), img = document.createElement("img"), cap = document.createElement("figcaption");
      img.src = `data:image/svg+xml;base64,${fig.svg}`; img.alt = fig.name; cap.textContent = fig.name;
      box.appendChild(img); box.appendChild(cap); $("sweepfigs").appendChild(box);
    }
  }
  function fmt(v) { return typeof v === "number" && Number.isFinite(v) ? v.toExponential(3) : "none"; }

  // a time unit a second, but a trajectory lasts 4 s at least (TRAPPIST-1's 21 observations
  // span 0.05 years): physc view --mp4 plays at the same clock
  function frameMs() { return Math.max(1000 * S.dt, 4000 / Math.max(1, T - 1)); }

  // ---- events ----
  let last = 0;
  function tick(now) {
    if (!state.playing) return;
    if (last && now - last > frameMs() / state.speed) { state.k = (state.k + 1) % T; last = now; draw(); }
    if (!last) last = now;
    requestAnimationFrame(tick);
  }
  $("play").addEventListener("click", () => { state.playing = !state.playing; $("play").textContent = state.playing ? "pause" : "play"; last = 0; if (state.playing) requestAnimationFrame(tick); });
  $("time").addEventListener("input", (e) => { state.k = parseInt(e.target.value, 10); draw(); });
  $("speed").addEventListener("change", (e) => { state.speed = parseFloat(e.target.value); });
  $("traj").addEventListener("change", (e) => { state.traj = parseInt(e.target.value, 10); fitBounds(); draw(); });
  $("layout").addEventListener("change", (e) => { state.layout = e.target.value; draw(); });
  $("phasepick").addEventListener("change", (e) => { state.phase = parseInt(e.target.value, 10); draw(); });
  window.addEventListener("hashchange", () => { fromHash(); fillText(); drawLoss(); fitBounds(); $("traj").value = String(state.traj); $("phasepick").value = String(state.phase); draw(); });
  const cv = $("scene");
  let drag = null;
  cv.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, shift: e.shiftKey }; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (drag.shift || D < 3) { cam.panX += dx; cam.panY += dy; } else { cam.yaw += dx * 0.01; cam.pitch = Math.max(-1.5, Math.min(1.5, cam.pitch + dy * 0.01)); }
    drag.x = e.clientX; drag.y = e.clientY; drawScene();
  });
  cv.addEventListener("wheel", (e) => { e.preventDefault(); cam.zoom *= e.deltaY < 0 ? 1.1 : 1 / 1.1; drawScene(); }, { passive: false });

  // ---- frames for a video (physc view --mp4): #frames=A-B&size=WxH draws the scene at each
  // time from A to B with a caption, each frame a PNG (base64) a line of physc-frames ----
  function renderFrames(spec) {
    const [a, b] = spec.split("-").map((x) => parseInt(x, 10));
    const size = (new URLSearchParams(location.hash.slice(1)).get("size") || "1280x720").split("x").map(Number);
    const out = document.createElement("canvas"), ctx = out.getContext("2d"), head = 44;
    out.width = size[0]; out.height = size[1];
    cv.width = size[0]; cv.height = size[1] - head;
    fitBounds();
    const lines = [], names = vis().map((r) => r.label).join(", ");
    for (let k = Math.max(0, a); k <= Math.min(T - 1, b); k++) {
      state.k = k;
      drawScene();
      ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, out.width, out.height);
      ctx.drawImage(cv, 0, head);
      ctx.fillStyle = "#1f3b57"; ctx.fillRect(0, 0, out.width, head);
      ctx.fillStyle = "#fff"; ctx.font = "bold 18px sans-serif";
      ctx.fillText(`${S.system}: ${names}, test trajectory #${state.traj}`, 14, 20);
      ctx.font = "14px sans-serif";
      ctx.fillText(`${state.layout === "side" ? "truth left, model right" : "truth: grey ghost; model in colour"}`, 14, 38);
      ctx.font = "bold 18px sans-serif";
      ctx.fillText(`t = ${(k * S.dt).toFixed(3)}`, out.width - 130, 28);
      lines.push(out.toDataURL("image/png").slice("data:image/png;base64,".length));
    }
    $("physc-frames").textContent = lines.join("\n");
  }

  $("time").max = String(T - 1);
  (function widestPhase() { // the portrait opens on the coordinate that moves most (not a star's micro-wobble)
    let best = 0, span = -1;
    (S.phase || []).forEach((p, i) => {
      let lo = Infinity, hi = -Infinity;
      for (let k = 0; k < T; k++) { const v = base.pos[k * 2 * base.W + p[0]]; if (Number.isFinite(v)) { lo = Math.min(lo, v); hi = Math.max(hi, v); } }
      if (hi - lo > span) { span = hi - lo; best = i; }
    });
    state.phase = best;
  })();
  fromHash();
  fillPicker();
  fillText();
  fillSweep();
  fitBounds();
  drawLoss();
  draw();
  const frames = new URLSearchParams(location.hash.slice(1)).get("frames");
  if (frames) renderFrames(frames);
})();
