// Click (or Enter/Space on) a column header of a table.sortable to sort its rows.
// Cells carry their raw value in data-v (numbers stay numbers); empty data-v means
// "not measured" and always sorts last. Ties keep the previous order (stable sort).
// The overview's controls filter rows (search, prompt, family, size) and switch the
// distractor strategy of the ER and accuracy cells (values precomputed per strategy
// in data-s<i> / data-t<i> / data-c<i>). Text only ever goes in via textContent.
// A table with data-rows holds only its first page; once its JSON (every row, as
// leaderboard.pages.paged packs them) has loaded, sorting, filtering and the
// strategy switch act on all rows and a pager shows one page at a time.
// Shared chart files (img.inline) are fetched and put in the page as inline SVG once
// shown, so their points' <title> labels appear on hover and keyboard focus; a
// table wider than its box gets a visible "scroll for more" cue.
(function () {
  "use strict";

  function cellValue(row, idx, numeric) {
    var cell = row.cells[idx];
    if (!cell) return null;
    var raw = cell.hasAttribute("data-v") ? cell.getAttribute("data-v") : cell.textContent.trim();
    if (raw === "") return null;
    if (numeric) {
      var x = parseFloat(raw);
      return isNaN(x) ? null : x;
    }
    return raw.toLowerCase();
  }

  function compare(sign) {
    return function (a, b) {
      if (a.v === null && b.v === null) return a.i - b.i;
      if (a.v === null) return 1;
      if (b.v === null) return -1;
      if (a.v < b.v) return -sign;
      if (a.v > b.v) return sign;
      return a.i - b.i;
    };
  }

  function parsed(raw, numeric) {
    if (raw === null || raw === undefined || raw === "") return null;
    if (!numeric) return String(raw).toLowerCase();
    var x = parseFloat(raw);
    return isNaN(x) ? null : x;
  }

  function sortTable(table, idx, th) {
    var numeric = th.getAttribute("data-type") === "num";
    var current = th.getAttribute("aria-sort");
    var dir;
    if (current === "descending") dir = "ascending";
    else if (current === "ascending") dir = "descending";
    else dir = numeric ? "descending" : "ascending";
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    if (table.paged && table.paged.rows) { table.paged.sort(idx, numeric, dir); return; }
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (r, i) { return { row: r, i: i, v: cellValue(r, idx, numeric) }; });
    keyed.sort(compare(dir === "ascending" ? 1 : -1));
    var frag = document.createDocumentFragment();
    keyed.forEach(function (k) { frag.appendChild(k.row); });
    body.appendChild(frag);
  }

  // --- paged tables: rows from JSON, rendered one page at a time
  function Paged(table, done) {
    this.table = table;
    this.size = parseInt(table.getAttribute("data-page"), 10) || 50;
    this.root = table.getAttribute("data-root") || "";
    this.rows = null;
    this.order = [];
    this.k = null;  // strategy index of the switch, null: the rendered default
    this.keep = function () { return true; };
    this.page = 0;
    this.done = done;
    this.pager = byId(table.id + "-pager");
    var self = this;
    if (this.pager) {
      Array.prototype.forEach.call(this.pager.querySelectorAll("button"), function (b) {
        b.addEventListener("click", function () {
          self.page += parseInt(b.getAttribute("data-go"), 10);
          self.render();
        });
      });
    }
  }
  Paged.prototype.load = function () {
    var self = this;
    return fetch(this.table.getAttribute("data-rows")).then(function (r) {
      return r.ok ? r.json() : Promise.reject(r.status);
    }).then(function (data) {
      self.rows = data.rows;
      self.order = data.rows.map(function (_, i) { return i; });
      var note = byId(self.table.id + "-nojs");
      if (note) note.hidden = true;
      // the rows arrive in the page's order: a sort of the first page alone is undone
      Array.prototype.forEach.call(self.table.querySelectorAll("th[aria-sort]"), function (h) {
        h.removeAttribute("aria-sort");
      });
      self.render();
    });
  };
  Paged.prototype.cell = function (c) {
    // [v, t, class, title, href, marks, variants, download]; a variant is [v, t] or
    // [v, t, title, tone] (then the title and the colour change with it)
    var v = c[0], t = c[1], cls = c[2] || "", title = c[3] || "";
    if (c[6] && c[6].length && this.k !== null && c[6][this.k]) {
      var s = c[6][this.k];
      v = s[0]; t = s[1] || "\u2014";
      if (s.length > 2) {
        title = s[2] || "";
        cls = (cls.replace(/\b(pos|neg)\b/g, "") + " " + (s[3] || "")).replace(/\s+/g, " ").trim();
      }
    }
    return { v: v, t: t, cls: cls, title: title };
  };
  Paged.prototype.value = function (i, idx, numeric) {
    var c = this.rows[i].c[idx];
    return c ? parsed(this.cell(c).v, numeric) : null;
  };
  Paged.prototype.sort = function (idx, numeric, dir) {
    var self = this;
    var keyed = this.order.map(function (r, i) { return { r: r, i: i, v: self.value(r, idx, numeric) }; });
    keyed.sort(compare(dir === "ascending" ? 1 : -1));
    this.order = keyed.map(function (k) { return k.r; });
    this.page = 0;
    this.render();
  };
  Paged.prototype.tr = function (row) {
    var tr = document.createElement("tr");
    Object.keys(row.a).forEach(function (k) { tr.setAttribute("data-" + k, row.a[k]); });
    var self = this;
    row.c.forEach(function (c) {
      var x = self.cell(c), td = document.createElement("td");
      if (x.cls) td.className = x.cls;
      td.setAttribute("data-v", x.v);
      if (x.title) td.title = x.title;
      if (c[4]) {
        var a = document.createElement("a");
        a.setAttribute("href", self.root + c[4]);
        if (c[7]) a.setAttribute("download", "");
        a.textContent = x.t;
        td.appendChild(a);
      } else if (x.t) {
        td.appendChild(document.createTextNode(x.t));
      }
      (c[5] || []).forEach(function (m) {
        if (!m[0]) { td.appendChild(document.createTextNode(m[1])); return; }
        var span = document.createElement("span");
        span.className = m[0];
        span.textContent = m[1];
        if (m[2]) span.title = m[2];
        td.appendChild(span);
      });
      tr.appendChild(td);
    });
    return tr;
  };
  Paged.prototype.render = function () {
    var self = this;
    var shown = this.order.filter(function (i) { return self.keep(self.rows[i].a); });
    var pages = Math.max(1, Math.ceil(shown.length / this.size));
    this.page = Math.max(0, Math.min(this.page, pages - 1));
    var first = this.page * this.size, frag = document.createDocumentFragment();
    shown.slice(first, first + this.size).forEach(function (i) { frag.appendChild(self.tr(self.rows[i])); });
    var body = this.table.tBodies[0];
    while (body.firstChild) body.removeChild(body.firstChild);
    body.appendChild(frag);
    if (this.pager) {
      this.pager.hidden = shown.length <= this.size;
      this.pager.querySelector("output").textContent = (shown.length ? first + 1 : 0) + "\u2013" +
        Math.min(first + this.size, shown.length) + " of " + shown.length;
      var b = this.pager.querySelectorAll("button");
      b[0].disabled = this.page === 0;
      b[1].disabled = this.page >= pages - 1;
    }
    if (this.done) this.done(shown.length, this.rows.length);
    cues();
  };

  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    if (!table.tHead || !table.tBodies.length) return;
    var heads = table.tHead.rows[table.tHead.rows.length - 1].cells;
    Array.prototype.forEach.call(heads, function (th, idx) {
      th.tabIndex = 0;
      th.addEventListener("click", function () { sortTable(table, idx, th); });
      th.addEventListener("keydown", function (e) {
        if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortTable(table, idx, th); }
      });
    });
  });

  function byId(id) { return document.getElementById(id); }

  function filterOf() {
    var q = (byId("q").value || "").trim().toLowerCase();
    var family = byId("family").value, size = byId("size").value, prompt = byId("prompt").value;
    return function (a) {
      return (!q || (a.search || "").indexOf(q) !== -1) && (!family || a.family === family) &&
        (!size || a.size === size) && (!prompt || a.prompt === prompt);
    };
  }

  function attrs(r) {
    return { search: r.getAttribute("data-search"), family: r.getAttribute("data-family"),
             size: r.getAttribute("data-size"), prompt: r.getAttribute("data-prompt") };
  }

  function showCount(shown, total) {
    byId("shown").textContent = shown + " of " + total + " models";
  }

  function applyFilters() {
    var table = byId("overview");
    if (!table) return;
    var keep = filterOf();
    if (table.paged && table.paged.rows) {
      table.paged.keep = keep;
      table.paged.page = 0;
      table.paged.render();
      return;
    }
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var ok = keep(attrs(rows[i]));
      rows[i].hidden = !ok;
      if (ok) shown++;
    }
    showCount(shown, rows.length);
  }

  function applyStrategy() {
    var k = byId("strategy").value;
    var table = byId("overview");
    if (table && table.paged && table.paged.rows) {
      table.paged.k = parseInt(k, 10);
      table.paged.render();
      return;
    }
    Array.prototype.forEach.call(document.querySelectorAll("#overview td.sw"), function (td) {
      var raw = td.getAttribute("data-s" + k);
      td.setAttribute("data-v", raw === null ? "" : raw);
      td.textContent = td.getAttribute("data-t" + k) || "\u2014";
      if (td.classList.contains("er")) {
        var x = parseFloat(raw);
        td.classList.remove("pos", "neg");
        if (!isNaN(x) && x !== 0) td.classList.add(x > 0 ? "pos" : "neg");
        td.title = td.getAttribute("data-c" + k) || "";
      }
    });
  }

  if (byId("controls")) {
    ["q", "family", "size", "prompt"].forEach(function (id) {
      byId(id).addEventListener("input", applyFilters);
      byId(id).addEventListener("change", applyFilters);
    });
    byId("strategy").addEventListener("change", applyStrategy);
    applyStrategy();
    applyFilters();
  }

  Array.prototype.forEach.call(document.querySelectorAll("table[data-rows]"), function (table) {
    var overview = table.id === "overview";
    table.paged = new Paged(table, overview ? showCount : null);
    table.paged.load().then(function () {
      // the controls' current state applies to every row now
      if (overview) { applyStrategy(); applyFilters(); }
    }).catch(function () { /* a file:// page keeps its first page */ });
  });

  // --- inline SVG: a shared chart file becomes part of the page once it is shown
  function inline(img) {
    if (img.getAttribute("data-inlined")) return;
    img.setAttribute("data-inlined", "1");
    fetch(img.getAttribute("src")).then(function (r) {
      return r.ok ? r.text() : Promise.reject(r.status);
    }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, "image/svg+xml");
      var svg = doc.documentElement;
      // keep the picture unless the file is a well-formed SVG (the site check
      // allows no script or handler in it)
      if (!svg || svg.localName !== "svg" || doc.getElementsByTagName("parsererror").length) return;
      svg = document.importNode(svg, true);
      svg.setAttribute("aria-label", img.getAttribute("alt") || "");
      img.parentNode.replaceChild(svg, img);
    }).catch(function () { /* a file:// page keeps the picture */ });
  }
  Array.prototype.forEach.call(document.querySelectorAll("img.inline"), function (img) {
    if (img.complete && img.naturalWidth) inline(img);
    else img.addEventListener("load", function () { inline(img); });
  });

  // --- keyboard focus on a chart point shows its label (hover shows the <title>)
  var tip = document.createElement("div");
  tip.className = "tip";
  tip.setAttribute("role", "tooltip");
  tip.hidden = true;
  document.body.appendChild(tip);
  document.addEventListener("focusin", function (e) {
    var t = e.target;
    var title = t && t.querySelector ? t.querySelector("title") : null;
    if (!title || !t.closest || !t.closest("svg")) { tip.hidden = true; return; }
    var box = t.getBoundingClientRect();
    tip.textContent = title.textContent;
    tip.hidden = false;
    tip.style.left = Math.max(4, Math.min(window.scrollX + box.left,
      window.scrollX + document.documentElement.clientWidth - tip.offsetWidth - 4)) + "px";
    tip.style.top = (window.scrollY + box.bottom + 6) + "px";
  });
  document.addEventListener("focusout", function () { tip.hidden = true; });

  // --- a box narrower than its table says so, with how many columns are hidden
  function cue(wrap) {
    var over = wrap.scrollWidth - wrap.clientWidth > 1;
    var note = wrap.previousElementSibling;
    if (!note || !note.classList.contains("scroll-cue")) {
      if (!over) return;
      note = document.createElement("p");
      note.className = "scroll-cue";
      wrap.parentNode.insertBefore(note, wrap);
      wrap.addEventListener("scroll", function () { cue(wrap); });
    }
    wrap.classList.toggle("scrolls", over);
    note.hidden = !over;
    if (!over) return;
    var right = wrap.getBoundingClientRect().right, hidden = 0;
    var head = wrap.querySelector("thead tr:last-child");
    if (head) Array.prototype.forEach.call(head.cells, function (c) {
      if (c.getBoundingClientRect().right > right + 1) hidden++;
    });
    var end = wrap.scrollLeft + wrap.clientWidth >= wrap.scrollWidth - 1;
    wrap.classList.toggle("at-end", end);
    note.textContent = end ? "\u2190 scroll back for the first columns" :
      "Scroll sideways \u2192 " + (hidden ? hidden + " more column" + (hidden > 1 ? "s" : "") : "more");
  }
  function cues() { Array.prototype.forEach.call(document.querySelectorAll(".wrap"), cue); }
  window.addEventListener("resize", cues);
  document.addEventListener("toggle", cues, true);
  cues();
})();
