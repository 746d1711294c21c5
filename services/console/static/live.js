// Live updates: the audit stream arrives as server-sent events; after a burst settles, the page's
// <main> is fetched again from the server and swapped in (focus and scroll stay where they were).
(function () {
  "use strict";
  var status = document.getElementById("live");
  var main = document.getElementById("main");
  var timer = null;
  function say(text) { if (status) { status.textContent = text; } }
  function refresh() {
    timer = null;
    fetch(window.location.href, { headers: { "X-Console-Fragment": "1" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null || !main) { return; }
        var focused = document.activeElement && document.activeElement.id;
        main.innerHTML = html;
        if (focused) { var again = document.getElementById(focused); if (again) { again.focus(); } }
        main.setAttribute("data-refreshed", String(Date.now()));
      })
      .catch(function () { say("could not refresh; retrying on the next event"); });
  }
  if (!window.EventSource) { say("live updates need EventSource"); return; }
  var source = new EventSource("/events");
  // What happened between rendering the page and subscribing is caught up by one refresh.
  source.addEventListener("open", function () { say("live: following the audit stream"); refresh(); });
  source.addEventListener("error", function () { say("live updates interrupted; reconnecting…"); });
  source.addEventListener("audit", function (event) {
    var e = JSON.parse(event.data);
    say("last event: " + e.service + "." + e.action + " " + (e.kind || "") + " " + (e.name || ""));
    if (timer === null) { timer = setTimeout(refresh, 400); }
  });
})();
