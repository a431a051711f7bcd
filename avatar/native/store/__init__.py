"""The native session store (DESIGN §6): the session files, their writer, index and versions."""
