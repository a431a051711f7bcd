"""The ACP bridge (docs/design.md §2): any Agent Client Protocol agent behind avatar's session
API."""
