"""A small library service with an OpenAPI document, for the tests of action requests on the
embedded model: GET /books (by author), POST /loans (lends a book). Every request is appended to
the log file named by the second argument, so a test can tell whether a loan was really made.

    python tests/tools/library_server.py PORT LOG
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

BOOKS = [
    {"id": 5, "title": "Kindred", "author": "Octavia Butler"},
    {"id": 6, "title": "Parable of the Sower", "author": "Octavia Butler"},
    {"id": 7, "title": "The Left Hand of Darkness", "author": "Ursula K. Le Guin"},
]

OPENAPI = {
    "openapi": "3.0.3",
    "info": {"title": "library", "version": "1"},
    "servers": [{"url": "/"}],
    "paths": {
        "/books": {
            "get": {
                "operationId": "list_books",
                "summary": "List the library's books, by author if given.",
                "parameters": [
                    {
                        "name": "author",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string"},
                        "description": "the author's name",
                    }
                ],
                "responses": {"200": {"description": "the books"}},
            }
        },
        "/loans": {
            "post": {
                "operationId": "create_loan",
                "summary": "Lend a book to a library member.",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["book_id", "member"],
                                "properties": {
                                    "book_id": {"type": "integer", "description": "the book's id"},
                                    "member": {"type": "string", "description": "the member's name"},
                                },
                            }
                        }
                    },
                },
                "responses": {"200": {"description": "the loan"}},
            }
        },
    },
}


def handler(log_path: str) -> type[BaseHTTPRequestHandler]:
    class Library(BaseHTTPRequestHandler):
        def _send(self, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _log(self, body: str = "") -> None:
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(f"{self.command} {self.path} {body}\n")

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlparse(self.path)
            self._log()
            if url.path == "/openapi.json":
                return self._send(OPENAPI)
            author = (parse_qs(url.query).get("author") or [""])[0].lower()
            self._send([b for b in BOOKS if author in b["author"].lower()])

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            self._log(body)
            loan = json.loads(body or "{}")
            self._send(
                {"loan_id": 1, "book_id": loan.get("book_id"), "member": loan.get("member"), "status": "lent"}
            )

        def log_message(self, *args: object) -> None:  # quiet: the log file is the record
            pass

    return Library


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), handler(sys.argv[2])).serve_forever()
