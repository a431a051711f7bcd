"""The kernel's own mechanisms the sandbox is built on: Landlock, namespaces, the guard that ends
processes with avatar."""
