// Click (or Enter/Space on) a column header of a table.sortable to sort its rows.
// Cells carry their raw value in data-v (numbers stay numbers); empty data-v means
// "not measured" and always sorts last. Ties keep the previous order (stable sort).
// The overview's controls filter rows (search, prompt, family, size) and switch the
// distractor strategy of the ER and accuracy cells (values precomputed per strategy
// in data-s<i> / data-t<i> / data-c<i>). Text only ever goes in via textContent.
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

  function sortTable(table, idx, th) {
    var numeric = th.getAttribute("data-type") === "num";
    var current = th.getAttribute("aria-sort");
    var dir;
    if (current === "descending") dir = "ascending";
    else if (current === "ascending") dir = "descending";
    else dir = numeric ? "descending" : "ascending";
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var keyed = rows.map(function (r, i) { return { row: r, i: i, v: cellValue(r, idx, numeric) }; });
    var sign = dir === "ascending" ? 1 : -1;
    keyed.sort(function (a, b) {
      if (a.v === null && b.v === null) return a.i - b.i;
      if (a.v === null) return 1;
      if (b.v === null) return -1;
      if (a.v < b.v) return -sign;
      if (a.v > b.v) return sign;
      return a.i - b.i;
    });
    var frag = document.createDocumentFragment();
    keyed.forEach(function (k) { frag.appendChild(k.row); });
    body.appendChild(frag);
    Array.prototype.forEach.call(th.parentNode.cells, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
  }

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

  function applyFilters() {
    var table = byId("overview");
    if (!table) return;
    var q = (byId("q").value || "").trim().toLowerCase();
    var family = byId("family").value, size = byId("size").value, prompt = byId("prompt").value;
    var rows = table.tBodies[0].rows, shown = 0;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i];
      var ok = (!q || (r.getAttribute("data-search") || "").indexOf(q) !== -1) &&
        (!family || r.getAttribute("data-family") === family) &&
        (!size || r.getAttribute("data-size") === size) &&
        (!prompt || r.getAttribute("data-prompt") === prompt);
      r.hidden = !ok;
      if (ok) shown++;
    }
    byId("shown").textContent = shown + " of " + rows.length + " models";
  }

  function applyStrategy() {
    var k = byId("strategy").value;
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
