"""The kernel's own mechanisms the sandbox is built on: Landlock, the exec stub that enters the
namespaces and filters, the guard that ends processes with avatar."""
