"""`avatar mcp`: avatar's session library as MCP tools on stdio, for any agent that takes MCP
servers (docs/design.md §12). `protocol` speaks MCP (stdlib only), `library_tools` and
`asking` are the tools, `install` writes an agent's config entry, `command` is the command."""
