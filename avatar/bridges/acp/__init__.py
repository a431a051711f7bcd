"""The ACP bridge (DESIGN §2): any Agent Client Protocol agent behind avatar's session API."""
