/* flask-tooldiscovery explorer page: lists tools, builds a form from each input schema, validates,
   runs tools and keeps a per-tool history. No framework, no CDN; every text is inserted with
   textContent, never as HTML. */
(function () {
  "use strict";

  var P = window.TooldiscoveryPage;
  var config = P.config(), base = P.base, $ = P.$;
  var el = P.el, clear = P.clear, pretty = P.pretty;
  var authorization = P.authorization, headers = P.headers, request = P.request, answer = P.answer;
  var state = { tools: [], current: null, detail: null, mode: "form", running: null, runningTask: null, urls: [],
                serverApproval: {}, tasks: {}, uiShown: 0 };
  var HISTORY_LIMIT = 20;

  function toolUrl(name, suffix) {
    return base + "tools/" + name.split("/").map(encodeURIComponent).join("/") + (suffix || "");
  }

  /* ---------- theme ---------- */
  function applyTheme(theme) {
    document.documentElement.setAttribute("data-theme", theme);
    $("td-theme").setAttribute("aria-pressed", theme === "dark" ? "true" : "false");
    $("td-theme").textContent = theme === "dark" ? "Light mode" : "Dark mode";
  }
  // theme.js set the saved (or the system's) theme before the first paint; reflect it on the toggle.
  applyTheme(document.documentElement.getAttribute("data-theme") === "dark" ? "dark" : "light");
  $("td-theme").addEventListener("click", function () {
    var next = document.documentElement.getAttribute("data-theme") === "dark" ? "light" : "dark";
    applyTheme(next);
    try { localStorage.setItem("tooldiscovery:theme", next); } catch (e) { /* ignore */ }
  });

  /* ---------- HTTP ---------- */
  // authorization(), headers(), request() and answer() are page.js's.
  function showTokenStatus() { $("td-token-status").textContent = authorization() ? "Token set" : "No token"; }

  /* ---------- live calls ---------- */
  // A call asking for events (Accept: text/event-stream): progress and log lines reach onEvent as
  // they come; resolves to what request() gives, from the last event (result: the plain call's
  // body; error: {status, body}). A refusal before the stream opens is a plain JSON answer.
  function callLive(url, args, approvalState, signal, onEvent) {
    var h = headers(true);
    h["Accept"] = "text/event-stream";
    if (approvalState) h["X-Tool-Approval"] = approvalState;
    return fetch(url, { method: "POST", headers: h, body: JSON.stringify(args), signal: signal }).then(function (response) {
      if (!/^text\/event-stream/i.test(response.headers.get("Content-Type") || "") || !response.body) return answer(response);
      return readEvents(response.body.getReader(), onEvent);
    });
  }
  function readEvents(reader, onEvent) {
    var decoder = new TextDecoder(), buffer = "", name = "message", lines = [], last = null;
    function dispatch() {
      var data = null;
      try { data = lines.length ? JSON.parse(lines.join("\n")) : null; } catch (e) { /* not ours */ }
      if (data && name === "result") last = { status: data.isError ? (data.errors ? 400 : 500) : 200, data: data };
      else if (data && name === "error") last = { status: data.status, data: data.body };
      else if (data) onEvent(name, data);
      name = "message"; lines = [];
    }
    function line(text) {  // the SSE line format: "field: value", ":" comments, "" ends an event
      if (text === "") { dispatch(); return; }
      if (text.charAt(0) === ":") return;  // keep-alive
      var colon = text.indexOf(":"), field = colon < 0 ? text : text.slice(0, colon), value = colon < 0 ? "" : text.slice(colon + 1);
      if (value.charAt(0) === " ") value = value.slice(1);
      if (field === "event") name = value; else if (field === "data") lines.push(value);
    }
    function pump() {
      return reader.read().then(function (chunk) {
        buffer += chunk.done ? decoder.decode() + "\n\n" : decoder.decode(chunk.value, { stream: true });
        var parts = buffer.split(/\r\n|\r|\n/);
        buffer = parts.pop();
        parts.forEach(line);
        if (!chunk.done) return pump();
        if (!last) throw new Error("the call's stream ended without a result");
        var ok = last.status >= 200 && last.status < 300;
        return { status: last.status, ok: ok, data: last.data, raw: last.data === null || last.data === undefined ? "" : pretty(last.data) };
      });
    }
    return pump();
  }
  function startLive(controller) {
    state.running = controller;
    state.stopped = false;
    $("td-live").hidden = true;
    $("td-progress").removeAttribute("value");
    $("td-progress-text").textContent = "";
    clear($("td-log"));
    $("td-log").hidden = true;
    $("td-stop").hidden = false;
    $("td-execute").disabled = true;
  }
  function finishLive() {
    state.running = null;
    state.runningTask = null;
    $("td-stop").hidden = true;
    $("td-execute").disabled = false;
  }
  function showLive(kind, data) {
    if (kind === "task") { state.runningTask = String(data.id); tasks.remember(state.current, data); return; }
    $("td-live").hidden = false;
    if (kind === "progress" && typeof data.progress === "number") {
      var bar = $("td-progress"), total = typeof data.total === "number" && data.total > 0 ? data.total : null;
      if (total !== null) { bar.max = total; bar.value = Math.min(data.progress, total); } else bar.removeAttribute("value");
      $("td-progress-text").textContent = (total !== null ? data.progress + " / " + total : String(data.progress)) +
        (data.message ? " \u2014 " + data.message : "");
    } else if (kind === "log") {
      $("td-log").hidden = false;
      $("td-log").appendChild(el("li", { "data-level": String(data.level), text: "[" + data.level + "] " + data.message }));
    }
  }
  // Stop: the call is a task on the server, so closing its stream would leave it running; ask the
  // server to stop it (the stream then ends with its answer). No task named yet: close the stream.
  $("td-stop").addEventListener("click", function () {
    state.stopped = true;
    if (state.runningTask) tasks.cancel(state.runningTask);
    else if (state.running) state.running.abort();
  });

  /* ---------- tool list ---------- */
  function badgesFor(annotations, tool) {
    var out = [];
    annotations = annotations || {};
    if (tool && tool.visibility && tool.visibility.indexOf("model") < 0) out.push(["app only", ""]);
    if (tool && tool.ui) out.push(["UI", ""]);
    if (annotations.readOnlyHint) out.push(["read-only", "readonly"]);
    if (annotations.destructiveHint) out.push(["destructive", "destructive"]);
    if (annotations.idempotentHint) out.push(["idempotent", ""]);
    if (annotations.openWorldHint === false) out.push(["closed-world", ""]);
    return out.map(function (b) { return el("span", { className: "badge " + b[1], text: b[0] }); });
  }

  // The filter: the server's search (GET tools?q=..., best first, in the words people use) when
  // its answer for the current text has come, then every tool whose name or description holds the
  // text; a text the server cannot search (only punctuation...) filters by the text alone.
  var ranked = { query: null, names: [] };
  var searchTimer = null, searches = 0;
  function searchTools() {
    var query = $("td-filter").value.trim();
    clearTimeout(searchTimer);
    if (!query) { ranked = { query: null, names: [] }; renderList(); return; }
    renderList();
    searchTimer = setTimeout(function () {
      var mine = ++searches;
      request("GET", base + "tools?limit=50&q=" + encodeURIComponent(query)).then(function (r) {
        if (mine !== searches) return;  // a later search answers instead
        ranked = { query: query, names: r.ok ? (r.data || []).map(function (t) { return t.name; }) : [] };
        renderList();
        document.body.setAttribute("data-searched", query);
      });
    }, 200);
  }

  function renderList() {
    var text = $("td-filter").value.trim();
    var query = text.toLowerCase();
    var list = $("td-list");
    clear(list);
    var byName = {};
    state.tools.forEach(function (tool) { byName[tool.name] = tool; });
    var best = ranked.query === text ? ranked.names.filter(function (n) { return byName[n]; }) : [];
    var shown = best.map(function (n) { return byName[n]; }).concat(state.tools.filter(function (tool) {
      return best.indexOf(tool.name) < 0 && (!query || tool.name.toLowerCase().indexOf(query) >= 0 ||
        (tool.description || "").toLowerCase().indexOf(query) >= 0);
    }));
    shown.forEach(function (tool) {
      var button = el("button", {
        type: "button", "data-tool": tool.name,
        "aria-current": state.current === tool.name ? "true" : "false",
        onclick: function () { selectTool(tool.name, true); }
      }, [
        el("span", { className: "tool-name", text: tool.name }),
        el("span", { className: "tool-desc", text: (tool.description || "").split("\n")[0] }),
        el("span", { className: "badges" }, badgesFor(tool.annotations, tool))
      ]);
      list.appendChild(el("li", {}, [button]));
    });
    $("td-count").textContent = shown.length + " of " + state.tools.length + " tools";
  }

  /* ---------- schema form ---------- */
  function unwrap(schema) {
    schema = schema || {};
    var variants = schema.anyOf || schema.oneOf;
    if (Array.isArray(variants)) {
      var nonNull = variants.filter(function (v) { return !(v && v.type === "null"); });
      if (nonNull.length === 1) {
        var merged = Object.assign({}, nonNull[0]);
        ["description", "default", "title"].forEach(function (k) { if (k in schema && !(k in merged)) merged[k] = schema[k]; });
        merged.nullable = true;
        return merged;
      }
    }
    if (Array.isArray(schema.type)) {
      var types = schema.type.filter(function (t) { return t !== "null"; });
      if (types.length === 1) return Object.assign({}, schema, { type: types[0], nullable: true });
    }
    return schema;
  }
  function kindOf(schema) {
    if (Array.isArray(schema.enum)) return "enum";
    if (schema.type === "object" && schema.properties) return "object";
    if (schema.type === "array" && schema.items && typeof schema.items === "object") return "array";
    if (["string", "integer", "number", "boolean"].indexOf(schema.type) >= 0) return schema.type;
    return "json";
  }

  // Each field builder returns {node, get(): value|undefined, set(value)}.
  function buildField(schema, path, label, required) {
    schema = unwrap(schema);
    var kind = kindOf(schema);
    var id = "f" + path.replace(/[^A-Za-z0-9_-]/g, "_");
    var hintText = [schema.description, "default" in schema ? "Default: " + JSON.stringify(schema["default"]) : null]
      .filter(Boolean).join(" \u2014 ");
    var error = el("span", { className: "field-error", "data-error-for": path, hidden: true });
    var labelNode = el(kind === "object" ? "legend" : "label", kind === "object" ? {} : { "for": id }, [
      document.createTextNode(label),
      required ? el("span", { className: "req", text: "*", title: "required", "aria-hidden": "true" }) : null
    ]);
    var hint = hintText ? el("span", { className: "hint", id: id + "-hint", text: hintText }) : null;

    if (kind === "object") {
      var children = {};
      var requiredSet = schema.required || [];
      var fieldset = el("fieldset", { "data-path": path }, [labelNode, hint]);
      Object.keys(schema.properties).forEach(function (key) {
        var child = buildField(schema.properties[key], path + "/" + key, key, requiredSet.indexOf(key) >= 0);
        children[key] = child;
        fieldset.appendChild(child.node);
      });
      fieldset.appendChild(error);
      return {
        node: fieldset,
        get: function () {
          var out = {}, any = false;
          Object.keys(children).forEach(function (key) {
            var value = children[key].get();
            if (value !== undefined) { out[key] = value; any = true; }
          });
          return any || required ? out : undefined;
        },
        set: function (value) {
          Object.keys(children).forEach(function (key) {
            children[key].set(value && typeof value === "object" ? value[key] : undefined);
          });
        }
      };
    }

    if (kind === "array") {
      var items = [];
      var holder = el("div", { className: "list-items" });
      var wrap = el("div", { className: "field", "data-path": path }, [labelNode, hint, holder]);
      var addItem = function (value) {
        var index = items.length;
        var item = buildField(schema.items, path + "/" + index, label + " #" + (index + 1), true);
        var row = el("div", { className: "list-item" }, [item.node]);
        var entry = { field: item, row: row };
        row.appendChild(el("button", { type: "button", text: "Remove", "aria-label": "Remove " + label + " #" + (index + 1),
          onclick: function () { holder.removeChild(row); items.splice(items.indexOf(entry), 1); syncJson(); } }));
        items.push(entry);
        holder.appendChild(row);
        if (value !== undefined) item.set(value);
      };
      wrap.appendChild(el("button", { type: "button", text: "Add item", "data-add": path, onclick: function () { addItem(); syncJson(); } }));
      wrap.appendChild(error);
      labelNode.removeAttribute("for");
      return {
        node: wrap,
        get: function () {
          if (!items.length) return required ? [] : undefined;
          return items.map(function (e) { var v = e.field.get(); return v === undefined ? null : v; });
        },
        set: function (value) {
          items.splice(0, items.length);
          clear(holder);
          if (Array.isArray(value)) value.forEach(function (v) { addItem(v); });
        }
      };
    }

    var input;
    if (kind === "enum") {
      input = el("select", { id: id, "data-path": path }, [el("option", { value: "", text: required ? "\u2014 choose \u2014" : "(not set)" })]);
      schema.enum.forEach(function (value, i) { input.appendChild(el("option", { value: String(i), text: String(value) })); });
    } else if (kind === "boolean") {
      input = el("input", { id: id, type: "checkbox", "data-path": path });
    } else if (kind === "integer" || kind === "number") {
      input = el("input", { id: id, type: "number", step: kind === "integer" ? "1" : "any", "data-path": path });
    } else if (kind === "string") {
      input = el("input", { id: id, type: "text", "data-path": path });
    } else {
      input = el("textarea", { id: id, rows: "3", className: "code", "data-path": path, placeholder: "JSON value" });
    }
    if (hint) input.setAttribute("aria-describedby", id + "-hint");
    if (required) input.setAttribute("aria-required", "true");
    input.addEventListener("input", syncJson);
    input.addEventListener("change", syncJson);
    var touched = false;
    input.addEventListener("change", function () { touched = true; });
    var field = el("div", { className: "field" }, [labelNode, input, hint, error]);
    var api = {
      node: field,
      get: function () {
        if (kind === "enum") return input.value === "" ? undefined : schema.enum[Number(input.value)];
        if (kind === "boolean") return input.checked || touched || required || "default" in schema ? input.checked : undefined;
        if (input.value === "") return undefined;
        if (kind === "integer" || kind === "number") { var n = Number(input.value); return isNaN(n) ? input.value : n; }
        if (kind === "string") return input.value;
        try { return JSON.parse(input.value); } catch (e) { return input.value; }
      },
      set: function (value) {
        if (value === undefined && "default" in schema) value = schema["default"];  // shown, and sent
        if (kind === "enum") { var i = schema.enum.indexOf(value); input.value = i >= 0 ? String(i) : ""; }
        else if (kind === "boolean") input.checked = value === true;
        else if (value === undefined || value === null) input.value = "";
        else if (kind === "json") input.value = JSON.stringify(value);
        else input.value = String(value);
      }
    };
    return api;
  }

  var form = null;
  function initialArguments(schema) {
    // The peer page pre-fills required keys with their default, else null; the form shows defaults.
    var out = {};
    var props = (schema && schema.properties) || {};
    Object.keys(props).forEach(function (key) {
      if ("default" in props[key]) out[key] = props[key]["default"];
    });
    return out;
  }
  function renderForm(values) {
    var schema = state.detail.inputSchema || {};
    var container = $("td-form");
    clear(container);
    form = buildField(Object.assign({ type: "object", properties: {} }, schema), "", "Arguments", true);
    container.appendChild(form.node);
    if (!Object.keys(schema.properties || {}).length) container.appendChild(el("p", { className: "muted", text: "This tool takes no arguments." }));
    form.set(values);
    syncJson();
  }
  function formValue() {
    // As the peer console does, required keys that have no value yet are sent as null, so the
    // server names them (with the type they need) instead of the call silently lacking them.
    var value = (form && form.get()) || {};
    ((state.detail && state.detail.inputSchema && state.detail.inputSchema.required) || []).forEach(function (key) {
      if (!(key in value)) value[key] = null;
    });
    return value;
  }
  function currentArguments() {
    if (state.mode === "json") {
      var text = $("td-json").value.trim();
      if (!text) return {};
      return JSON.parse(text);  // callers catch the SyntaxError
    }
    return formValue();
  }
  function syncJson() {
    if (state.mode !== "form" || !form) return;
    $("td-json").value = pretty(formValue());
    updateCurl();
  }
  function setMode(mode) {
    if (mode === state.mode) return;
    if (mode === "form") {
      var values;
      try { values = JSON.parse($("td-json").value || "{}"); }
      catch (e) { showRootErrors(["The JSON is not valid: " + e.message]); return; }
      state.mode = "form";
      form.set(values);
    } else {
      $("td-json").value = pretty(formValue());
      state.mode = "json";
    }
    $("td-form").hidden = mode !== "form";
    $("td-json-wrap").hidden = mode !== "json";
    $("td-tab-form").setAttribute("aria-selected", mode === "form" ? "true" : "false");
    $("td-tab-json").setAttribute("aria-selected", mode === "json" ? "true" : "false");
    updateCurl();
  }
  $("td-tab-form").addEventListener("click", function () { setMode("form"); });
  $("td-tab-json").addEventListener("click", function () { setMode("json"); });
  $("td-json").addEventListener("input", updateCurl);

  /* ---------- errors, results ---------- */
  function clearErrors() {
    Array.prototype.forEach.call(document.querySelectorAll(".field-error"), function (node) { node.hidden = true; node.textContent = ""; });
    $("td-root-errors").hidden = true;
    clear($("td-root-errors"));
  }
  function showRootErrors(messages) {
    var box = $("td-root-errors");
    clear(box);
    messages.forEach(function (m) { box.appendChild(el("div", { text: m })); });
    box.hidden = !messages.length;
  }
  function showFieldErrors(errors) {
    clearErrors();
    var root = [];
    errors.forEach(function (err) {
      var target = state.mode === "form" ? document.querySelector('[data-error-for="' + cssEscape(err.path) + '"]') : null;
      if (target && err.path !== "") { target.hidden = false; target.textContent = (target.textContent ? target.textContent + " " : "") + err.message; }
      else root.push((err.path ? err.path + ": " : "") + err.message);
    });
    showRootErrors(root);
  }
  function cssEscape(text) { return window.CSS && CSS.escape ? CSS.escape(text) : text.replace(/["\\]/g, "\\$&"); }
  function status(text, cls) { var node = $("td-status"); node.textContent = text; node.className = cls || ""; }

  // The call's outcome in words: a tool error (isError) is the tool's own answer, not a crash.
  function outcomeOf(r) {
    var data = r.data, result = !!data && typeof data.isError === "boolean";
    if (r.ok && result && !data.isError) return { ok: true, text: "Done (HTTP " + r.status + ")." };
    if (result && data.isError && r.status === 400) return { ok: false, text: "Arguments are not valid (HTTP 400)." };
    if (result && data.isError) return { ok: false, toolError: true, text: "The tool reported an error (HTTP " + r.status + ")." };
    return { ok: false, text: "Failed (HTTP " + r.status + ")." };
  }
  function showResult(r, outcome) {
    var wrap = $("td-result-wrap"), out = $("td-result"), data = r.data, httpStatus = r.status;
    clear(out);
    state.urls.forEach(function (url) { URL.revokeObjectURL(url); });
    state.urls = [];
    wrap.hidden = false;
    $("td-raw-wrap").hidden = !r.raw;
    $("td-raw").textContent = r.raw || "";
    if (outcome.toolError) {
      out.appendChild(el("p", { className: "error", text: "The tool reported an error:" }));
    } else if (httpStatus === 401) {
      out.appendChild(el("p", { className: "error", text: "Unauthorized (401): enter a valid token in the \u201cBearer token\u201d field at the top and try again." }));
      $("td-token").focus();
    } else if (data && data.error && !data.content) {
      out.appendChild(el("p", { className: "error", text: "Error " + httpStatus + ": " + data.error }));
    }
    ((data && Array.isArray(data.content) && data.content) || []).forEach(function (item) {
      out.appendChild(renderBlock(item || {}, !!data.isError));
    });
    var structured = data && data.structuredContent;
    $("td-structured-wrap").hidden = structured === undefined || structured === null;
    $("td-structured").textContent = structured === undefined || structured === null ? "" : pretty(structured);
    if (data && data.errors) showFieldErrors(data.errors);
  }

  /* ---------- the tool's UI (MCP Apps), previewed beside its result: ui-host.js ---------- */
  function callableByUi(name) {
    var tool = state.tools.filter(function (t) { return t.name === name; })[0];
    return !!tool && (!tool.visibility || tool.visibility.indexOf("app") >= 0);
  }
  // The frame cannot send this page's token: the tool's detail, asked for anew, says where to load
  // the UI from (ui.url, with a grant good for a few minutes when not everyone may see the tool).
  function showUi(name, args, r) {
    var wrap = $("td-ui-wrap"), detail = state.detail, notes = $("td-ui-notes");
    var host = window.TooldiscoveryUiHost, shown = ++state.uiShown;
    if (host) host.clear($("td-ui"));
    clear(notes);
    notes.hidden = true;
    wrap.hidden = true;
    if (!(detail && detail.name === name && detail.ui && host && r.data && typeof r.data.isError === "boolean")) return;
    request("GET", toolUrl(name)).then(function (fresh) {
      if (shown !== state.uiShown || state.detail !== detail) return;  // another call or tool since
      var ui = fresh.ok && fresh.data && fresh.data.ui;
      wrap.hidden = false;
      if (!ui || !ui.url) {
        notes.hidden = false;
        notes.appendChild(el("li", { text: "This server cannot let the page frame this tool's UI (it needs a SECRET_KEY to grant it)." }));
        return;
      }
      host.show({
        container: $("td-ui"), url: ui.url, size: ui.preferredSize,
        allow: ui.allow, args: args, result: r.data, canCall: callableByUi,
        tool: { name: detail.name, description: detail.description || "", inputSchema: detail.inputSchema || { type: "object" } },
        callTool: function (tool, toolArgs) { return request("POST", toolUrl(tool, "/call"), toolArgs); },
        note: function (text) { notes.hidden = false; notes.appendChild(el("li", { text: text })); }
      });
    });
  }

  /* ---------- rich results: images, audio, files, links ---------- */
  // Only what a browser shows safely is shown inline: PNG, JPEG, GIF and WebP images (never SVG,
  // which can hold scripts), audio; anything else is a download (a Blob typed as plain bytes, so
  // opening it never renders it in this origin); links only for http(s).
  var INLINE_IMAGE = /^image\/(png|jpeg|gif|webp)$/, BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
  function mimeOf(value) { return String(value || "").split(";")[0].trim().toLowerCase(); }
  function bytesOf(b64) {
    var text = atob(String(b64 || "").replace(/\s+/g, "")), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return bytes;
  }
  function objectUrl(bytes, type) {
    var url = URL.createObjectURL(new Blob([bytes], { type: type }));
    state.urls.push(url);
    return url;
  }
  function fileName(uri, fallback) {
    var last = String(uri || "").replace(/[?#].*$/, "").split("/").pop();
    try { last = decodeURIComponent(last); } catch (e) { /* as it is */ }
    return last || fallback;
  }
  function download(bytes, name, mime) {
    return el("p", { className: "result-file" }, [
      el("a", { href: objectUrl(bytes, "application/octet-stream"), download: name, className: "download", text: "Download " + name }),
      el("span", { className: "muted", text: " (" + (mime || "unknown type") + ", " + bytes.length + " bytes)" })
    ]);
  }
  function renderBlock(item, isError) {
    var type = item.type, mime = mimeOf(item.mimeType);
    try {
      if (type === "text") {
        var text = String(item.text), parsed = null;
        try { parsed = JSON.parse(text); } catch (e) { /* plain text */ }
        return el("pre", { className: "code" + (isError ? " error" : ""), text: parsed !== null && typeof parsed === "object" ? pretty(parsed) : text });
      }
      if (type === "image" && INLINE_IMAGE.test(mime) && BASE64.test(item.data || "")) {
        return el("img", { className: "result-image", alt: "image result (" + mime + ")", src: "data:" + mime + ";base64," + item.data });
      }
      if (type === "audio" && /^audio\//.test(mime)) {
        return el("audio", { controls: true, className: "result-audio", src: objectUrl(bytesOf(item.data), mime) });
      }
      if (type === "image" || type === "audio" || type === "file") {  // SVG and the like: downloads
        var ext = (mime.split("/")[1] || "bin").replace(/\+.*$/, "").replace(/[^a-z0-9]/g, "") || "bin";
        return download(bytesOf(item.data), item.name || type + "." + ext, mime);
      }
      if (type === "resource" && item.resource && typeof item.resource === "object") {
        var res = item.resource, bytes = typeof res.blob === "string" ? bytesOf(res.blob) : new TextEncoder().encode(String(res.text || ""));
        return download(bytes, fileName(res.uri, "resource"), mimeOf(res.mimeType));
      }
      if (type === "resource_link") {
        var uri = String(item.uri || ""), label = String(item.name || uri);
        var node = /^https?:\/\//i.test(uri)
          ? el("a", { href: uri, target: "_blank", rel: "noopener noreferrer", text: label })
          : el("span", { text: label + " (" + uri + ")" });
        return el("p", { className: "result-link" }, [node, item.description ? el("span", { className: "muted", text: " \u2014 " + item.description }) : null]);
      }
    } catch (e) { /* bad base64: shown as JSON below */ }
    return el("pre", { className: "code", text: pretty(item) });
  }

  /* ---------- validate / execute ---------- */
  function argsOrReport() {
    try { return currentArguments(); }
    catch (e) { showRootErrors(["The JSON is not valid: " + e.message]); return undefined; }
  }
  function validate(argsOverride) {
    clearErrors();
    var args = argsOverride !== undefined ? argsOverride : argsOrReport();
    if (args === undefined) return Promise.resolve(false);
    return request("POST", toolUrl(state.current, "/validate"), args).then(function (r) {
      if (r.data && r.data.valid) { status("Arguments are valid.", "ok"); return true; }
      status("Arguments are not valid.", "error");
      showFieldErrors((r.data && r.data.errors) || [{ path: "", message: "Validation failed (" + r.status + ")" }]);
      return false;
    });
  }
  // A destructive tool is confirmed only once its arguments pass validation: "run", "cancel" or "invalid".
  function confirmDestructive(args) {
    var annotations = (state.detail && state.detail.annotations) || {};
    if (!annotations.destructiveHint) return Promise.resolve("run");
    return validate(args).then(function (valid) { return valid ? ask() : "invalid"; });
  }
  function ask() {
    return askIn("td-confirm", "\u201c" + state.current + "\u201d is marked destructive: it may delete or change data. Run it?");
  }
  // Shows the dialog with ``text`` (as text, never HTML); resolves to "run" or "cancel".
  function askIn(id, text) {
    var dialog = $(id);
    $(id + "-text").textContent = text;
    return new Promise(function (resolve) {
      var done = function () { dialog.removeEventListener("close", done); resolve(dialog.returnValue === "run" ? "run" : "cancel"); };
      dialog.addEventListener("close", done);
      dialog.returnValue = "";
      dialog.showModal();
      $(id + "-cancel").focus();
    });
  }
  function execute(argsOverride) {
    if (!config.allow_execute || state.running) return;
    clearErrors();
    var args = argsOverride !== undefined ? argsOverride : argsOrReport();
    if (args === undefined) return;
    var name = state.current;
    // A tool the server asks approval for is confirmed in the server's words, not twice.
    (state.serverApproval[name] ? Promise.resolve("run") : confirmDestructive(args)).then(function (go) {
      if (go === "invalid") return;  // validate() showed the errors
      if (go !== "run") { status("Cancelled.", ""); return; }
      return run(name, args, null);
    }).then(null, function (err) {
      status("Request failed: " + err.message, "error");
    });
  }
  function run(name, args, approvalState) {
    status("Running\u2026", "");
    $("td-result-wrap").hidden = true;
    var controller = new AbortController();
    startLive(controller);
    var started = performance.now();
    return callLive(toolUrl(name, "/call"), args, approvalState, controller.signal, showLive).then(function (r) {
      finishLive();
      var ms = Math.round(performance.now() - started);
      $("td-elapsed").textContent = ms + " ms";
      if (r.status === 403 && r.data && /execution is disabled/i.test(r.data.error || "")) {
        // Turned off on the server since this page was rendered: as the peer page does, no Execute.
        $("td-result-wrap").hidden = true;
        setExecute(false);
        status("Execution is disabled on this server.", "error");
        return;
      }
      if (r.status === 428 && r.data && r.data.code === "approval_required" && !approvalState) {
        state.serverApproval[name] = true;
        status("Waiting for your approval\u2026", "");
        return askIn("td-approve", String(r.data.prompt || "Allow this call?")).then(function (go) {
          if (go === "run") return run(name, args, String(r.data.approval_state || ""));
          status("Not run: the call was not approved.", "");
        });
      }
      var outcome = outcomeOf(r);
      if (state.stopped && !outcome.ok) { status("Stopped: the call was cancelled.", "error"); return; }
      status(outcome.text, outcome.ok ? "ok" : "error");
      showResult(r, outcome);
      showUi(name, args, r);
      addHistory(name, { at: new Date().toISOString(), args: args, ok: outcome.ok, ms: ms, status: r.status });
    }, function (err) {
      finishLive();
      if (err && err.name === "AbortError") { status("Stopped: the call was cancelled.", "error"); return; }
      throw err;
    });
  }
  function setExecute(allowed) {
    config.allow_execute = allowed;
    if (!allowed && document.activeElement === $("td-execute")) $("td-validate").focus();
    $("td-execute").hidden = !allowed;
    $("td-disabled").hidden = allowed;
    $("td-curl-wrap").hidden = !allowed;
    if (state.current) renderHistory();
  }
  $("td-validate").addEventListener("click", function () { validate(); });
  $("td-execute").addEventListener("click", function () { execute(); });
  document.addEventListener("keydown", function (event) {
    if ((event.ctrlKey || event.metaKey) && event.key === "Enter" && state.current) { event.preventDefault(); execute(); }
  });

  /* ---------- curl ---------- */
  function shellQuote(text) { return "'" + String(text).replace(/'/g, "'\\''") + "'"; }
  function updateCurl() {
    if (!state.current) return;
    var body;
    try { body = JSON.stringify(currentArguments()); } catch (e) { body = $("td-json").value; }
    var parts = ["curl -X POST " + shellQuote(location.origin + toolUrl(state.current, "/call")),
      "  -H 'Content-Type: application/json'"];
    var auth = authorization();
    if (auth) parts.push("  -H " + shellQuote("Authorization: " + auth));
    parts.push("  -d " + shellQuote(body));
    $("td-curl").textContent = parts.join(" \\\n");
  }
  $("td-token").addEventListener("input", function () { showTokenStatus(); updateCurl(); });
  showTokenStatus();
  $("td-copy-curl").addEventListener("click", function () {
    var text = $("td-curl").textContent;
    var done = function () { $("td-copy-curl").textContent = "Copied"; setTimeout(function () { $("td-copy-curl").textContent = "Copy"; }, 1500); };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, function () {});
    else { var range = document.createRange(); range.selectNodeContents($("td-curl")); var sel = getSelection(); sel.removeAllRanges(); sel.addRange(range); try { document.execCommand("copy"); done(); } catch (e) { /* selected for manual copy */ } }
  });

  /* ---------- history ---------- */
  function historyKey(name) { return "tooldiscovery:history:" + base + name; }
  function loadHistory(name) {
    try { return JSON.parse(localStorage.getItem(historyKey(name)) || "[]"); } catch (e) { return []; }
  }
  function addHistory(name, entry) {
    var items = loadHistory(name);
    items.unshift(entry);
    try { localStorage.setItem(historyKey(name), JSON.stringify(items.slice(0, HISTORY_LIMIT))); } catch (e) { /* full */ }
    if (name === state.current) renderHistory();
  }
  function renderHistory() {
    var list = $("td-history");
    clear(list);
    var items = loadHistory(state.current);
    items.forEach(function (entry) {
      list.appendChild(el("li", {}, [
        el("span", { className: entry.ok ? "ok" : "error", text: (entry.ok ? "\u2713 " : "\u2717 ") }),
        el("code", { text: JSON.stringify(entry.args) }),
        el("span", { className: "muted", text: " " + new Date(entry.at).toLocaleTimeString() + ", " + entry.ms + " ms" }),
        el("button", { type: "button", text: "Load", onclick: function () { loadArgs(entry.args); } }),
        config.allow_execute ? el("button", { type: "button", text: "Replay", onclick: function () { loadArgs(entry.args); execute(entry.args); } }) : null
      ]));
    });
    if (!items.length) list.appendChild(el("li", { className: "muted", text: "No calls yet." }));
  }
  function loadArgs(args) {
    if (state.mode === "form") form.set(args); else $("td-json").value = pretty(args);
    syncJson();
    updateCurl();
  }
  $("td-clear-history").addEventListener("click", function () {
    try { localStorage.removeItem(historyKey(state.current)); } catch (e) { /* ignore */ }
    renderHistory();
  });

  /* ---------- selecting a tool ---------- */
  function selectTool(name, focus) {
    if (state.running) state.running.abort();  // another tool: the call running here is cancelled
    state.current = name;
    if (location.hash !== "#tool=" + encodeURIComponent(name)) history.replaceState(null, "", "#tool=" + encodeURIComponent(name));
    renderList();
    return request("GET", toolUrl(name)).then(function (r) {
      if (!r.ok) { $("td-empty").hidden = false; $("td-empty").textContent = (r.data && r.data.error) || "Tool not found."; $("td-detail").hidden = true; return; }
      state.detail = r.data;
      $("td-empty").hidden = true;
      $("td-detail").hidden = false;
      $("td-name").textContent = r.data.name;
      var badges = $("td-badges"); clear(badges); badgesFor(r.data.annotations, r.data).forEach(function (b) { badges.appendChild(b); });
      $("td-description").textContent = r.data.description || "";
      var annotations = r.data.annotations;
      $("td-annotations-wrap").hidden = !annotations || !Object.keys(annotations).length;
      $("td-annotations").textContent = annotations ? pretty(annotations) : "";
      $("td-input-schema").textContent = pretty(r.data.inputSchema || {});
      $("td-output-wrap").hidden = !r.data.outputSchema;
      $("td-output-schema").textContent = r.data.outputSchema ? pretty(r.data.outputSchema) : "";
      $("td-result-wrap").hidden = true;
      if (window.TooldiscoveryUiHost) window.TooldiscoveryUiHost.clear($("td-ui"));
      $("td-live").hidden = true;
      $("td-elapsed").textContent = "";
      status("", "");
      clearErrors();
      state.mode = "form";
      $("td-form").hidden = false; $("td-json-wrap").hidden = true;
      $("td-tab-form").setAttribute("aria-selected", "true"); $("td-tab-json").setAttribute("aria-selected", "false");
      renderForm(initialArguments(r.data.inputSchema));
      renderHistory();
      updateCurl();
      if (focus) $("td-main").focus();
    });
  }

  $("td-filter").addEventListener("input", searchTools);
  setExecute(!!config.allow_execute);

  function fromHash() {
    var match = /^#tool=(.+)$/.exec(location.hash);
    return match ? decodeURIComponent(match[1]) : null;
  }
  window.addEventListener("hashchange", function () { var name = fromHash(); if (name && name !== state.current) selectTool(name); });

  /* ---------- tasks: calls that outlive the page ---------- */
  // Each live call is a task on the server (its stream's first event names it). The page keeps the
  // ids of its tasks in localStorage (callers without a subject cannot be listed by the server) and
  // reads GET tasks (the caller's, when it has a subject); after a reload both are shown, running
  // ones polled until they end, each result shown on demand.
  var tasks = (function () {
    var KEY = "tooldiscovery:tasks:" + base, LIMIT = 20, polling = null;
    function saved() {
      try { var list = JSON.parse(localStorage.getItem(KEY) || "[]"); return Array.isArray(list) ? list : []; }
      catch (e) { return []; }
    }
    function save(list) { try { localStorage.setItem(KEY, JSON.stringify(list.slice(0, LIMIT))); } catch (e) { /* full */ } }
    function taskUrl(id, suffix) { return base + "tasks/" + encodeURIComponent(id) + (suffix || ""); }
    function running(task) { return task.state === "working" || task.state === "input_required"; }
    function render() {
      var list = $("td-tasks"), all = Object.keys(state.tasks).map(function (id) { return state.tasks[id]; });
      all.sort(function (a, b) { return String(b.created || "").localeCompare(String(a.created || "")); });
      clear(list);
      $("td-tasks-wrap").hidden = !all.length;
      all.forEach(function (task) {
        var item = el("li", { className: "task", "data-task": task.id, "data-state": task.state }, [
          el("span", { className: "task-tool", text: task.tool || "?" }),
          el("span", { className: "badge task-state", text: task.state })]);
        if (task.result) item.appendChild(el("button", { type: "button", text: "Show result", onclick: function () { show(task); } }));
        if (running(task)) item.appendChild(el("button", { type: "button", text: "Stop", onclick: function () { cancel(task.id); } }));
        list.appendChild(item);
      });
    }
    function show(task) {
      var r = { status: task.result.status, ok: task.result.status >= 200 && task.result.status < 300,
                data: task.result.body, raw: pretty(task.result.body) };
      var outcome = outcomeOf(r);
      status(task.tool + ": " + outcome.text, outcome.ok ? "ok" : "error");
      showResult(r, outcome);
    }
    function put(task) {
      state.tasks[task.id] = task;
      render();
      if (running(task) && !polling) polling = setTimeout(poll, 1000);
    }
    function read(id) {
      return request("GET", taskUrl(id)).then(function (r) {
        if (r.status === 404) { delete state.tasks[id]; save(saved().filter(function (t) { return t.id !== id; })); render(); return; }
        if (r.ok && r.data && r.data.id) put(r.data);
      });
    }
    function poll() {
      polling = null;
      var open = Object.keys(state.tasks).filter(function (id) { return running(state.tasks[id]); });
      Promise.all(open.map(read)).then(null, function () { /* try again next time */ }).then(function () {
        if (!polling && Object.keys(state.tasks).some(function (id) { return running(state.tasks[id]); })) polling = setTimeout(poll, 1000);
      });
    }
    function remember(tool, data) {
      save([{ id: String(data.id), tool: tool }].concat(saved().filter(function (t) { return t.id !== String(data.id); })));
      put({ id: String(data.id), tool: tool, state: String(data.state || "working"), created: new Date().toISOString() });
    }
    function cancel(id) {
      return request("POST", taskUrl(id, "/cancel")).then(function (r) { if (r.ok && r.data && r.data.id) put(r.data); });
    }
    function load() {
      if (!config.allow_execute) return;
      request("GET", base + "tasks").then(function (r) {
        ((r.ok && r.data && r.data.tasks) || []).forEach(put);
      }).then(null, function () { /* none listed */ }).then(function () {
        saved().forEach(function (t) { if (!state.tasks[t.id]) read(t.id); });
      });
    }
    return { remember: remember, cancel: cancel, load: load };
  })();
  tasks.load();

  // The list is the caller's: loaded at start, and again once a token is entered or changed (a
  // tool only a token's holder sees appears then; one it no longer sees goes).
  var listed = 0;
  function loadTools(first) {
    var mine = ++listed;
    return request("GET", base + "tools").then(function (r) {
      if (mine !== listed) return;  // a later load (the token changed again) answers instead
      if (!r.ok) {
        state.tools = [];
        renderList();
        $("td-count").textContent = "Could not load tools (" + r.status + ")" +
          (r.status === 401 ? ": enter a valid token in the \u201cBearer token\u201d field." : ".");
      } else {
        state.tools = r.data || [];
        renderList();
        var wanted = first ? fromHash() : null;
        if (wanted) selectTool(wanted);
      }
      document.body.setAttribute("data-ready", "true");
      document.body.setAttribute("data-tools-loaded", String(mine));
    });
  }
  var tokenListed = authorization();
  $("td-token").addEventListener("change", function () {
    if (authorization() === tokenListed) return;
    tokenListed = authorization();
    loadTools(false);
  });
  loadTools(true);
})();
