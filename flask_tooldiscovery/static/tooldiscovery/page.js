/* flask-tooldiscovery explorer page: what explorer.js and prompts.js share (window.TooldiscoveryPage):
   the page's config and prefix, el() to build nodes (every text inserted with textContent, never as
   HTML), and the JSON requests that carry the token field. Loaded before both, deferred. */
(function () {
  "use strict";

  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) return;
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    });
    (children || []).forEach(function (child) { if (child) node.appendChild(child); });
    return node;
  }

  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function pretty(value) { return JSON.stringify(value, null, 2); }

  // The token field takes the token with or without its scheme: "abc" and "Bearer abc" both send
  // "Authorization: Bearer abc"; the scheme alone is no token.
  function authorization() {
    var token = $("td-token").value.trim().replace(/^bearer(\s+|$)/i, "");
    return token ? "Bearer " + token : null;
  }
  function headers(json) {
    var h = { "Accept": "application/json" };
    if (json) h["Content-Type"] = "application/json";
    var auth = authorization();
    if (auth) h["Authorization"] = auth;
    return h;
  }
  // {status, ok, data, raw}: data is the parsed JSON (else {error: text}); raw is what "Raw response"
  // shows: the whole JSON document pretty-printed (_meta included), else the body as it came.
  function request(method, url, body) {
    return fetch(url, { method: method, headers: headers(body !== undefined), body: body === undefined ? undefined : JSON.stringify(body) })
      .then(answer);
  }
  function answer(response) {
    return response.text().then(function (text) {
      var data = null, raw = text;
      try { data = text ? JSON.parse(text) : null; raw = data === null ? "" : pretty(data); } catch (e) { data = { error: text }; }
      return { status: response.status, ok: response.ok, data: data, raw: raw };
    });
  }

  window.TooldiscoveryPage = {
    config: function () { return JSON.parse($("td-config").textContent); },  // a copy of its own for each script
    base: location.pathname.replace(/[^/]*$/, ""),  // the explorer's prefix, e.g. /explorer/
    $: $, el: el, clear: clear, pretty: pretty,
    authorization: authorization, headers: headers, request: request, answer: answer
  };
})();
