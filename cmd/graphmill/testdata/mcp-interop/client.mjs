// Interop client for Graphmill's built-in MCP server, run by
// TestMCPServerInteropTypeScript with the official TypeScript SDK.
//
// usage: node client.mjs <baseUrl> <token> <projectId> <query> <agentId> <question>
//
// Over the streamable HTTP transport (and then the SSE transport) it
// initializes, lists the tools, calls search with the query, calls
// graph_get_object with an unknown id, runs the agent with the query
// as its input (agents_run) and asks chat_send the question (in a new
// session), then prints one JSON document.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";

const [base, token, project, query, agentId, question] = process.argv.slice(2);
const requestInit = { headers: { Authorization: `Bearer ${token}` } };

async function run(transport) {
  const client = new Client({ name: "graphmill-interop", version: "1.0.0" });
  await client.connect(transport);
  const tools = await client.listTools();
  const search = await client.callTool({ name: "search", arguments: { query, mode: "keyword" } });
  const missing = await client.callTool({
    name: "graph_get_object",
    arguments: { id: "00000000-0000-0000-0000-000000000000" },
  });
  const agentRun = await client.callTool({ name: "agents_run", arguments: { agentId, input: query, waitSeconds: 30 } });
  const chat = await client.callTool({ name: "chat_send", arguments: { content: question } });
  const out = {
    server: client.getServerVersion(),
    sessionId: transport.sessionId ?? null,
    tools: tools.tools.map((t) => t.name).sort(),
    search,
    missing,
    agentRun,
    chat,
  };
  if (transport.terminateSession) {
    await transport.terminateSession();
  }
  await client.close();
  return out;
}

const streamable = await run(new StreamableHTTPClientTransport(new URL(`${base}/api/mcp`), { requestInit }));
const sse = await run(new SSEClientTransport(new URL(`${base}/api/mcp/sse/${project}`), { requestInit }));
process.stdout.write(JSON.stringify({ streamable, sse }) + "\n");
