"""Plain output: the chat stream, tables, trees."""
