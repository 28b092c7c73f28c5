// An MCP client on the official TypeScript SDK (the one behind Claude Desktop, Cursor and most
// agents): calls ask_user once with a per-request timeout that progress resets, and prints one
// JSON line per event: {"progress": {...}, "t": s} and finally {"result": ...} or {"error": ...}.
//
// node mcp_ts_client.cjs SDK_DIR TIMEOUT_MS stdio COMMAND ARGS_JSON ENV_JSON
// node mcp_ts_client.cjs SDK_DIR TIMEOUT_MS http URL HEADERS_JSON
"use strict";
const path = require("node:path");

const [sdkDir, timeoutMs, mode, ...rest] = process.argv.slice(2);
const sdk = (sub) => require(path.join(sdkDir, "dist", "cjs", sub));
const { Client } = sdk("client/index.js");

function transport() {
  if (mode === "stdio") {
    const { StdioClientTransport } = sdk("client/stdio.js");
    const [command, args, env] = rest;
    return new StdioClientTransport({ command, args: JSON.parse(args), env: JSON.parse(env) });
  }
  const { StreamableHTTPClientTransport } = sdk("client/streamableHttp.js");
  const [url, headers] = rest;
  return new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: JSON.parse(headers) },
  });
}

const say = (line) => process.stdout.write(JSON.stringify(line) + "\n");

async function main() {
  const client = new Client({ name: "ts-test-client", version: "1.0.0" });
  await client.connect(transport());
  const started = Date.now();
  say({ connected: true });
  try {
    const result = await client.callTool(
      {
        name: "ask_user",
        arguments: {
          questions: [
            {
              id: "color",
              header: "Color",
              question: "Which theme?",
              options: [{ label: "Dark (Recommended)" }, { label: "Light" }],
            },
          ],
        },
      },
      undefined,
      {
        timeout: Number(timeoutMs),
        resetTimeoutOnProgress: true,
        onprogress: (progress) => say({ progress, t: (Date.now() - started) / 1000 }),
      },
    );
    say({ result, t: (Date.now() - started) / 1000 });
  } catch (error) {
    say({ error: String(error), t: (Date.now() - started) / 1000 });
  }
  await client.close();
}

main().catch((error) => {
  say({ error: String(error) });
  process.exit(1);
});
