"""The MCP server (``codebox mcp``): Codebox's operations as MCP tools over stdio (docs/mcp.md)."""

from codebox_tui.mcp_server.server import TOOLS, build_server, serve_stdio

__all__ = ["TOOLS", "build_server", "serve_stdio"]
