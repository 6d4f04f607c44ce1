"""An MCP server protected by OAuth 2.1, with its authorization server on the same port, built
from the official Python SDK's own auth helpers (`mcp.server.auth`: the /authorize, /token and
/register routes, authorization server metadata, protected resource metadata, and the bearer
check in front of /mcp), for toolwire's `mcp login` tests.

python oauth.py PORT

The authorization server approves every request at once (no consent page): /authorize
redirects straight to the client's redirect_uri with a code, as if the person had clicked
"allow". Tokens are opaque random strings kept in memory; refresh rotates both tokens.
GET /stats answers {"registered", "codes", "refreshes", "calls"} for the tests.
Tool: whoami -> {"client_id", "token"} (the calling client and the last characters of its
access token).
"""

import secrets
import sys
import time

import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
BASE = f"http://127.0.0.1:{PORT}"
STATS = {"registered": 0, "codes": 0, "refreshes": 0, "calls": 0}


class Provider:
    """An in-memory authorization server that approves everything."""

    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        STATS["registered"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        STATS["codes"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, authorization_code):
        return self.codes.get(authorization_code)

    def _issue(self, client_id, scopes, resource):
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + 3600,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=3600,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    async def exchange_authorization_code(self, client, authorization_code):
        self.codes.pop(authorization_code.code, None)
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token):
        token = self.refresh.get(refresh_token)
        if token is None or token.client_id != client.client_id:
            return None
        return token

    async def exchange_refresh_token(self, client, refresh_token, scopes):
        STATS["refreshes"] += 1
        self.refresh.pop(refresh_token.token, None)
        # Rotation: the access tokens issued before this refresh stop working.
        for token in [t for t, a in self.access.items() if a.client_id == client.client_id]:
            del self.access[token]
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is None or (found.expires_at and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


server = MCPServer(
    "toolwire-oauth-test",
    auth_server_provider=Provider(),
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        client_registration_options=ClientRegistrationOptions(enabled=True),
        validate_token_resource=False,
    ),
)


@server.tool()
def whoami() -> dict:
    """Who is calling: the OAuth client and the end of its access token."""
    STATS["calls"] += 1
    token = get_access_token()
    return {"client_id": token.client_id if token else None, "token": token.token[-6:] if token else None}


@server.custom_route("/stats", methods=["GET"])
async def stats(_request: Request):
    return JSONResponse(STATS)


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=PORT, log_level="warning")
