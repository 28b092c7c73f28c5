"""The gateway's HTTP floor: all that knows HTTP, and nothing below it does.

`connections` (the connection layer: uvicorn's protocol, answering cheap requests where they
are parsed), `routing` (the router over the one endpoint table, bodies and queries read and
validated), `responses` and `bodies`, `request_log`, `openapi` (the document made from the
table), `answer_page` (the page behind an answer link) and `remote_mcp` (`/mcp` handed to the
MCP SDK). Arrows go down only: http → core → store (never up; app/http_deadlines.py beside).
"""
