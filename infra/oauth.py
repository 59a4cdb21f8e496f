"""The optional OAuth 2.1 authorization server: a Cognito user pool beside team tokens.

On with `-c oauth=true`. Clients that connect to remote MCP servers only through OAuth (hosted chat
apps' connectors, the newest SDK clients) sign a person in through Cognito's hosted login and
present the access token; the gateway validates it (`shared.auth.oauth`) and maps it to the same
`Principal` a team token gives.

- **Resource server** `<MCP URL>`: one OAuth scope per cairn scope (`<MCP URL>/memory.read`, …),
  `admin` excepted: administration stays with team tokens and the CLI. Clients send RFC 8707's
  `resource=<MCP URL>`; Cognito's resource binding writes it into the access token's `aud`, which
  the gateway requires.
- **Teams** are user-pool groups named `cairn-team-<team>` (the access token's `cognito:groups`);
  an operator adds a person to exactly one. No self sign-up: people are invited.
- **App client**: public (no secret: PKCE), authorization-code grant only, the callback URLs of
  `-c oauth_callback_urls=…` plus the web console's (`<base URL>/console/oauth-callback`: people
  sign in to the console with the same accounts), one-hour access tokens, refresh-token
  revocation on.
- Cognito supports neither dynamic client registration nor client ID metadata documents, so
  clients are configured with this app client's id (docs/infra/api-and-auth.md, "OAuth").
"""

from __future__ import annotations

from aws_cdk import Aws, Duration
from aws_cdk import aws_cognito as cognito
from constructs import Construct

from infra.config import DeployConfig
from infra.nag import suppress
from shared.auth.principal import KNOWN_SCOPES

# Administration (tokens, teams) stays with team tokens and the CLI.
OAUTH_SCOPES = tuple(sorted(KNOWN_SCOPES - {"admin"}))


class OAuth(Construct):
    """`user_pool`, `client`, `issuer` (the URL the gateway trusts) and `domain`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: DeployConfig,
        resource_url: str,
        console_callback_url: str,
    ) -> None:
        super().__init__(scope, construct_id)
        self.user_pool = cognito.UserPool(
            self,
            "UserPool",
            user_pool_name=f"{config.resource_prefix}-users",
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            sign_in_case_sensitive=False,
            # Essentials: managed login and resource binding (the `aud` of RFC 8707).
            feature_plan=cognito.FeaturePlan.ESSENTIALS,
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            deletion_protection=config.is_prod,
            removal_policy=config.removal_policy,
        )
        plus_reason = (
            "Threat protection (advanced security) needs Cognito's Plus plan, priced per active "
            "user; sign-in here is invitation-only with required TOTP MFA and a 12-character "
            "policy instead (docs/infra/api-and-auth.md, OAuth)."
        )
        suppress(self.user_pool, "COG3", plus_reason)
        suppress(self.user_pool, "COG8", plus_reason)
        self.resource_server = self.user_pool.add_resource_server(
            "ResourceServer",
            identifier=resource_url,
            user_pool_resource_server_name="cairn",
            scopes=[
                cognito.ResourceServerScope(scope_name=name, scope_description=f"cairn {name}")
                for name in OAUTH_SCOPES
            ],
        )
        self.client = self.user_pool.add_client(
            "McpClients",
            user_pool_client_name="mcp-clients",
            generate_secret=False,
            auth_flows=cognito.AuthFlow(),  # the hosted login only, never passwords via API
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                # The MCP clients' redirect URIs, and the web console's own sign-in.
                callback_urls=[*config.oauth_callback_urls, console_callback_url],
                scopes=[
                    cognito.OAuthScope.OPENID,
                    *(
                        cognito.OAuthScope.resource_server(
                            self.resource_server,
                            cognito.ResourceServerScope(
                                scope_name=name, scope_description=f"cairn {name}"
                            ),
                        )
                        for name in OAUTH_SCOPES
                    ),
                ],
            ),
            access_token_validity=Duration.hours(1),
            id_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.days(30),
            enable_token_revocation=True,
            prevent_user_existence_errors=True,
        )
        self.domain = self.user_pool.add_domain(
            "Login",
            cognito_domain=cognito.CognitoDomainOptions(
                # Global per region: the account id keeps two accounts' stacks apart.
                domain_prefix=f"{config.resource_prefix}-{Aws.ACCOUNT_ID}",
            ),
            managed_login_version=cognito.ManagedLoginVersion.NEWER_MANAGED_LOGIN,
        )
        cognito.CfnManagedLoginBranding(
            self,
            "LoginBranding",
            user_pool_id=self.user_pool.user_pool_id,
            client_id=self.client.user_pool_client_id,
            use_cognito_provided_values=True,
        )

    @property
    def issuer(self) -> str:
        """What the gateway trusts: `https://cognito-idp.<region>.amazonaws.com/<pool id>`."""
        return self.user_pool.user_pool_provider_url
