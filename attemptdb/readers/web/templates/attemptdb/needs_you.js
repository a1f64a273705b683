// Needs You, refreshed every 5 seconds: served by the plugin as `needs-you.js` (the plugin's pages
// run no inline script, plugin.PAGE_CSP); every value reaches the DOM through textContent. A read
// that fails (an answer that is not OK, or none) hides the rows drawn before, which are no longer
// known to be the state, and says so until a read succeeds.
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
    document.getElementById("adb-error").hidden = true;
    document.body.setAttribute("data-adb-polled", "yes");
  }
  function fail(why) {
    document.getElementById("adb-needs-you").hidden = true;
    document.getElementById("adb-empty").hidden = true;
    var error = document.getElementById("adb-error");
    error.textContent = "Could not read Needs You at " + new Date().toLocaleTimeString() + " (" + why +
      "): what it showed before is hidden; trying again every 5 seconds.";
    error.hidden = false;
    document.body.setAttribute("data-adb-polled", "failed");
  }
  function poll() {
    fetch(prefix + "/needs-you.json", {credentials: "same-origin", cache: "no-store"})
      .then(function (r) {
        if (r.ok) { return r.json(); }
        var why = "the server answered " + r.status;
        if (r.status === 403) { why += ": open the address `attempt ui` printed again"; }
        return {failed: why};
      })
      .then(function (d) { if (d && d.failed) { fail(d.failed); } else { render(d || {}); } })
      .catch(function () { fail("no answer the page could read"); });
  }
  poll();
  setInterval(poll, 5000);
})();
