"""Agent tasks: one task, its agent and its tools in one disposable sandbox (docs/agent-tasks.md)."""
