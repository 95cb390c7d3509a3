// A model page's table of every Bench-C cell and its two heat maps (issue 37.2),
// appended to site.js when the site is rendered (leaderboard/site/render.py): one
// script file on the site, two source files here. It runs after site.js has made
// the table sortable (sorting reads the rows when a header is clicked).
(function () {
  "use strict";

  function byId(id) { return document.getElementById(id); }

  // --- a table with data-fill holds its rows as data (a model page's every Bench-C
  // cell: [corruption, severity, N, values...]); each header's data-fmt says how its
  // column prints. Values come as printed by leaderboard/pages/formatting.py ("pp":
  // signed percentage points with U+2212 as the minus sign, "f3": three decimals),
  // so toFixed only writes the same digits again; missing is "\u2014". data-v keeps
  // fractions (percentage points / 100), as in every other table.
  function formatted(v, fmt) {
    if (v === null || v === undefined) return "\u2014";
    var neg = v < 0 || 1 / v < 0;  // -0 prints as "-0.000" / "\u22120.0", as Python does
    if (fmt === "pp") return (neg ? "\u2212" : "+") + Math.abs(v).toFixed(1);
    if (fmt === "f3") return (neg ? "-" : "") + Math.abs(v).toFixed(3);
    return String(v);
  }
  function fill(table) {
    var rows = JSON.parse(table.getAttribute("data-fill"));
    var heads = table.tHead.rows[table.tHead.rows.length - 1].cells;
    var fmts = Array.prototype.map.call(heads, function (th) { return th.getAttribute("data-fmt"); });
    var frag = document.createDocumentFragment();
    rows.forEach(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (v, j) {
        var td = document.createElement("td");
        if (j === 0) td.className = "t";
        if (fmts[j]) td.setAttribute("data-v", v === null ? "" : String(fmts[j] === "pp" ? v / 100 : v));
        td.textContent = formatted(v, fmts[j]);
        tr.appendChild(td);
      });
      frag.appendChild(tr);
    });
    table.tBodies[0].appendChild(frag);
    var note = byId(table.id + "-nojs");
    if (note) note.hidden = true;
  }
  Array.prototype.forEach.call(document.querySelectorAll("table[data-fill]"), fill);

  // --- a model's Bench-C heat maps, drawn from its table of every cell (the page
  // already holds the numbers: 400 models' map files were a fifth of the site).
  // Colours as leaderboard/charts/svg.py's diverging_colour: red - white - blue on +-1.
  var SVGNS = "http://www.w3.org/2000/svg";
  function el(name, attrs, text) {
    var e = document.createElementNS(SVGNS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function colour(v) {
    if (v === null || !isFinite(v)) return "#dddddd";
    var s = Math.max(-1, Math.min(1, v)), a = Math.abs(s);
    var c = s > 0 ? [0x21, 0x66, 0xAC] : [0xD6, 0x60, 0x4D];
    return "#" + c.map(function (x) {
      var y = Math.round(255 + (x - 255) * a).toString(16);
      return y.length < 2 ? "0" + y : y;
    }).join("");
  }
  function heatmap(fig) {
    var table = byId(fig.getAttribute("data-cells"));
    if (!table) return;
    var col = parseInt(fig.getAttribute("data-col"), 10), label = fig.getAttribute("data-label");
    var names = [], vals = {}, sevs = {};
    Array.prototype.forEach.call(table.tBodies[0].rows, function (tr) {
      var name = tr.cells[0].textContent, sev = tr.cells[1].textContent;
      var raw = tr.cells[col].getAttribute("data-v");
      if (!(name in vals)) { vals[name] = {}; names.push(name); }
      vals[name][sev] = raw === "" ? null : parseFloat(raw);
      sevs[sev] = true;
    });
    var cols = Object.keys(sevs).sort(function (a, b) { return a - b; });
    var left = 120, top = 30, cw = 26, rh = 14;
    var w = left + cw * cols.length + 10, h = top + rh * names.length + 24;
    var svg = el("svg", { "class": "plot", role: "img", "aria-label": label, width: w, height: h,
                          viewBox: "0 0 " + w + " " + h, "font-family": "system-ui,sans-serif",
                          "font-size": "11" });
    svg.appendChild(el("text", { x: 4, y: 14, "font-weight": "bold" }, label));
    cols.forEach(function (c, j) {
      svg.appendChild(el("text", { x: left + j * cw + cw / 2, y: top - 4, "text-anchor": "middle" }, c));
    });
    var g = el("g", { "class": "cells" });
    names.forEach(function (name, i) {
      var y = top + i * rh;
      svg.appendChild(el("text", { x: left - 4, y: y + rh - 4, "text-anchor": "end" }, name));
      cols.forEach(function (c, j) {
        var v = c in vals[name] ? vals[name][c] : null;
        var cell = el("rect", { x: left + j * cw, y: y, width: cw - 1, height: rh - 1,
                                fill: colour(v), "class": "cell" });
        cell.appendChild(el("title", {}, name + ", severity " + c + ": " +
                            (v === null ? "n/a" : v.toFixed(3))));
        g.appendChild(cell);
      });
    });
    svg.appendChild(g);
    svg.appendChild(el("text", { x: left, y: h - 6 }, "severity \u2192  scale \u00b11"));
    fig.insertBefore(svg, fig.firstChild);
    var note = fig.querySelector(".nojs");
    if (note) note.hidden = true;
  }
  Array.prototype.forEach.call(document.querySelectorAll("figure.heatmap"), heatmap);
})();
