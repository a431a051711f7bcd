"""`avatar serve --web` (docs/design.md §11): the server's engine as a web page on 127.0.0.1, behind
a random token. Server-side rendered pages (`layout`, `library_pages`, `live_pages`), a JSON
and server-sent-events API for the live chat (`live_api`, `stream`), and a little plain
JavaScript from `static/`; no build step, nothing fetched from elsewhere. Starlette and
uvicorn load only here, so only `serve --web` pays for them."""
