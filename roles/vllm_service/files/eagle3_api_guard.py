"""ASGI middleware for the serving unit (vllm serve --middleware eagle3_api_guard.RequireApiKey).

vLLM's own API key check (VLLM_API_KEY / --api-key; vllm/entrypoints/serve/middleware/authenticate.py in
0.29.0) guards only paths under /v1, /v2, /inference and /cohere: /invocations (SageMaker's route, which
runs completions and chat completions), /tokenize, /detokenize, /pooling, /score and the rest answer without
the key. This guard asks for the same key on every path except the liveness and metrics endpoints a load
balancer and Prometheus use. The key comes from the environment (VLLM_API_KEY, set by systemd from a
root-only file); without one the middleware raises when it is built (at the first request), so the server
answers 500 on every path rather than serve openly.

Installed root-owned, read-only to the service (the role's serve entry point); plain ASGI, no imports beyond
the standard library, so it loads into any vLLM's API server (vLLM adds a class given to --middleware with
app.add_middleware(cls)).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os

OPEN_PATHS = frozenset({"/health", "/ping", "/metrics"})


class RequireApiKey:
    """401 for every HTTP or WebSocket request without `Authorization: Bearer <VLLM_API_KEY>`."""

    def __init__(self, app):
        key = os.environ.get("VLLM_API_KEY", "")
        if not key:
            raise RuntimeError("eagle3_api_guard: VLLM_API_KEY is empty; the serving unit refuses to start without a key")
        self.app = app
        self._digest = hashlib.sha256(key.encode()).digest()

    def _authorized(self, scope) -> bool:
        for name, value in scope.get("headers") or []:
            if name.lower() == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                return scheme.lower() == "bearer" and hmac.compare_digest(
                    hashlib.sha256(token.strip().encode()).digest(), self._digest)
        return False

    async def __call__(self, scope, receive, send):
        if scope["type"] not in ("http", "websocket") or scope.get("method") == "OPTIONS":
            return await self.app(scope, receive, send)
        path = scope["path"].removeprefix(scope.get("root_path", "")) or "/"
        if path.rstrip("/") in OPEN_PATHS or self._authorized(scope):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        body = json.dumps({"error": "Unauthorized"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b"Bearer")]})
        await send({"type": "http.response.body", "body": body})
        return None
