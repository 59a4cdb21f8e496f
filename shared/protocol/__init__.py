"""MCP over HTTP: transport rules, JSON-RPC, versions, tool listing and result shaping."""
