// Magnetar console: live charts and subscription actions. No build step,
// no dependencies. Actions call the admin REST API (/admin/v2) directly,
// so they pass the same authentication and authorization as any admin
// client; destructive ones need a confirmation first.
"use strict";

(function () {
  var W = 600, H = 150, WINDOW = 15 * 60 * 1000;

  function human(v) {
    var a = Math.abs(v), u = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < u.length; i++) {
      if (a >= u[i][0]) return (v / u[i][0]).toFixed(1) + u[i][1];
    }
    return v === Math.trunc(v) ? String(v) : v.toFixed(2);
  }

  function niceCeil(v) {
    if (!(v > 0) || !isFinite(v)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(v))), m = [1, 2, 5, 10];
    for (var i = 0; i < m.length; i++) if (v <= m[i] * p) return m[i] * p;
    return 10 * p;
  }

  // draw redraws every chart from the history JSON (same geometry as
  // the server-rendered SVG, see svg.go).
  function draw(h) {
    var start = h.now - WINDOW;
    var samples = h.samples.filter(function (s) { return s.at >= start; });
    document.querySelectorAll("svg.chart").forEach(function (svg) {
      var keys = svg.dataset.keys.split(","), top = 0;
      samples.forEach(function (s) { keys.forEach(function (k) { top = Math.max(top, s[k]); }); });
      top = niceCeil(top);
      keys.forEach(function (k) {
        var line = svg.querySelector('polyline[data-key="' + k + '"]');
        if (!line) return;
        var pts = samples.map(function (s) {
          var x = W * (s.at - start) / WINDOW, y = H - H * s[k] / top;
          return x.toFixed(1) + "," + y.toFixed(1);
        });
        line.setAttribute("points", pts.join(" "));
        line.dataset.n = String(pts.length);
        var box = svg.closest("figure");
        var last = box.querySelector('.last[data-key="' + k + '"]');
        if (last && samples.length) last.textContent = human(samples[samples.length - 1][k]);
        box.querySelector(".max b").textContent = human(top);
      });
    });
  }

  function poll(topic) {
    var every = Math.max(1, parseFloat(topic.dataset.interval) || 5) * 1000;
    function tick() {
      fetch(topic.dataset.history, { headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .then(function (h) { if (h) draw(h); })
        .catch(function () {})
        .finally(function () { setTimeout(tick, every); });
    }
    setTimeout(tick, every);
  }

  function say(text, state) {
    var out = document.getElementById("action-result");
    out.textContent = text;
    out.dataset.state = state;
  }

  function reasonOf(r) {
    return r.text().then(function (t) {
      try { return JSON.parse(t).reason || t; } catch (e) { return t || r.statusText; }
    });
  }

  // call runs one admin request and reports its outcome; on success the
  // page reloads to show the new numbers.
  function call(method, url, what) {
    say(what + "…", "running");
    return fetch(url, { method: method }).then(function (r) {
      if (r.ok) {
        say(what + ": done (HTTP " + r.status + ")", "ok");
        setTimeout(function () { location.reload(); }, 800);
        return;
      }
      return reasonOf(r).then(function (reason) { say(what + " failed: HTTP " + r.status + " " + reason, "error"); });
    }, function (e) { say(what + " failed: " + e, "error"); });
  }

  function peek(path) {
    var out = document.getElementById("peek-output"), parts = [];
    function one(n) {
      if (n > 3) return Promise.resolve();
      return fetch(path + "/position/" + n).then(function (r) {
        if (!r.ok) return reasonOf(r).then(function (reason) { if (n === 1) parts.push("HTTP " + r.status + " " + reason); });
        return r.text().then(function (body) {
          // Binary framing (a batch's per-message header) shows as dots.
          var shown = body.slice(0, 2000).replace(/[\u0000-\u0008\u000b-\u001f\u007f\ufffd]/g, "\u00b7");
          var batch = r.headers.get("X-Pulsar-num-batch-message");
          parts.push("#" + n + " id " + (r.headers.get("X-Pulsar-Message-ID") || "?") + (batch ? " (batch of " + batch + ")" : "") + ":\n" + shown);
          return one(n + 1);
        });
      });
    }
    say("peeking…", "running");
    one(1).then(function () {
      out.textContent = parts.join("\n\n") || "(no messages in the backlog)";
      out.hidden = false;
      say("peeked " + parts.length + " message(s)", "ok");
    });
  }

  // confirmAndCall shows the confirmation dialog; only "Confirm" calls
  // the admin API.
  function confirmAndCall(title, text, method, url) {
    var dlg = document.getElementById("confirm");
    document.getElementById("confirm-title").textContent = title;
    document.getElementById("confirm-text").textContent = text;
    document.getElementById("confirm-call").textContent = method + " " + url;
    dlg.returnValue = "";
    dlg.onclose = function () {
      if (dlg.returnValue === "ok") call(method, url, title);
      else say(title + ": cancelled", "cancelled");
    };
    dlg.showModal();
  }

  function wireActions(topic) {
    document.querySelectorAll("#subscriptions button.act").forEach(function (b) {
      b.addEventListener("click", function () {
        var row = b.closest("tr"), sub = row.dataset.sub, path = row.dataset.path;
        var backlog = row.querySelector(".backlog").textContent.trim();
        var name = document.getElementById("topic-name").textContent;
        switch (b.dataset.action) {
          case "skip_all":
            confirmAndCall("Skip all", "Skip all " + backlog + " messages of subscription \u201c" + sub + "\u201d on " + name + "? They are acknowledged and cannot be read again through it.", "POST", path + "/skip_all");
            break;
          case "reset":
            var v = row.querySelector(".reset-time").value;
            if (!v) { say("Reset cursor: choose a date and time first", "error"); return; }
            var ts = new Date(v).getTime();
            if (!isFinite(ts)) { say("Reset cursor: bad time " + v, "error"); return; }
            confirmAndCall("Reset cursor", "Move subscription \u201c" + sub + "\u201d to the first message published at or after " + new Date(ts).toString() + "? Its consumers are disconnected and messages after that point are delivered again.", "POST", path + "/resetcursor/" + ts);
            break;
          case "delete":
            confirmAndCall("Delete subscription", "Delete subscription \u201c" + sub + "\u201d of " + name + " and its backlog of " + backlog + " messages?", "DELETE", path);
            break;
          case "peek":
            peek(path);
            break;
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll(".bar [data-width]").forEach(function (e) { e.style.width = e.dataset.width; });
    var topic = document.getElementById("topic");
    if (!topic) return;
    poll(topic);
    wireActions(topic);
  });
})();
