// GOAT Memory link map: Pages / Map / Connections views over the embedded JSON data.
// No network: everything this page needs is in this file and the JSON script element.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("goat-map-data").textContent);
  var nodes = data.nodes;
  var edges = data.edges;
  var N = nodes.length;
  var pageCount = 0;
  var i;
  for (i = 0; i < N; i++) if (!nodes[i].missing) pageCount++;
  var body = document.body;
  var selected = -1;

  // Adjacency (graph edges only: resolved page-to-page and page-to-missing, no self loops).
  var graphEdges = [];
  var outgoing = [];
  var incoming = [];
  for (i = 0; i < N; i++) { outgoing.push([]); incoming.push([]); }
  edges.forEach(function (e, k) {
    outgoing[e[0]].push(k);
    if (e[1] >= 0) {
      if (e[1] !== e[0]) incoming[e[1]].push(k);
      if (e[1] !== e[0]) graphEdges.push([e[0], e[1]]);
    }
  });
  var degree = new Float32Array(N);
  graphEdges.forEach(function (e) { degree[e[0]]++; degree[e[1]]++; });
  var byDegree = [];
  for (i = 0; i < N; i++) byDegree.push(i);
  byDegree.sort(function (a, b) {
    return (nodes[a].missing - nodes[b].missing) || (degree[b] - degree[a]) || (a - b);
  });

  var missingCount = N - pageCount;
  document.getElementById("stats").textContent =
    pageCount + " pages \u00b7 " + edges.length + " links \u00b7 " + missingCount + " missing";

  // ---- views -------------------------------------------------------------------------------
  var views = ["pages", "map", "connections"];
  var current = null;
  function show(view) {
    current = view;
    views.forEach(function (v) {
      document.getElementById("view-" + v).hidden = v !== view;
      var tab = document.getElementById("tab-" + v);
      tab.setAttribute("aria-selected", v === view ? "true" : "false");
      tab.tabIndex = v === view ? 0 : -1;
    });
    if (view === "map") { resize(); draw(); }
  }
  views.forEach(function (v) {
    document.getElementById("tab-" + v).addEventListener("click", function () { show(v); });
  });

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  // ---- Pages view --------------------------------------------------------------------------
  var list = document.getElementById("page-list");
  var items = [];
  var frag = document.createDocumentFragment();
  for (i = 0; i < N; i++) {
    if (nodes[i].missing) continue;
    var li = el("li", "page");
    li.dataset.node = String(i);
    li.setAttribute("role", "option");
    li.appendChild(el("span", "title", nodes[i].title));
    if (nodes[i].id !== nodes[i].title) li.appendChild(el("span", "path", nodes[i].id));
    li.appendChild(el("span", "meta", outgoing[i].length + " out \u00b7 " +
      incoming[i].length + " in"));
    items[i] = li;
    frag.appendChild(li);
  }
  list.appendChild(frag);
  list.addEventListener("click", function (ev) {
    var t = ev.target.closest("li.page");
    if (t) { select(Number(t.dataset.node)); show("connections"); }
  });
  var filter = document.getElementById("filter");
  filter.addEventListener("input", function () {
    var q = filter.value.toLowerCase();
    for (var j = 0; j < N; j++) {
      if (!items[j]) continue;
      var hay = (nodes[j].title + " " + nodes[j].id).toLowerCase();
      items[j].hidden = q !== "" && hay.indexOf(q) < 0;
    }
  });

  // ---- Connections view --------------------------------------------------------------------
  var conn = document.getElementById("connections");
  function nodeLabel(k) { return k >= 0 ? nodes[k].title : ""; }
  function linkItem(raw, targetIndex, resolution, extra, nav) {
    var li = el("li", nav ? "nav" : "");
    if (resolution === "missing") {
      li.appendChild(el("span", "missing-text", targetIndex >= 0 ? nodeLabel(targetIndex) : raw));
      li.appendChild(el("span", "tag", "missing"));
    } else if (resolution === "attachment") {
      li.appendChild(el("span", "title", extra));
      li.appendChild(el("span", "tag", "attachment"));
    } else if (resolution === "self") {
      li.appendChild(el("span", "title", "this page"));
      li.appendChild(el("span", "tag", "self"));
    } else {
      li.appendChild(el("span", "title", nodeLabel(targetIndex)));
      if (resolution === "ambiguous") li.appendChild(el("span", "tag", "ambiguous"));
    }
    li.appendChild(el("code", "", raw));
    if (nav && targetIndex >= 0 && !nodes[targetIndex].missing) {
      li.dataset.node = String(targetIndex);
    }
    return li;
  }
  function renderConnections() {
    conn.textContent = "";
    if (selected < 0) {
      conn.appendChild(el("p", "empty", "Select a page in Pages or on the Map."));
      return;
    }
    var n = nodes[selected];
    conn.appendChild(el("h2", "", n.title));
    if (n.missing) {
      conn.appendChild(el("p", "missing-text", "No note with this name exists (missing link)."));
    } else {
      conn.appendChild(el("p", "path", n.id));
    }
    var outs = outgoing[selected];
    var details = !n.missing && data.links[n.id];
    conn.appendChild(el("h3", "", "Outgoing links (" + outs.length + ")"));
    var ul = el("ul");
    outs.forEach(function (k, pos) {
      var e = edges[k];
      var li = linkItem(e[2], e[1], e[3], e[4], true);
      if (details && details[pos] && details[pos].raw === e[2]) {
        li.appendChild(el("span", "meta", "line " + details[pos].line));
      }
      ul.appendChild(li);
    });
    if (!outs.length) ul.appendChild(el("li", "empty", "none"));
    conn.appendChild(ul);
    var ins = incoming[selected];
    conn.appendChild(el("h3", "", "Backlinks (" + ins.length + ")"));
    ul = el("ul");
    ins.forEach(function (k) {
      var e = edges[k];
      var li = el("li", "nav");
      li.dataset.node = String(e[0]);
      li.appendChild(el("span", "title", nodes[e[0]].title));
      li.appendChild(el("code", "", e[2]));
      ul.appendChild(li);
    });
    if (!ins.length) ul.appendChild(el("li", "empty", "none"));
    conn.appendChild(ul);
  }
  conn.addEventListener("click", function (ev) {
    var t = ev.target.closest("li[data-node]");
    if (t) select(Number(t.dataset.node));
  });

  function select(k) {
    if (selected >= 0 && items[selected]) {
      items[selected].classList.remove("selected");
      items[selected].setAttribute("aria-selected", "false");
    }
    selected = k;
    if (k >= 0 && items[k]) {
      items[k].classList.add("selected");
      items[k].setAttribute("aria-selected", "true");
      if (current !== "pages" && items[k].scrollIntoView) items[k].scrollIntoView({ block: "nearest" });
    }
    body.dataset.selected = k >= 0 ? (nodes[k].id || nodes[k].title) : "";
    renderConnections();
    draw();
  }

  // ---- graph layout ------------------------------------------------------------------------
  var x = new Float32Array(N), y = new Float32Array(N);
  var vx = new Float32Array(N), vy = new Float32Array(N);
  var golden = Math.PI * (3 - Math.sqrt(5));
  for (i = 0; i < N; i++) {  // deterministic phyllotaxis start
    var r = 12 * Math.sqrt(i + 0.5);
    x[i] = r * Math.cos(i * golden);
    y[i] = r * Math.sin(i * golden);
  }
  var maxIter = N <= 500 ? 300 : N <= 2000 ? 160 : N <= 10000 ? 70 : 30;
  var iter = 0;
  var LINK = 36, CELL = 60, REPEL = 900;
  var pinned = -1;

  function tick() {
    var alpha = 1 - iter / maxIter;
    var j, k, cx, cy;
    // Repulsion between nodes in neighbouring grid cells (an O(n) approximation).
    var grid = new Map();
    for (j = 0; j < N; j++) {
      var key = Math.floor(x[j] / CELL) * 65536 + Math.floor(y[j] / CELL);
      var cell = grid.get(key);
      if (cell) cell.push(j); else grid.set(key, [j]);
    }
    for (j = 0; j < N; j++) {
      cx = Math.floor(x[j] / CELL); cy = Math.floor(y[j] / CELL);
      for (var gx = cx - 1; gx <= cx + 1; gx++) {
        for (var gy = cy - 1; gy <= cy + 1; gy++) {
          var c = grid.get(gx * 65536 + gy);
          if (!c) continue;
          for (var m = 0; m < c.length; m++) {
            k = c[m];
            if (k <= j) continue;
            var dx = x[j] - x[k], dy = y[j] - y[k];
            var d2 = dx * dx + dy * dy;
            if (d2 > CELL * CELL) continue;
            if (d2 < 0.01) { dx = (j % 7) - 3 + 0.1; dy = (k % 5) - 2 + 0.1; d2 = dx * dx + dy * dy; }
            var f = REPEL * alpha / d2;
            vx[j] += dx * f / 10; vy[j] += dy * f / 10;
            vx[k] -= dx * f / 10; vy[k] -= dy * f / 10;
          }
        }
      }
    }
    // Springs along links.
    for (j = 0; j < graphEdges.length; j++) {
      var a = graphEdges[j][0], b = graphEdges[j][1];
      var ex = x[b] - x[a], ey = y[b] - y[a];
      var d = Math.sqrt(ex * ex + ey * ey) || 1;
      var s = (d - LINK) / d * 0.05 * alpha;
      var wa = 1 / (1 + degree[a]), wb = 1 / (1 + degree[b]);
      vx[a] += ex * s * wb * 2; vy[a] += ey * s * wb * 2;
      vx[b] -= ex * s * wa * 2; vy[b] -= ey * s * wa * 2;
    }
    // Gentle pull to the centre so disconnected parts stay in view.
    for (j = 0; j < N; j++) {
      vx[j] -= x[j] * 0.004 * alpha; vy[j] -= y[j] * 0.004 * alpha;
      if (j === pinned) { vx[j] = vy[j] = 0; continue; }
      vx[j] *= 0.6; vy[j] *= 0.6;
      x[j] += vx[j]; y[j] += vy[j];
    }
    iter++;
  }

  // ---- drawing -----------------------------------------------------------------------------
  var canvas = document.getElementById("graph");
  var ctx = canvas.getContext("2d");
  var W = 0, H = 0, dpr = 1;
  var view = { s: 1, tx: 0, ty: 0 };
  var userMoved = false;
  var fitScale = 0;
  function resize() {
    var rect = canvas.getBoundingClientRect();
    dpr = window.devicePixelRatio || 1;
    W = Math.max(1, rect.width); H = Math.max(1, rect.height);
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
  }
  function fit() {
    if (!N) return;
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (var j = 0; j < N; j++) {
      if (x[j] < x0) x0 = x[j]; if (x[j] > x1) x1 = x[j];
      if (y[j] < y0) y0 = y[j]; if (y[j] > y1) y1 = y[j];
    }
    var s = Math.min(W / (x1 - x0 + 80), H / (y1 - y0 + 80));
    view.s = Math.min(2, s);
    fitScale = view.s;
    view.tx = W / 2 - view.s * (x0 + x1) / 2;
    view.ty = H / 2 - view.s * (y0 + y1) / 2;
  }
  function radius(j) { return (nodes[j].missing ? 3.5 : 4) + Math.min(6, Math.sqrt(degree[j])); }
  var drawn = false;
  function draw() {
    if (current !== "map" || !W) return;
    if (!userMoved) fit();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.setTransform(dpr * view.s, 0, 0, dpr * view.s, dpr * view.tx, dpr * view.ty);
    var j, a, b;
    ctx.lineWidth = 1 / view.s;
    ctx.strokeStyle = "rgba(120,120,120,0.35)";
    ctx.beginPath();
    for (j = 0; j < graphEdges.length; j++) {
      a = graphEdges[j][0]; b = graphEdges[j][1];
      ctx.moveTo(x[a], y[a]); ctx.lineTo(x[b], y[b]);
    }
    ctx.stroke();
    if (selected >= 0) {  // the selected page's links, darker grey (neutral, no accent)
      ctx.strokeStyle = "rgba(60,60,60,0.9)";
      ctx.lineWidth = 1.5 / view.s;
      ctx.beginPath();
      for (j = 0; j < graphEdges.length; j++) {
        a = graphEdges[j][0]; b = graphEdges[j][1];
        if (a !== selected && b !== selected) continue;
        ctx.moveTo(x[a], y[a]); ctx.lineTo(x[b], y[b]);
      }
      ctx.stroke();
    }
    ctx.fillStyle = "#7a7a7a";
    ctx.beginPath();
    for (j = 0; j < N; j++) {
      if (nodes[j].missing) continue;
      var rr = radius(j);
      ctx.moveTo(x[j] + rr, y[j]);
      ctx.arc(x[j], y[j], rr, 0, 2 * Math.PI);
    }
    ctx.fill();
    ctx.fillStyle = "#ffffff";
    ctx.strokeStyle = "#7a7a7a";
    ctx.lineWidth = 1.5 / view.s;
    ctx.setLineDash([3 / view.s, 2 / view.s]);
    ctx.beginPath();
    for (j = 0; j < N; j++) {
      if (!nodes[j].missing) continue;
      ctx.moveTo(x[j] + radius(j), y[j]);
      ctx.arc(x[j], y[j], radius(j), 0, 2 * Math.PI);
    }
    ctx.fill(); ctx.stroke();
    ctx.setLineDash([]);
    if (selected >= 0) {  // neutral selection: a dark grey ring with a light grey halo
      var sr = radius(selected) + 4 / view.s;
      ctx.fillStyle = "rgba(200,200,200,0.6)";
      ctx.beginPath(); ctx.arc(x[selected], y[selected], sr + 3 / view.s, 0, 2 * Math.PI); ctx.fill();
      ctx.strokeStyle = "#3a3a3a";
      ctx.lineWidth = 2 / view.s;
      ctx.beginPath(); ctx.arc(x[selected], y[selected], sr, 0, 2 * Math.PI); ctx.stroke();
    }
    // Labels: every node when few, else the best-linked ones, more as the user zooms in.
    var room = Math.floor(W * H / 16000 * Math.pow(view.s / (fitScale || view.s), 2));
    var labels = N <= 60 ? N : Math.min(N, Math.max(12, room));
    if (labels > 0) {
      ctx.font = (11 / view.s) + "px system-ui, sans-serif";
      ctx.textAlign = "center";
      ctx.textBaseline = "top";
      var left = -view.tx / view.s, top = -view.ty / view.s;
      var right = left + W / view.s, bottom = top + H / view.s;
      for (var o = 0; o < labels; o++) {
        j = byDegree[o];
        if (x[j] < left || x[j] > right || y[j] < top || y[j] > bottom) continue;
        ctx.fillStyle = nodes[j].missing ? "#8a8a8a" : "#333333";
        ctx.fillText(nodes[j].title, x[j], y[j] + radius(j) + 2 / view.s);
      }
    }
    if (!drawn) {
      drawn = true;
      body.dataset.renderedNodes = String(N);
    }
  }

  function step() {
    var start = Date.now();
    while (iter < maxIter && Date.now() - start < 24) tick();
    draw();
    if (iter < maxIter) {
      window.setTimeout(step, 0);
    } else {
      body.dataset.layout = "done";
    }
  }

  // ---- interaction -------------------------------------------------------------------------
  function toWorld(ev) {
    var rect = canvas.getBoundingClientRect();
    return [(ev.clientX - rect.left - view.tx) / view.s, (ev.clientY - rect.top - view.ty) / view.s];
  }
  function hit(p) {
    var best = -1, bestD = Infinity;
    for (var j = 0; j < N; j++) {
      var dx = x[j] - p[0], dy = y[j] - p[1], d = dx * dx + dy * dy;
      var rr = radius(j) + 4 / view.s;
      if (d < rr * rr && d < bestD) { best = j; bestD = d; }
    }
    return best;
  }
  var drag = null;
  canvas.addEventListener("pointerdown", function (ev) {
    var p = toWorld(ev);
    var k = hit(p);
    drag = { node: k, sx: ev.clientX, sy: ev.clientY, tx: view.tx, ty: view.ty, moved: false };
    if (k >= 0) pinned = k;
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointermove", function (ev) {
    if (!drag) return;
    if (Math.abs(ev.clientX - drag.sx) + Math.abs(ev.clientY - drag.sy) > 3) drag.moved = true;
    if (!drag.moved) return;
    userMoved = true;
    if (drag.node >= 0) {
      var p = toWorld(ev);
      x[drag.node] = p[0]; y[drag.node] = p[1];
    } else {
      view.tx = drag.tx + ev.clientX - drag.sx;
      view.ty = drag.ty + ev.clientY - drag.sy;
    }
    draw();
  });
  canvas.addEventListener("pointerup", function () {
    if (drag && !drag.moved) select(drag.node);
    pinned = -1;
    drag = null;
  });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    userMoved = true;
    var rect = canvas.getBoundingClientRect();
    var mx = ev.clientX - rect.left, my = ev.clientY - rect.top;
    var z = Math.exp(-ev.deltaY * 0.0015);
    var s = Math.max(0.02, Math.min(20, view.s * z));
    view.tx = mx - (mx - view.tx) * s / view.s;
    view.ty = my - (my - view.ty) * s / view.s;
    view.s = s;
    draw();
  }, { passive: false });
  window.addEventListener("resize", function () { if (current === "map") { resize(); draw(); } });

  // Deep links: #pages, #map, #connections/<page id> (ids percent-encoded).
  function fromHash() {
    var h = window.location.hash.replace(/^#/, "");
    var parts = h.split("/");
    var v = parts.shift();
    if (parts.length) {
      var id = decodeURIComponent(parts.join("/"));
      for (var j = 0; j < N; j++) if (nodes[j].id === id) { select(j); break; }
    }
    return views.indexOf(v) >= 0 ? v : "map";
  }
  var first = fromHash();
  show(first);
  renderConnections();
  step();
})();
