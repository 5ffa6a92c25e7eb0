// cyber-supervisor dashboard: live updates with a pause.
//
// Every page works without this script (reload refreshes it). With it,
// the page asks for itself again every data-poll milliseconds, sending
// its content's tag (If-None-Match); the server answers 304 when nothing
// changed, otherwise the new page, whose #content replaces this one's.
// The filters form is outside #content, so typing in it is never lost.
// The pause is kept for the tab (sessionStorage).
(function () {
  "use strict";
  var body = document.body;
  var period = parseInt(body.getAttribute("data-poll"), 10) || 2000;
  var live = document.getElementById("live");
  var button = document.getElementById("pause");
  var content = document.getElementById("content");
  if (!live || !button || !content || !window.fetch || !window.DOMParser) {
    return;
  }
  var paused = sessionStorage.getItem("dashboard-paused") === "1";
  var timer = null;
  var inflight = false;

  function stamp() {
    var d = new Date();
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getUTCHours()) + ":" + two(d.getUTCMinutes()) + ":" + two(d.getUTCSeconds());
  }

  function show(state, text) {
    live.className = "live " + state;
    live.textContent = text;
  }

  function schedule() {
    clearTimeout(timer);
    if (!paused) {
      timer = setTimeout(poll, period);
    }
  }

  function poll() {
    if (paused || inflight) {
      return;
    }
    if (document.hidden) {
      schedule();
      return;
    }
    inflight = true;
    var tag = content.getAttribute("data-tag") || "";
    fetch(location.href, {
      credentials: "same-origin",
      cache: "no-store",
      redirect: "follow",
      headers: { "If-None-Match": tag }
    }).then(function (resp) {
      if (resp.status === 304) {
        show("on", "live · checked " + stamp() + " UTC");
        return null;
      }
      if (!resp.ok) {
        show("err", "update failed: HTTP " + resp.status);
        return null;
      }
      return resp.text();
    }).then(function (html) {
      if (html === null || html === undefined || paused) {
        return;
      }
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.getElementById("content");
      if (!fresh) {
        show("err", "update failed: not a dashboard page");
        return;
      }
      content.innerHTML = fresh.innerHTML;
      content.setAttribute("data-tag", fresh.getAttribute("data-tag") || "");
      document.title = doc.title;
      show("on", "live · updated " + stamp() + " UTC");
    }).catch(function (err) {
      show("err", "update failed: " + err.message);
    }).then(function () {
      inflight = false;
      schedule();
    });
  }

  function setPaused(p) {
    paused = p;
    sessionStorage.setItem("dashboard-paused", p ? "1" : "0");
    button.textContent = p ? "Resume" : "Pause";
    button.setAttribute("aria-pressed", p ? "true" : "false");
    if (p) {
      clearTimeout(timer);
      show("paused", "paused · reload or resume to refresh");
    } else {
      show("on", "live");
      poll();
    }
  }

  button.hidden = false;
  button.addEventListener("click", function () { setPaused(!paused); });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !paused) {
      poll();
    }
  });
  setPaused(paused);
})();
