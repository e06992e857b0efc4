/* flask-tooldiscovery explorer page: the prompts list. Lists the app's prompts under the tools, builds
   a form from each prompt's arguments (suggestions from the server's completions as one types), gets
   the prompt and shows its messages. No framework, no CDN; every text is inserted with textContent. */
(function () {
  "use strict";

  var P = window.TooldiscoveryPage;
  var config = P.config(), base = P.base, $ = P.$, el = P.el, clear = P.clear, request = P.request;
  var state = { prompts: [], current: null, fields: {}, pending: null };

  function promptUrl(name, action) { return base + "prompts/" + encodeURIComponent(name) + (action ? "/" + action : ""); }

  /* ---------- the list ---------- */
  // Loaded at start, and again once the token changes (as the tools list is).
  var loads = 0;
  function load(first) {
    var mine = ++loads;
    return request("GET", base + "prompts").then(function (r) {
      if (mine !== loads) return;
      state.prompts = r.ok && r.data && Array.isArray(r.data.prompts) ? r.data.prompts : [];
      renderList();
      var wanted = first ? /^#prompt=(.+)$/.exec(location.hash) : null;
      if (wanted) select(decodeURIComponent(wanted[1]));
      document.body.setAttribute("data-prompts-ready", "true");
    });
  }
  function renderList() {
    var list = $("td-prompts");
    clear(list);
    $("td-prompts-wrap").hidden = !state.prompts.length;
    state.prompts.forEach(function (prompt) {
      list.appendChild(el("li", {}, [el("button", {
        type: "button", "data-prompt": prompt.name, "aria-current": state.current === prompt.name ? "true" : "false",
        onclick: function () { select(prompt.name); }
      }, [
        el("span", { className: "tool-name", text: prompt.title || prompt.name }),
        el("span", { className: "tool-desc", text: (prompt.description || "").split("\n")[0] })
      ])]));
    });
  }

  /* ---------- one prompt ---------- */
  function select(name) {
    var prompt = state.prompts.filter(function (p) { return p.name === name; })[0];
    if (!prompt) return;
    state.current = name;
    if (location.hash !== "#prompt=" + encodeURIComponent(name)) history.replaceState(null, "", "#prompt=" + encodeURIComponent(name));
    renderList();
    Array.prototype.forEach.call(document.querySelectorAll("#td-list button"), function (b) { b.setAttribute("aria-current", "false"); });
    $("td-empty").hidden = true;
    $("td-detail").hidden = true;
    $("td-prompt").hidden = false;
    $("td-prompt-name").textContent = prompt.title ? prompt.title + " (" + prompt.name + ")" : prompt.name;
    $("td-prompt-description").textContent = prompt.description || "";
    clear($("td-prompt-messages"));
    $("td-prompt-status").textContent = "";
    renderForm(prompt);
    $("td-prompt-get").disabled = !config.allow_execute;
    $("td-prompt-disabled").hidden = !!config.allow_execute;
  }

  function renderForm(prompt) {
    var form = $("td-prompt-form");
    clear(form);
    state.fields = {};
    (prompt.arguments || []).forEach(function (argument) {
      var id = "td-prompt-arg-" + argument.name, listId = id + "-options";
      var input = el("input", { id: id, type: "text", name: argument.name, list: listId, autocomplete: "off",
                                "aria-required": argument.required ? "true" : "false" });
      var options = el("datalist", { id: listId });
      input.addEventListener("input", function () { suggest(prompt.name, argument.name, input.value, options); });
      input.addEventListener("focus", function () { suggest(prompt.name, argument.name, input.value, options); });
      state.fields[argument.name] = input;
      form.appendChild(el("div", { className: "field" }, [
        el("label", { "for": id }, [document.createTextNode(argument.name),
          argument.required ? el("span", { className: "req", text: "*", "aria-hidden": "true" }) : null]),
        argument.description ? el("span", { className: "hint", text: argument.description }) : null,
        input, options
      ]));
    });
    if (!(prompt.arguments || []).length) form.appendChild(el("p", { className: "muted", text: "This prompt takes no arguments." }));
  }

  function chosen() {
    var out = {};
    Object.keys(state.fields).forEach(function (name) { if (state.fields[name].value !== "") out[name] = state.fields[name].value; });
    return out;
  }

  // Suggestions for one argument as it is typed: the server's completions, the latest answer wins.
  function suggest(promptName, argument, value, options) {
    if (!config.allow_execute) return;
    var asked = state.pending = {};
    request("POST", promptUrl(promptName, "complete"), { argument: argument, value: value, arguments: chosen() }).then(function (r) {
      if (asked !== state.pending || !r.ok || !r.data || !Array.isArray(r.data.values)) return;
      clear(options);
      r.data.values.forEach(function (v) { options.appendChild(el("option", { value: v })); });
    });
  }

  function contentNode(content) {
    if (!content) return el("span", {});
    if (content.type === "text") return el("p", { className: "message-text", text: content.text });
    if (content.type === "image") return el("img", { className: "result-image", alt: "Image (" + content.mimeType + ")", src: "data:" + content.mimeType + ";base64," + content.data });
    if (content.type === "audio") return el("audio", { className: "result-audio", controls: true, src: "data:" + content.mimeType + ";base64," + content.data });
    if (content.type === "resource" && content.resource) {
      var r = content.resource;
      return el("div", {}, [el("span", { className: "hint", text: "Embedded resource " + r.uri + " (" + r.mimeType + ")" }),
        "text" in r ? el("pre", { className: "code", text: r.text }) : el("span", { className: "muted", text: "binary, base64" })]);
    }
    if (content.type === "resource_link") return el("span", { text: "Link to " + content.uri + " (" + content.name + ")" });
    return el("pre", { className: "code", text: JSON.stringify(content, null, 2) });
  }

  function get() {
    if (!state.current) return;
    var missing = [];
    var prompt = state.prompts.filter(function (p) { return p.name === state.current; })[0];
    (prompt.arguments || []).forEach(function (a) { if (a.required && !state.fields[a.name].value) missing.push(a.name); });
    var box = $("td-prompt-messages");
    clear(box);
    if (missing.length) { $("td-prompt-status").textContent = "Fill in: " + missing.join(", "); $("td-prompt-status").className = "error"; return; }
    $("td-prompt-status").textContent = "Getting…"; $("td-prompt-status").className = "muted";
    request("POST", promptUrl(state.current, "get"), chosen()).then(function (r) {
      if (!r.ok) {
        $("td-prompt-status").textContent = "HTTP " + r.status + ": " + ((r.data && r.data.error) || "failed");
        $("td-prompt-status").className = "error";
        return;
      }
      $("td-prompt-status").textContent = r.data.messages.length + " message" + (r.data.messages.length === 1 ? "" : "s");
      $("td-prompt-status").className = "ok";
      r.data.messages.forEach(function (m) {
        box.appendChild(el("li", { "data-role": m.role }, [el("span", { className: "role", text: m.role }), contentNode(m.content)]));
      });
    });
  }

  $("td-prompt-get").addEventListener("click", get);
  // Choosing a tool (from the list, or by its #tool= address) leaves the prompt.
  function leave() {
    $("td-prompt").hidden = true;
    state.current = null;
    renderList();
  }
  $("td-list").addEventListener("click", leave, true);
  window.addEventListener("hashchange", function () {
    var wanted = /^#prompt=(.+)$/.exec(location.hash);
    if (wanted && decodeURIComponent(wanted[1]) !== state.current) select(decodeURIComponent(wanted[1]));
    else if (/^#tool=/.test(location.hash)) leave();
  });
  var tokenLoaded = $("td-token").value.trim();
  $("td-token").addEventListener("change", function () {
    if ($("td-token").value.trim() === tokenLoaded) return;
    tokenLoaded = $("td-token").value.trim();
    load(false);
  });
  load(true);
}());
