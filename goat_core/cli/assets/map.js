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

  // Adjacency (graph edges only: page-to-page and page-to-missing, no self loops). Several
  // links between the same two nodes are one graph edge.
  var outgoing = [];
  var incoming = [];
  var allPairs = [];
  for (i = 0; i < N; i++) { outgoing.push([]); incoming.push([]); }
  var seenPair = new Set();
  edges.forEach(function (e, k) {
    outgoing[e[0]].push(k);
    if (e[1] >= 0 && e[1] !== e[0]) {
      incoming[e[1]].push(k);
      var a = Math.min(e[0], e[1]), b = Math.max(e[0], e[1]);
      var key = a * N + b;
      if (!seenPair.has(key)) { seenPair.add(key); allPairs.push(a, b); }
    }
  });
  seenPair = null;
  var isAttachment = new Uint8Array(N);
  var missingNotes = 0, missingAttachments = 0;
  for (i = 0; i < N; i++) {
    if (!nodes[i].missing) continue;
    if (nodes[i].kind === "attachment") { isAttachment[i] = 1; missingAttachments++; }
    else missingNotes++;
  }
  var showAttachments = missingAttachments <= (data.attachments_shown_up_to || 20);

  function plural(n, one, many) { return n + " " + (n === 1 ? one : many); }
  document.getElementById("stats").textContent = [
    plural(pageCount, "page", "pages"), plural(edges.length, "link", "links"),
    plural(missingNotes, "missing note", "missing notes"),
    plural(missingAttachments, "missing attachment", "missing attachments")
  ].join(" \u00b7 ");

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
      li.appendChild(el("span", "tag",
        targetIndex >= 0 && isAttachment[targetIndex] ? "missing attachment" : "missing"));
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
      conn.appendChild(el("p", "missing-text", isAttachment[selected]
        ? "No file with this name exists (missing attachment)."
        : "No note with this name exists (missing note)."));
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

  // ---- graph: visible set, degree, layout ----------------------------------------------------
  var visible = new Uint8Array(N);   // drawn and laid out (missing attachments can be hidden)
  var act = new Int32Array(N);       // indexes of visible nodes
  var nAct = 0;
  var pairs = new Int32Array(0);     // visible graph edges, flattened [a, b, a, b, ...]
  var nPairs = 0;
  var degree = new Float32Array(N);  // distinct visible neighbours
  var nbrStart = new Int32Array(N + 1), nbrList = new Int32Array(0);
  var byDegree = [];
  var x = new Float64Array(N), y = new Float64Array(N);
  var vx = new Float64Array(N), vy = new Float64Array(N);
  var charge = new Float64Array(N);
  var placed = new Uint8Array(N);

  function rebuild() {
    var j, a, b;
    nAct = 0;
    for (j = 0; j < N; j++) {
      visible[j] = isAttachment[j] && !showAttachments ? 0 : 1;
      if (visible[j]) act[nAct++] = j;
    }
    var tmp = [];
    degree.fill(0);
    for (j = 0; j < allPairs.length; j += 2) {
      a = allPairs[j]; b = allPairs[j + 1];
      if (!visible[a] || !visible[b]) continue;
      tmp.push(a, b); degree[a]++; degree[b]++;
    }
    pairs = Int32Array.from(tmp); nPairs = tmp.length / 2;
    nbrStart.fill(0);
    for (j = 0; j < N; j++) nbrStart[j + 1] = nbrStart[j] + degree[j];
    nbrList = new Int32Array(pairs.length);
    var fillAt = Int32Array.from(nbrStart.subarray(0, N));
    for (j = 0; j < nPairs; j++) {
      a = pairs[2 * j]; b = pairs[2 * j + 1];
      nbrList[fillAt[a]++] = b; nbrList[fillAt[b]++] = a;
    }
    byDegree = Array.prototype.slice.call(act, 0, nAct);
    byDegree.sort(function (p, q) {
      return (nodes[p].missing - nodes[q].missing) || (degree[q] - degree[p]) || (p - q);
    });
    // Hubs push harder, so their neighbourhoods open up instead of collapsing onto them.
    for (j = 0; j < N; j++) charge[j] = -CHARGE * (1 + 0.25 * Math.sqrt(degree[j]));
    // New nodes start next to a neighbour that already has a place (or on the spiral).
    for (var o = 0; o < nAct; o++) {
      j = act[o];
      if (placed[j]) continue;
      placed[j] = 1;
      var src = -1;
      for (var m = nbrStart[j]; m < nbrStart[j + 1]; m++) {
        if (placed[nbrList[m]] && nbrList[m] !== j) { src = nbrList[m]; break; }
      }
      if (src >= 0 && nodes[j].missing) {
        var ang = j * 2.399963;
        x[j] = x[src] + 20 * Math.cos(ang); y[j] = y[src] + 20 * Math.sin(ang);
      } else {
        var r = SPREAD * Math.sqrt(j + 0.5);  // deterministic phyllotaxis start
        x[j] = r * Math.cos(j * 2.399963); y[j] = r * Math.sin(j * 2.399963);
      }
      vx[j] = vy[j] = 0;
    }
    body.dataset.renderedNodes = String(nAct);
    body.dataset.renderedMissingNotes = String(missingNotes);
    body.dataset.renderedMissingAttachments = String(showAttachments ? missingAttachments : 0);
  }

  // Forces follow d3-force (velocity Verlet): many-body charge (exact, or Barnes-Hut with
  // theta 0.9 past 600 nodes), link springs with d3's degree bias, a weak pull to the centre,
  // then a collision pass so no two discs overlap. The iteration budget shrinks with size.
  var CHARGE = 45, SPREAD = 12, GRAVITY = 0.035, THETA2 = 0.81, PAD = 3;
  var LINK = 34 + Math.min(30, 3 * allPairs.length / Math.max(1, pageCount));
  var maxIter = N <= 600 ? 320 : N <= 3000 ? 220 : N <= 12000 ? 130 : 60;
  var alphaMin = 0.002;
  var alphaDecay = 1 - Math.pow(alphaMin, 1 / maxIter);
  var alpha = 1;
  var pinned = -1;

  function radius(j) {
    if (isAttachment[j]) return 3;
    return (nodes[j].missing ? 4.5 : 3.5) + Math.min(11, 1.5 * Math.sqrt(degree[j]));
  }

  // Barnes-Hut quadtree in flat arrays: q* per cell; qpt = first point (leaf) or -2 (split).
  var qcap = 0, qn = 0;
  var qx0, qy0, qw, qmass, qcx, qcy, qpt, qch, pnext;
  function qalloc(cap) {
    qcap = cap;
    qx0 = new Float64Array(cap); qy0 = new Float64Array(cap); qw = new Float64Array(cap);
    qmass = new Float64Array(cap); qcx = new Float64Array(cap); qcy = new Float64Array(cap);
    qpt = new Int32Array(cap); qch = new Int32Array(cap * 4);
  }
  function qnew(x0, y0, w) {
    if (qn >= qcap) {
      var old = [qx0, qy0, qw, qmass, qcx, qcy, qpt, qch];
      qalloc(qcap * 2);
      qx0.set(old[0]); qy0.set(old[1]); qw.set(old[2]); qmass.set(old[3]);
      qcx.set(old[4]); qcy.set(old[5]); qpt.set(old[6]); qch.set(old[7]);
    }
    qx0[qn] = x0; qy0[qn] = y0; qw[qn] = w; qpt[qn] = -1;
    qch[4 * qn] = qch[4 * qn + 1] = qch[4 * qn + 2] = qch[4 * qn + 3] = -1;
    return qn++;
  }
  function qinsert(p) {
    var q = 0;
    for (;;) {
      if (qpt[q] === -2) {
        var h = qw[q] / 2;
        var right = x[p] >= qx0[q] + h ? 1 : 0, down = y[p] >= qy0[q] + h ? 1 : 0;
        var c = 4 * q + right + 2 * down;
        if (qch[c] < 0) {
          var nq = qnew(qx0[q] + right * h, qy0[q] + down * h, h);
          qch[c] = nq;
        }
        q = qch[c];
        continue;
      }
      if (qpt[q] === -1) { qpt[q] = p; pnext[p] = -1; return; }
      var o = qpt[q];
      if (qw[q] < 1e-3 || (x[o] === x[p] && y[o] === y[p])) {  // coincident: chain them
        pnext[p] = o; qpt[q] = p; return;
      }
      qpt[q] = -2;  // split: push the old point(s) one level down, then retry p
      var hh = qw[q] / 2;
      var r2 = x[o] >= qx0[q] + hh ? 1 : 0, d2 = y[o] >= qy0[q] + hh ? 1 : 0;
      var child = qnew(qx0[q] + r2 * hh, qy0[q] + d2 * hh, hh);
      qch[4 * q + r2 + 2 * d2] = child;
      qpt[child] = o;
    }
  }
  function qaccumulate(q) {
    var m = 0, sx = 0, sy = 0, k;
    if (qpt[q] === -2) {
      for (k = 0; k < 4; k++) {
        var c = qch[4 * q + k];
        if (c < 0) continue;
        qaccumulate(c);
        m += qmass[c]; sx += qcx[c] * qmass[c]; sy += qcy[c] * qmass[c];
      }
    } else {
      for (k = qpt[q]; k >= 0; k = pnext[k]) { m += charge[k]; sx += x[k] * charge[k]; sy += y[k] * charge[k]; }
    }
    qmass[q] = m;
    qcx[q] = m ? sx / m : 0; qcy[q] = m ? sy / m : 0;
  }
  var qstack = new Int32Array(64);
  function chargeBarnesHut() {
    var o, j, x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
    for (o = 0; o < nAct; o++) {
      j = act[o];
      if (x[j] < x0) x0 = x[j]; if (x[j] > x1) x1 = x[j];
      if (y[j] < y0) y0 = y[j]; if (y[j] > y1) y1 = y[j];
    }
    if (!qcap) { qalloc(Math.max(64, 4 * N)); pnext = new Int32Array(N); }
    qn = 0;
    qnew(x0, y0, Math.max(x1 - x0, y1 - y0) + 1);
    for (o = 0; o < nAct; o++) qinsert(act[o]);
    qaccumulate(0);
    for (o = 0; o < nAct; o++) {
      j = act[o];
      var sp = 0, xj = x[j], yj = y[j], fx = 0, fy = 0;
      qstack[sp++] = 0;
      while (sp) {
        var q = qstack[--sp];
        var dx = qcx[q] - xj, dy = qcy[q] - yj, l = dx * dx + dy * dy;
        if (qpt[q] === -2) {
          if (qw[q] * qw[q] / THETA2 < l) {
            fx += dx * qmass[q] / l; fy += dy * qmass[q] / l;
            continue;
          }
          if (sp + 4 > qstack.length) { var bigger = new Int32Array(qstack.length * 2); bigger.set(qstack); qstack = bigger; }
          for (var k = 0; k < 4; k++) if (qch[4 * q + k] >= 0) qstack[sp++] = qch[4 * q + k];
          continue;
        }
        for (var p = qpt[q]; p >= 0; p = pnext[p]) {
          if (p === j) continue;
          dx = x[p] - xj; dy = y[p] - yj;
          if (dx === 0 && dy === 0) { dx = ((j * 7 + p) % 11 - 5) * 1e-3 + 1e-4; dy = ((p * 3 + j) % 7 - 3) * 1e-3; }
          l = dx * dx + dy * dy;
          if (l < 1) l = Math.sqrt(l);
          fx += dx * charge[p] / l; fy += dy * charge[p] / l;
        }
      }
      vx[j] += fx * alpha; vy[j] += fy * alpha;
    }
  }
  function chargeExact() {
    for (var o = 0; o < nAct; o++) {
      var j = act[o];
      for (var m = o + 1; m < nAct; m++) {
        var k = act[m];
        var dx = x[k] - x[j], dy = y[k] - y[j];
        if (dx === 0 && dy === 0) { dx = ((j * 7 + k) % 11 - 5) * 1e-3 + 1e-4; dy = ((k * 3 + j) % 7 - 3) * 1e-3; }
        var l = dx * dx + dy * dy;
        if (l < 1) l = Math.sqrt(l);
        var f = alpha / l;
        vx[j] += dx * charge[k] * f; vy[j] += dy * charge[k] * f;
        vx[k] -= dx * charge[j] * f; vy[k] -= dy * charge[j] * f;
      }
    }
  }
  var cellOf = new Map();
  function collide() {
    var maxR = 0, o, j;
    for (o = 0; o < nAct; o++) { j = act[o]; if (radius(j) > maxR) maxR = radius(j); }
    var cell = 2 * maxR + PAD;
    cellOf.clear();
    for (o = 0; o < nAct; o++) {
      j = act[o];
      var key = Math.floor(x[j] / cell) * 131072 + Math.floor(y[j] / cell);
      var c = cellOf.get(key);
      if (c) c.push(j); else cellOf.set(key, [j]);
    }
    for (o = 0; o < nAct; o++) {
      j = act[o];
      var cx = Math.floor(x[j] / cell), cy = Math.floor(y[j] / cell), rj = radius(j);
      for (var gx = cx - 1; gx <= cx + 1; gx++) {
        for (var gy = cy - 1; gy <= cy + 1; gy++) {
          var list = cellOf.get(gx * 131072 + gy);
          if (!list) continue;
          for (var m = 0; m < list.length; m++) {
            var k = list[m];
            if (k <= j) continue;
            var dx = x[k] - x[j], dy = y[k] - y[j], min = rj + radius(k) + PAD;
            var d2 = dx * dx + dy * dy;
            if (d2 >= min * min) continue;
            var d = Math.sqrt(d2) || 1e-3;
            if (d2 === 0) { dx = 1e-3 * ((j % 3) - 1 || 1); dy = 1e-3; }
            var push = (min - d) / d * 0.5 * 0.7;
            var wj = k === pinned ? 2 : j === pinned ? 0 : 1, wk = 2 - wj;
            x[j] -= dx * push * wj; y[j] -= dy * push * wj;
            x[k] += dx * push * wk; y[k] += dy * push * wk;
          }
        }
      }
    }
  }
  function tick() {
    var j, o;
    if (nAct > 600) chargeBarnesHut(); else chargeExact();
    for (j = 0; j < nPairs; j++) {
      var a = pairs[2 * j], b = pairs[2 * j + 1];
      var ex = x[b] + vx[b] - x[a] - vx[a], ey = y[b] + vy[b] - y[a] - vy[a];
      var d = Math.sqrt(ex * ex + ey * ey) || 1e-3;
      var s = (d - LINK) / d * alpha / Math.min(degree[a], degree[b]);
      var bias = degree[a] / (degree[a] + degree[b]);
      vx[b] -= ex * s * bias; vy[b] -= ey * s * bias;
      vx[a] += ex * s * (1 - bias); vy[a] += ey * s * (1 - bias);
    }
    for (o = 0; o < nAct; o++) {
      j = act[o];
      vx[j] -= x[j] * GRAVITY * alpha; vy[j] -= y[j] * GRAVITY * alpha;
      if (j === pinned) { vx[j] = vy[j] = 0; continue; }
      vx[j] *= 0.6; vy[j] *= 0.6;
      x[j] += vx[j]; y[j] += vy[j];
    }
    collide();
    alpha += (0 - alpha) * alphaDecay;
  }

  // ---- drawing -----------------------------------------------------------------------------
  // A muted palette (HSL saturation <= 0.5), one colour per top-level folder, the largest
  // folders first; the rest share a neutral grey.
  var PALETTE = ["#5b8db8", "#6aa56e", "#c98b5a", "#9a7fbf", "#4fa3a5", "#c4747c",
    "#a5a04f", "#7b8fa6", "#b0799f", "#8c9f5a", "#b79a6a", "#6f83c4"];
  var OTHER = "#a3a3a3";
  var groups = data.groups || [];
  function colourOf(j) {
    var g = nodes[j].group;
    return g !== undefined && g < PALETTE.length ? PALETTE[g] : OTHER;
  }
  var folderList = document.getElementById("folders");
  (function () {
    var counts = groups.map(function () { return 0; });
    for (var j = 0; j < N; j++) if (!nodes[j].missing) counts[nodes[j].group]++;
    var shown = Math.min(groups.length, PALETTE.length);
    for (var g = 0; g < shown; g++) {
      var li = el("li", "folder");
      var sw = el("span", "swatch");
      sw.style.background = PALETTE[g];
      li.appendChild(sw);
      li.appendChild(el("span", "", groups[g] === "" ? "(top level)" : groups[g]));
      li.appendChild(el("span", "meta", String(counts[g])));
      folderList.appendChild(li);
    }
    if (groups.length > shown) {
      var rest = 0;
      for (g = shown; g < groups.length; g++) rest += counts[g];
      var other = el("li", "folder");
      var osw = el("span", "swatch");
      osw.style.background = OTHER;
      other.appendChild(osw);
      other.appendChild(el("span", "", plural(groups.length - shown, "other folder", "other folders")));
      other.appendChild(el("span", "meta", String(rest)));
      folderList.appendChild(other);
    }
    folderList.hidden = groups.length < 2;
  })();

  var canvas = document.getElementById("graph");
  var ctx = canvas.getContext("2d");
  var W = 0, H = 0, dpr = 1;
  var view = { s: 1, tx: 0, ty: 0 };
  var userMoved = false;
  var fitScale = 1;
  var hovered = -1;
  function resize() {
    var rect = canvas.getBoundingClientRect();
    dpr = window.devicePixelRatio || 1;
    W = Math.max(1, rect.width); H = Math.max(1, rect.height);
    canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
  }
  function fit() {
    if (!nAct) return;
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (var o = 0; o < nAct; o++) {
      var j = act[o];
      if (x[j] < x0) x0 = x[j]; if (x[j] > x1) x1 = x[j];
      if (y[j] < y0) y0 = y[j]; if (y[j] > y1) y1 = y[j];
    }
    var s = Math.min(W / (x1 - x0 + 120), H / (y1 - y0 + 90));
    view.s = Math.min(2.5, s);
    fitScale = view.s;
    view.tx = W / 2 - view.s * (x0 + x1) / 2;
    view.ty = H / 2 - view.s * (y0 + y1) / 2;
  }
  function isNeighbour(j, k) {
    for (var m = nbrStart[j]; m < nbrStart[j + 1]; m++) if (nbrList[m] === k) return true;
    return false;
  }
  function disc(j, r) { ctx.moveTo(x[j] + r, y[j]); ctx.arc(x[j], y[j], r, 0, 2 * Math.PI); }
  function draw() {
    if (current !== "map" || !W) return;
    if (!userMoved) fit();
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.setTransform(dpr * view.s, 0, 0, dpr * view.s, dpr * view.tx, dpr * view.ty);
    var focus = hovered >= 0 ? hovered : selected >= 0 && visible[selected] ? selected : -1;
    var near = null;
    if (focus >= 0) {
      near = new Uint8Array(N);
      near[focus] = 1;
      for (var m = nbrStart[focus]; m < nbrStart[focus + 1]; m++) near[nbrList[m]] = 1;
    }
    var j, a, b, o;
    ctx.lineWidth = 1 / view.s;
    ctx.strokeStyle = focus >= 0 ? "rgba(150,150,150,0.10)" : "rgba(140,140,140,0.28)";
    ctx.beginPath();
    for (j = 0; j < nPairs; j++) {
      a = pairs[2 * j]; b = pairs[2 * j + 1];
      ctx.moveTo(x[a], y[a]); ctx.lineTo(x[b], y[b]);
    }
    ctx.stroke();
    if (focus >= 0) {  // the focused node's links, darker grey (neutral, no accent)
      ctx.strokeStyle = "rgba(70,70,70,0.75)";
      ctx.lineWidth = 1.3 / view.s;
      ctx.beginPath();
      for (m = nbrStart[focus]; m < nbrStart[focus + 1]; m++) {
        b = nbrList[m];
        ctx.moveTo(x[focus], y[focus]); ctx.lineTo(x[b], y[b]);
      }
      ctx.stroke();
    }
    // Pages, batched by colour; nodes away from the focus fade.
    var batches = {};
    for (o = 0; o < nAct; o++) {
      j = act[o];
      if (nodes[j].missing) continue;
      var key = (near && !near[j] ? "faded " : "") + colourOf(j);
      (batches[key] || (batches[key] = [])).push(j);
    }
    Object.keys(batches).forEach(function (key) {
      ctx.globalAlpha = key.indexOf("faded ") === 0 ? 0.25 : 1;
      ctx.fillStyle = key.slice(-7);
      ctx.beginPath();
      batches[key].forEach(function (k) { disc(k, radius(k)); });
      ctx.fill();
    });
    ctx.globalAlpha = 1;
    ctx.lineWidth = 1.4 / view.s;
    ctx.setLineDash([3 / view.s, 2 / view.s]);  // missing notes: hollow dashed circles
    [false, true].forEach(function (faded) {
      ctx.globalAlpha = faded ? 0.3 : 1;
      ctx.fillStyle = "#ffffff";
      ctx.strokeStyle = "#6e6e6e";
      ctx.beginPath();
      for (var q = 0; q < nAct; q++) {
        var k = act[q];
        if (!nodes[k].missing || isAttachment[k] || (!!near && !near[k]) !== faded) continue;
        disc(k, radius(k));
      }
      ctx.fill(); ctx.stroke();
    });
    ctx.setLineDash([1 / view.s, 1.5 / view.s]);  // missing attachments: small dotted squares
    ctx.lineWidth = 1 / view.s;
    [false, true].forEach(function (faded) {
      ctx.globalAlpha = faded ? 0.25 : 0.9;
      ctx.fillStyle = "#f2f2f2";
      ctx.strokeStyle = "#9a9a9a";
      ctx.beginPath();
      for (var q = 0; q < nAct; q++) {
        var k = act[q];
        if (!isAttachment[k] || (!!near && !near[k]) !== faded) continue;
        var r = radius(k);
        ctx.rect(x[k] - r, y[k] - r, 2 * r, 2 * r);
      }
      ctx.fill(); ctx.stroke();
    });
    ctx.setLineDash([]);
    ctx.globalAlpha = 1;
    if (selected >= 0 && visible[selected]) {  // neutral selection: dark grey ring, grey halo
      var sr = radius(selected) + 3 / view.s;
      ctx.strokeStyle = "rgba(190,190,190,0.6)";  // halo: a ring outside, the node stays clear
      ctx.lineWidth = 5 / view.s;
      ctx.beginPath(); ctx.arc(x[selected], y[selected], sr + 3 / view.s, 0, 2 * Math.PI); ctx.stroke();
      ctx.strokeStyle = "#3a3a3a";
      ctx.lineWidth = 2 / view.s;
      ctx.beginPath(); ctx.arc(x[selected], y[selected], sr, 0, 2 * Math.PI); ctx.stroke();
    }
    if (hovered >= 0 && hovered !== selected) {
      ctx.strokeStyle = "#5a5a5a";
      ctx.lineWidth = 1.5 / view.s;
      ctx.beginPath(); ctx.arc(x[hovered], y[hovered], radius(hovered) + 2 / view.s, 0, 2 * Math.PI);
      ctx.stroke();
    }
    drawLabels(focus, near);
  }

  // Labels in screen space, 12px: first the focus and its neighbours, then the best-linked
  // nodes in view, each only where it overlaps no label already placed. The budget grows
  // with the canvas area and with zoom.
  var boxes = [];
  var FONT = "12px system-ui, -apple-system, 'Segoe UI', sans-serif";
  function drawLabels(focus, near) {
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ctx.lineJoin = "round";
    boxes.length = 0;
    var zoom = view.s / fitScale;
    var budget = nAct <= 30 ? nAct : Math.round(Math.min(400, 6 + W * H / 60000 * zoom * zoom));
    var m;
    if (focus >= 0) {
      label(focus, true, true);
      var ns = [];
      for (m = nbrStart[focus]; m < nbrStart[focus + 1]; m++) ns.push(nbrList[m]);
      ns.sort(function (p, q) { return degree[q] - degree[p]; });
      for (m = 0; m < ns.length && m < 60; m++) label(ns[m], false, true);
    }
    if (selected >= 0 && selected !== focus && visible[selected]) label(selected, true, false);
    if (missingNotes <= 20) {  // few missing notes: each is worth naming (they are to-dos)
      for (m = 0; m < nAct; m++) {
        var k = act[m];
        if (nodes[k].missing && !isAttachment[k] && !(near && near[k])) label(k, false, !near);
      }
    }
    var tries = 0;
    for (m = 0; m < byDegree.length && budget > 0 && tries < budget * 4; m++) {
      var j = byDegree[m];
      if (near && near[j]) continue;
      tries++;
      if (label(j, false, !near)) budget--;
    }
  }
  function label(j, force, strong) {
    var sx = x[j] * view.s + view.tx, sy = y[j] * view.s + view.ty;
    if (sx < -50 || sx > W + 50 || sy < -20 || sy > H + 20) return false;
    var text = nodes[j].title;
    ctx.font = (nodes[j].missing ? "italic " : "") + FONT;
    if (text.length > 32) text = text.slice(0, 31) + "\u2026";
    var w = ctx.measureText(text).width + 6;
    var top = sy + radius(j) * view.s + 2;
    var box = [sx - w / 2, top, sx + w / 2, top + 15];
    if (!force) {
      for (var k = 0; k < boxes.length; k++) {
        var o = boxes[k];
        if (box[0] < o[2] && box[2] > o[0] && box[1] < o[3] && box[3] > o[1]) return false;
      }
    }
    boxes.push(box);
    ctx.lineWidth = 3;
    ctx.strokeStyle = "rgba(255,255,255,0.9)";
    ctx.strokeText(text, sx, top + 1);
    ctx.fillStyle = nodes[j].missing ? "#6e6e6e" : strong ? "#262626" : "#6a6a6a";
    ctx.fillText(text, sx, top + 1);
    return true;
  }

  var running = false;
  function step() {
    var start = Date.now();
    while (alpha >= alphaMin && Date.now() - start < 24) tick();
    draw();
    if (alpha >= alphaMin) {
      window.setTimeout(step, 0);
    } else {
      running = false;
      body.dataset.layout = "done";
    }
  }
  function run(heat) {
    alpha = Math.max(alpha, heat);
    if (!running) { running = true; body.dataset.layout = "running"; window.setTimeout(step, 0); }
  }

  // ---- interaction -------------------------------------------------------------------------
  function toWorld(ev) {
    var rect = canvas.getBoundingClientRect();
    return [(ev.clientX - rect.left - view.tx) / view.s, (ev.clientY - rect.top - view.ty) / view.s];
  }
  function hit(p) {
    var best = -1, bestD = Infinity;
    for (var o = 0; o < nAct; o++) {
      var j = act[o];
      var dx = x[j] - p[0], dy = y[j] - p[1], d = dx * dx + dy * dy;
      var rr = radius(j) + 4 / view.s;
      if (d < rr * rr && d < bestD) { best = j; bestD = d; }
    }
    return best;
  }
  var drag = null;
  canvas.addEventListener("pointerdown", function (ev) {
    var k = hit(toWorld(ev));
    drag = { node: k, sx: ev.clientX, sy: ev.clientY, tx: view.tx, ty: view.ty, moved: false };
    if (k >= 0) pinned = k;
    canvas.setPointerCapture(ev.pointerId);
  });
  canvas.addEventListener("pointermove", function (ev) {
    if (!drag) {
      var k = hit(toWorld(ev));
      canvas.style.cursor = k >= 0 ? "pointer" : "grab";
      if (k !== hovered) { hovered = k; draw(); }
      return;
    }
    if (Math.abs(ev.clientX - drag.sx) + Math.abs(ev.clientY - drag.sy) > 3) drag.moved = true;
    if (!drag.moved) return;
    userMoved = true;
    if (drag.node >= 0) {
      var p = toWorld(ev);
      x[drag.node] = p[0]; y[drag.node] = p[1];
      run(0.08);
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
  canvas.addEventListener("pointerleave", function () {
    if (hovered >= 0 && !drag) { hovered = -1; draw(); }
  });
  canvas.addEventListener("wheel", function (ev) {
    ev.preventDefault();
    userMoved = true;
    var rect = canvas.getBoundingClientRect();
    var mx = ev.clientX - rect.left, my = ev.clientY - rect.top;
    var z = Math.exp(-ev.deltaY * 0.0015);
    var s = Math.max(0.02, Math.min(40, view.s * z));
    view.tx = mx - (mx - view.tx) * s / view.s;
    view.ty = my - (my - view.ty) * s / view.s;
    view.s = s;
    draw();
  }, { passive: false });
  document.getElementById("fit").addEventListener("click", function () {
    userMoved = false; draw();
  });
  var toggle = document.getElementById("show-attachments");
  document.getElementById("attachments-key").hidden = missingAttachments === 0;
  function setAttachments(on) {
    showAttachments = on;
    toggle.checked = on;
    rebuild();
    if (hovered >= 0 && !visible[hovered]) hovered = -1;
  }
  toggle.addEventListener("change", function () {
    setAttachments(toggle.checked);
    run(0.3);
    draw();
  });
  window.addEventListener("resize", function () { if (current === "map") { resize(); draw(); } });

  // Deep links: #pages, #map, #connections/<page id> (ids percent-encoded); an option
  // ?attachments=1 or =0 shows or hides missing attachments on the Map.
  function fromHash() {
    var h = window.location.hash.replace(/^#/, "");
    var q = h.indexOf("?");
    if (q >= 0) {
      var opt = /(?:^|&)attachments=([01])(?:&|$)/.exec(h.slice(q + 1));
      if (opt) showAttachments = opt[1] === "1";
      h = h.slice(0, q);
    }
    var parts = h.split("/");
    var v = parts.shift();
    if (parts.length) {
      var id = decodeURIComponent(parts.join("/"));
      for (var j = 0; j < N; j++) if (nodes[j].id === id) { select(j); break; }
    }
    return views.indexOf(v) >= 0 ? v : "map";
  }
  var first = fromHash();
  setAttachments(showAttachments);
  show(first);
  renderConnections();
  run(1);
})();
