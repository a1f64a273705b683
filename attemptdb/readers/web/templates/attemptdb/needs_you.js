// Needs You, refreshed every 5 seconds: served by the plugin as `needs-you.js` (the plugin's pages
// run no inline script, plugin.PAGE_CSP); every value reaches the DOM through textContent.
(function () {
  var prefix = document.currentScript.getAttribute("data-prefix");
  function cell(tr, text, href, code) {
    var td = document.createElement("td");
    var holder = td;
    if (href) { var a = document.createElement("a"); a.href = href; td.appendChild(a); holder = a; }
    if (code) { var c = document.createElement("code"); c.className = "adb-id"; holder.appendChild(c); holder = c; }
    holder.textContent = text == null ? "" : String(text);
    tr.appendChild(td);
    return td;
  }
  function render(data) {
    var rows = data.rows || [];
    var body = document.querySelector("#adb-needs-you tbody");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    rows.forEach(function (r) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-kind", String(r.kind));
      cell(tr, r.rank); cell(tr, r.kind).className = "adb-kind"; cell(tr, r.since); cell(tr, r.project_name);
      cell(tr, r.provider); cell(tr, r.work_unit_id, null, true);
      cell(tr, r.session_id, r.session_id ? prefix + "/session/" + encodeURIComponent(r.session_id) : null, true);
      cell(tr, r.reason); cell(tr, r.confidence);
      var n = (r.evidence || []).length; cell(tr, n + (n === 1 ? " event" : " events"));
      body.appendChild(tr);
    });
    document.getElementById("adb-needs-you").hidden = rows.length === 0;
    document.getElementById("adb-empty").hidden = rows.length !== 0;
    document.getElementById("adb-read-at").textContent = "at " + String(data.read_at);
    document.body.setAttribute("data-adb-polled", "yes");
  }
  function poll() {
    fetch(prefix + "/needs-you.json", {credentials: "same-origin", cache: "no-store"})
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) { if (d) { render(d); } })
      .catch(function () {});
  }
  poll();
  setInterval(poll, 5000);
})();
