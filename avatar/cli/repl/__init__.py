"""The REPL: input, completion, the picker, the screen, slash commands."""
