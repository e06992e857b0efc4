/* flask-tooldiscovery explorer: the host side of MCP Apps (io.modelcontextprotocol/ui) for the
   preview of a tool's UI. The UI runs in an iframe sandboxed to scripts only (an opaque origin: it
   reaches nothing of this page but postMessage) and talks JSON-RPC 2.0 to this host as the spec
   defines: ui/initialize, then ui/notifications/initialized, after which the host sends the tool
   input and the tool result; tools/call from the UI runs through the explorer's own call route
   (the page's token and cookies), for tools whose visibility includes "app". */
(function () {
  "use strict";

  var PROTOCOL_VERSION = "2026-01-26";
  var HOST_INFO = { name: "flask-tooldiscovery explorer", version: "1.0.0" };
  var MAX_HEIGHT = 2000;
  var current = null;  // {frame, listener}

  function clear(container) {
    if (current) { window.removeEventListener("message", current.listener); current = null; }
    while (container.firstChild) container.removeChild(container.firstChild);
  }

  // options: {container, url, tool: {name, description, inputSchema}, args, result, size, allow,
  //           canCall(name) -> bool, callTool(name, args) -> Promise<{status, data}>, note(text)}
  function show(options) {
    clear(options.container);
    var frame = document.createElement("iframe");
    frame.setAttribute("sandbox", "allow-scripts");
    frame.setAttribute("title", "Preview of the UI of " + options.tool.name);
    frame.className = "ui-frame";
    if (options.allow) frame.setAttribute("allow", options.allow);
    var size = options.size || {};
    frame.style.width = size.width ? size.width + "px" : "100%";
    frame.style.height = (size.height || 240) + "px";
    var initialized = false;

    function post(message) { if (frame.contentWindow) frame.contentWindow.postMessage(message, "*"); }
    function reply(id, result) { post({ jsonrpc: "2.0", id: id, result: result }); }
    function fail(id, code, message) { post({ jsonrpc: "2.0", id: id, error: { code: code, message: message } }); }
    function asResult(data) {
      var result = { content: Array.isArray(data.content) ? data.content : [], isError: !!data.isError };
      if (data.structuredContent !== undefined) result.structuredContent = data.structuredContent;
      if (data._meta) result._meta = data._meta;
      return result;
    }

    function request(id, method, params) {
      if (method === "ui/initialize") {
        var theme = document.documentElement.getAttribute("data-theme") === "dark" ? "dark" : "light";
        reply(id, {
          protocolVersion: typeof params.protocolVersion === "string" ? params.protocolVersion : PROTOCOL_VERSION,
          hostInfo: HOST_INFO,
          hostCapabilities: { serverTools: {}, logging: {}, openLinks: {} },
          hostContext: {
            theme: theme, displayMode: "inline", availableDisplayModes: ["inline"], platform: "web",
            locale: navigator.language, toolInfo: { tool: options.tool }
          }
        });
      } else if (method === "ping") {
        reply(id, {});
      } else if (method === "tools/call") {
        var name = params && params.name;
        if (typeof name !== "string" || !options.canCall(name)) {
          fail(id, -32602, "The UI may not call " + JSON.stringify(name) + " (its visibility leaves out \"app\", or it is unknown).");
          return;
        }
        options.note("The UI called " + name + ".");
        options.callTool(name, params.arguments || {}).then(function (r) {
          if (r.data && typeof r.data.isError === "boolean") reply(id, asResult(r.data));
          else fail(id, -32603, (r.data && r.data.error) || "HTTP " + r.status);
        }, function (err) { fail(id, -32603, String(err && err.message || err)); });
      } else if (method === "ui/request-display-mode") {
        reply(id, { mode: "inline" });
      } else if (method === "ui/open-link") {
        var url = String((params && params.url) || "");
        if (!/^https?:\/\//i.test(url)) { fail(id, -32602, "Only http(s) links open."); return; }
        window.open(url, "_blank", "noopener,noreferrer");
        reply(id, {});
      } else if (method === "ui/message" || method === "ui/update-model-context") {
        options.note("The UI sent " + method + " (an agent would read it): " + JSON.stringify(params));
        reply(id, {});
      } else {
        fail(id, -32601, "Method not found: " + method);
      }
    }

    function notification(method, params) {
      if (method === "ui/notifications/initialized" && !initialized) {
        initialized = true;
        post({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: options.args || {} } });
        post({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: asResult(options.result || {}) });
      } else if (method === "ui/notifications/size-changed" && params && typeof params.height === "number") {
        frame.style.height = Math.max(40, Math.min(MAX_HEIGHT, Math.ceil(params.height))) + "px";
      }
    }

    function listener(event) {
      if (event.source !== frame.contentWindow) return;  // only the frame this host made
      var message = event.data;
      if (!message || typeof message !== "object" || message.jsonrpc !== "2.0" || typeof message.method !== "string") return;
      var params = message.params && typeof message.params === "object" ? message.params : {};
      if (message.id !== undefined && message.id !== null) request(message.id, message.method, params);
      else notification(message.method, params);
    }

    window.addEventListener("message", listener);
    current = { frame: frame, listener: listener };
    frame.src = options.url;
    options.container.appendChild(frame);
    return frame;
  }

  window.TooldiscoveryUiHost = { show: show, clear: clear };
})();
