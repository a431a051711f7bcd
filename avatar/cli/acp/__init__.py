"""`avatar acp`: avatar itself as an ACP agent on stdio, for editors and other ACP clients
(docs/design.md §12), on the same engine as the REPL. `stdio` reads the client's lines from the
start and answers `initialize` before anything heavy loads; `agent` answers the protocol;
`face` is one ACP session (an engine of its own); `updates` turns avatar's events into
`session/update`s; `options` are the menus (provider, model) and modes; `slash` the commands
offered; `command` is the command."""
