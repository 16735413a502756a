// pgmill dashboard: live refresh of the #live part of each page, and confirmations.
(function () {
  "use strict";
  // Forms with data-confirm ask first.
  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) {
      event.preventDefault();
    }
  });

  var live = document.getElementById("live");
  var status = document.getElementById("live-status");
  var every = Number(document.body.getAttribute("data-refresh-ms") || 0);
  if (!live || !every) {
    return;
  }
  var busy = false;
  function mark(ok) {
    if (status) {
      status.textContent = ok ? "live" : "stale";
      status.className = "badge " + (ok ? "live" : "stale");
    }
  }
  function refresh() {
    // Leave the page alone while someone types or uses a control in it, or cannot see it.
    var focused = document.activeElement;
    if (busy || document.hidden || (focused && focused !== document.body && live.contains(focused))) {
      return;
    }
    busy = true;
    fetch(window.location.href, {
      headers: { "X-Pgmill-Live": "1" },
      credentials: "same-origin",
      cache: "no-store"
    }).then(function (response) {
      if (!response.ok || response.headers.get("X-Pgmill-Live") !== "1") {
        throw new Error("refresh failed: " + response.status);
      }
      return response.text();
    }).then(function (html) {
      live.innerHTML = html;
      live.setAttribute("data-refreshed", String(Date.now()));
      mark(true);
    }).catch(function () {
      mark(false);
    }).then(function () {
      busy = false;
    });
  }
  window.setInterval(refresh, every);
})();
