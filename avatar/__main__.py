"""`python -m avatar` runs the CLI."""

from avatar.cli import main

main()
