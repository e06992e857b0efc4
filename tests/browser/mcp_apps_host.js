// A minimal MCP Apps host for the browser tests, built from the ext-apps package's own host side
// (AppBridge, PostMessageTransport) and the official TypeScript MCP client; bundled by esbuild.
// window.showTool(mcpUrl, name, args) connects to the server, reads the tool's ui:// resource,
// renders it in a sandboxed iframe, hands it the tool input and the call's result, and forwards
// the view's tool calls to the server, refusing those whose visibility leaves out "app".
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const UI_EXTENSION = "io.modelcontextprotocol/ui";
const MIME_TYPE = "text/html;profile=mcp-app";

window.hostLog = [];

window.showTool = async (mcpUrl, name, args) => {
  const info = { name: "test-host", version: "1.0.0" };
  const client = new Client(info, { capabilities: { extensions: { [UI_EXTENSION]: { mimeTypes: [MIME_TYPE] } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl, location.href)));
  const { tools } = await client.listTools();
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  const tool = byName[name];
  const read = await client.readResource({ uri: tool._meta.ui.resourceUri });
  const content = read.contents[0];
  window.hostLog.push({ read: { uri: content.uri, mimeType: content.mimeType, meta: content._meta } });

  const iframe = document.createElement("iframe");
  iframe.id = "view";
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.style.width = "480px";
  iframe.style.height = "320px";
  document.body.appendChild(iframe);

  const bridge = new AppBridge(client, info, { serverTools: {}, logging: {} }, {
    hostContext: { theme: "light", displayMode: "inline", toolInfo: { tool } },
  });
  bridge.oninitialized = async () => {
    window.hostLog.push({ initialized: bridge.getAppVersion() });
    await bridge.sendToolInput({ arguments: args });
    const result = await client.callTool({ name, arguments: args });
    window.hostLog.push({ result: result.structuredContent });
    await bridge.sendToolResult(result);
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  // connect() forwards the view's tools/call to the client; this host checks visibility first.
  bridge.oncalltool = async (params) => {
    const visibility = byName[params.name]?._meta?.ui?.visibility ?? ["model", "app"];
    window.hostLog.push({ viewCalled: params.name });
    if (!visibility.includes("app")) throw new Error(`${params.name} is not callable by apps`);
    return client.callTool(params);
  };
  iframe.srcdoc = content.text;
};
