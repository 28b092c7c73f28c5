"""Asking and waiting, on a floor of its own that both sides stand on: the agent side asks the
gateway over HTTP (`app.agent.client.HttpAsker`), the gateway's `/mcp` asks its own prompts in
process (`app.gateway.http.remote_mcp.GatewayAsker`); the flow (`flow`), the request and its
error (`request`), the tool's definition (`tool`) and the transport-free MCP tool (`mcp_tool`)
are written once, here.

Imports only app.protocol from the project (and anyio, the `mcp` package for `mcp_tool`).
"""
