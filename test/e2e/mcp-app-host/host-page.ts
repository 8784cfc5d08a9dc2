// A host of MCP Apps for the end-to-end test, built on the SDK's own host side (AppBridge): it
// frames a view as chat hosts do (a sandboxed frame with only scripts allowed), hands it a tool
// call's input and result, and passes what the view asks for to the test, whose real MCP client
// takes it to a real Perennial server.
import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';
import type { McpUiHostContext } from '@modelcontextprotocol/ext-apps';
import type { CallToolResult } from '@modelcontextprotocol/client';

interface HostWindow {
  /** The test's MCP client: `tools/call` and `resources/read`. */
  mcp(method: string, params: unknown): Promise<never>;
  /** What the view asked the host to tell the model. */
  modelContext: unknown[];
  startView(options: { html: string; context: McpUiHostContext; input: Record<string, unknown> }): Promise<void>;
  sendResult(result: CallToolResult): Promise<void>;
}
const host = window as unknown as Window & HostWindow;

host.modelContext = [];
host.startView = async ({ html, context, input }) => {
  document.body.style.background = context.theme === 'dark' ? '#111' : '#eee';
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.style.cssText = 'width: 720px; height: 400px; border: 0; display: block';
  frame.srcdoc = html;
  document.body.append(frame);
  const bridge = new AppBridge(
    null,
    { name: 'perennial-test-host', version: '1.0.0' },
    { serverTools: {}, serverResources: {}, updateModelContext: { text: {} } },
    { hostContext: context },
  );
  bridge.oncalltool = (params) => host.mcp('tools/call', params);
  bridge.onreadresource = (params) => host.mcp('resources/read', params);
  bridge.onupdatemodelcontext = async (params) => {
    host.modelContext.push(params);
    return {};
  };
  bridge.onsizechange = ({ height }) => {
    if (height) frame.style.height = `${height}px`;
  };
  const initialized = new Promise<void>((resolve) => (bridge.oninitialized = () => resolve()));
  await bridge.connect(new PostMessageTransport(frame.contentWindow!, frame.contentWindow!));
  await initialized;
  await bridge.sendToolInput({ arguments: input });
  host.sendResult = (result) => bridge.sendToolResult(result);
};
