"""Search: OpenSearch with k-NN + BM25, IAM-only access, on one of two services.

- `serverless` (staging and prod by default): an OpenSearch Serverless vector collection,
  encryption at rest with an AWS-owned key, HTTPS-only, and a data access policy naming
  exactly the roles passed to `allow`. Minimum 1 OCU idle (2 with standby replicas in prod).
- `domain` (dev by default): a one-node managed OpenSearch domain on a small instance with
  k-NN, encryption at rest and node to node, HTTPS only (TLS 1.2+), its slow and error logs
  in CloudWatch, and a resource policy naming exactly the same roles. A fraction of the idle
  bill (docs/infra/search-domain.md).

Either way the index template carrying the k-NN mapping of every team index is put at deploy
by a custom resource (`infra/index_template_provider/handler.py`), after the access policy,
so no team index is ever created without its mapping. The functions get the endpoint and
`CAIRN_SEARCH_SERVICE` (`aoss` or `es`: the SigV4 service name) and the same adapter signs
for either.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_opensearchserverless as aoss
from aws_cdk import aws_opensearchservice as opensearch
from constructs import Construct

from infra.bundling import LAMBDA_ARCHITECTURE, LAMBDA_RUNTIME
from infra.config import DeployConfig
from infra.nag import nag_resource, suppress
from infra.naming import unique_name
from shared.config.settings import Settings
from shared.search.adapters.opensearch import (
    index_template_body,
    index_template_name,
    serverless_violations,
)

# Data-plane permissions of the functions in the collection's data access policy.
COLLECTION_PERMISSIONS: Final = ("aoss:DescribeCollectionItems",)
INDEX_PERMISSIONS: Final = (
    "aoss:CreateIndex",
    "aoss:DescribeIndex",
    "aoss:UpdateIndex",
    "aoss:ReadDocument",
    "aoss:WriteDocument",
)
# Index templates are collection items in Serverless: what the template provider may do.
TEMPLATE_PERMISSIONS: Final = (
    "aoss:CreateCollectionItems",
    "aoss:UpdateCollectionItems",
    "aoss:DescribeCollectionItems",
    "aoss:DeleteCollectionItems",
)
# The functions' HTTP methods on a managed domain's indexes (no cluster administration).
DOMAIN_ACTIONS: Final = (
    "es:ESHttpGet",
    "es:ESHttpHead",
    "es:ESHttpPost",
    "es:ESHttpPut",
    "es:ESHttpDelete",
)
TEMPLATE_ACTIONS: Final = ("es:ESHttpPut", "es:ESHttpDelete")

SERVICE_SERVERLESS: Final = "aoss"
SERVICE_DOMAIN: Final = "es"
# The managed domain (dev): OpenSearch 2.19 has Faiss HNSW with cosine similarity and
# efficient filtering; t3.small.search (2 vCPU, 2 GiB) is the smallest current instance.
DOMAIN_ENGINE_VERSION: Final = "OpenSearch_2.19"
DOMAIN_INSTANCE_TYPE: Final = "t3.small.search"
DOMAIN_VOLUME_GIB: Final = 10
DOMAIN_TLS_POLICY: Final = "Policy-Min-TLS-1-2-PFS-2023-10"
# Index names and embedding size the functions use (their Settings defaults).
INDEX_PREFIX: Final[str] = Settings.model_fields["search_index"].default
DIMENSIONS: Final[int] = Settings.model_fields["embedding_dimensions"].default
PROVIDER_DIR: Final = Path(__file__).resolve().parent / "index_template_provider"
PROVIDER_HANDLER: Final = "handler.handler"


class Search(Construct):
    """The search service; `allow(roles)` opens it to those roles and nobody else and puts
    the index template."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        # Prod retains the collection (or domain) with its stack: its name then takes the
        # stack id's suffix, so a later stack of the same name creates its own (infra.naming).
        retained = config.removal_policy == RemovalPolicy.RETAIN
        self.name = (
            unique_name(f"{config.resource_prefix}-") if retained else config.resource_prefix
        )
        self.serverless = config.search == "serverless"
        self.service = SERVICE_SERVERLESS if self.serverless else SERVICE_DOMAIN
        self.collection: aoss.CfnCollection | None = None
        self.domain: opensearch.CfnDomain | None = None
        self.template_resource: CustomResource | None = None
        # The CloudWatch Logs resource policy a publishing domain needs (none in dev).
        self.log_policy: logs.CfnResourcePolicy | None = None
        self.template_body = index_template_body(
            INDEX_PREFIX, DIMENSIONS, serverless=self.serverless
        )
        if self.serverless:
            problems = serverless_violations(self.template_body, DIMENSIONS)
            if problems:  # fail the synth, not the deploy
                raise ValueError(f"index template refused by Serverless: {'; '.join(problems)}")
            self.collection = self._build_collection(config)
        else:
            self.domain = self._build_domain(config)
        self._allowed = False

    # ------------------------------------------------------------------ resources

    def _build_collection(self, config: DeployConfig) -> aoss.CfnCollection:
        rules = [{"ResourceType": "collection", "Resource": [f"collection/{self.name}"]}]
        encryption = self._security_policy(
            "EncryptionPolicy", "encryption", {"Rules": rules, "AWSOwnedKey": True}
        )
        # No VPC: the functions run outside one. The endpoint accepts only SigV4 requests from
        # principals in the data access policy; dashboards stay closed.
        network = self._security_policy(
            "NetworkPolicy", "network", [{"Rules": rules, "AllowFromPublic": True}]
        )
        collection = aoss.CfnCollection(
            self,
            "Collection",
            name=self.name,
            type="VECTORSEARCH",
            description="cairn hybrid search: chunks and memories (BM25 + k-NN)",
            # Standby replicas double the minimum OCUs; dev runs without them.
            standby_replicas="ENABLED" if config.is_prod else "DISABLED",
        )
        # Prod's index is rebuilt from DynamoDB only by a full re-embed (hours, and Bedrock's
        # bill): it outlives the stack there, as the tables do, and with it the policies that
        # encrypt it and let it be reached (without them it could be neither used nor deleted
        # as it was; docs/infra/security-and-data.md, "What `cdk destroy` keeps").
        for resource_with_it in (collection, encryption, network):
            resource_with_it.apply_removal_policy(config.removal_policy)
        collection.add_resource_dependency(encryption)
        collection.add_resource_dependency(network)
        return collection

    def _security_policy(
        self, construct_id: str, kind: str, policy: object
    ) -> aoss.CfnSecurityPolicy:
        """The collection's security policy of `kind`, its document `policy` as JSON."""
        return aoss.CfnSecurityPolicy(
            self,
            construct_id,
            name=self.name,
            type=kind,
            policy=Stack.of(self).to_json_string(policy),
        )

    def _build_domain(self, config: DeployConfig) -> opensearch.CfnDomain:
        log_groups = self._domain_log_groups(config)
        domain = opensearch.CfnDomain(
            self,
            "Domain",
            domain_name=self.name,
            engine_version=DOMAIN_ENGINE_VERSION,
            cluster_config=opensearch.CfnDomain.ClusterConfigProperty(
                instance_type=DOMAIN_INSTANCE_TYPE,
                instance_count=1,
                zone_awareness_enabled=False,
                dedicated_master_enabled=False,
            ),
            ebs_options=opensearch.CfnDomain.EBSOptionsProperty(
                ebs_enabled=True, volume_type="gp3", volume_size=DOMAIN_VOLUME_GIB
            ),
            encryption_at_rest_options=opensearch.CfnDomain.EncryptionAtRestOptionsProperty(
                enabled=True
            ),
            node_to_node_encryption_options=opensearch.CfnDomain.NodeToNodeEncryptionOptionsProperty(
                enabled=True
            ),
            domain_endpoint_options=opensearch.CfnDomain.DomainEndpointOptionsProperty(
                enforce_https=True, tls_security_policy=DOMAIN_TLS_POLICY
            ),
            log_publishing_options={
                kind: opensearch.CfnDomain.LogPublishingOptionProperty(
                    enabled=True, cloud_watch_logs_log_group_arn=group.log_group_arn
                )
                for kind, group in log_groups.items()
            }
            or None,
        )
        domain.apply_removal_policy(config.removal_policy)
        if self.log_policy is not None:
            domain.add_resource_dependency(self.log_policy)
        else:
            suppress(
                domain,
                "OS9",
                "A dev domain publishes no logs: each publishing domain needs a CloudWatch Logs "
                "resource policy, of which a region holds 10, so the 10th developer's stack "
                "would fail. Its callers' errors are in the functions' logs.",
                children=False,
            )
        suppress(
            domain,
            "OS1",
            "The functions run outside a VPC (no NAT bill in dev); every request must be SigV4 "
            "signed by a role the domain's resource policy names.",
            children=False,
        )
        suppress(
            domain,
            "OS3",
            "Access is by IAM identity (the resource policy names the function roles), not by "
            "source IP: Lambda functions have no fixed addresses.",
            children=False,
        )
        suppress(
            domain,
            "OS4",
            "A one-node dev domain: dedicated master nodes would triple its cost. Prod uses a "
            "Serverless collection.",
            children=False,
        )
        suppress(
            domain,
            "OS7",
            "A one-node dev domain has no second zone to be aware of; the index is derived "
            "and rebuildable from DynamoDB. Prod uses a Serverless collection.",
            children=False,
        )
        suppress(
            domain,
            "OS5",
            "Anonymous access is impossible: the resource policy allows only the named function "
            "roles, and requests must be SigV4 signed.",
            children=False,
        )
        return domain

    def _domain_log_groups(self, config: DeployConfig) -> dict[str, logs.LogGroup]:
        """The domain's application and slow logs and the resource policy OpenSearch Service
        writes them through; none in dev (`log_policy` None): an account's region holds 10
        CloudWatch Logs resource policies, and every developer has a stack of their own."""
        if config.environment == "dev":
            return {}
        stack = Stack.of(self)
        log_groups = {
            kind: logs.LogGroup(
                self,
                f"{title}Logs",
                retention=config.log_retention,
                removal_policy=config.removal_policy,
            )
            for kind, title in (
                ("ES_APPLICATION_LOGS", "Application"),
                ("SEARCH_SLOW_LOGS", "SearchSlow"),
                ("INDEX_SLOW_LOGS", "IndexSlow"),
            )
        }
        # OpenSearch Service writes its logs through a CloudWatch Logs resource policy, limited
        # to these log groups and to domains of this account.
        self.log_policy = logs.CfnResourcePolicy(
            self,
            "LogDelivery",
            policy_name=f"{config.stack_name}-search-logs",
            policy_document=stack.to_json_string(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "es.amazonaws.com"},
                            "Action": ["logs:PutLogEvents", "logs:CreateLogStream"],
                            "Resource": [group.log_group_arn for group in log_groups.values()],
                            "Condition": {"StringEquals": {"aws:SourceAccount": stack.account}},
                        }
                    ],
                }
            ),
        )
        return log_groups

    # ------------------------------------------------------------------ attributes

    @property
    def endpoint(self) -> str:
        """What `CAIRN_SEARCH_ENDPOINT` holds (the adapter accepts it with or without https)."""
        resource = self.resource
        if isinstance(resource, aoss.CfnCollection):
            return resource.attr_collection_endpoint
        return resource.attr_domain_endpoint

    @property
    def arn(self) -> str:
        return self.resource.attr_arn

    @property
    def access_resource(self) -> str:
        """The resource the functions' IAM statement names: the collection, or the domain's
        index paths."""
        return self.arn if self.collection is not None else self._domain_arn("/*")

    @property
    def resource(self) -> aoss.CfnCollection | opensearch.CfnDomain:
        """The collection or the domain (for tests and dependencies)."""
        resource = self.collection or self.domain
        assert resource is not None
        return resource

    def _domain_arn(self, path: str = "") -> str:
        # Built from the name: the domain's own access policy cannot reference its Arn.
        return Stack.of(self).format_arn(
            service="es", resource="domain", resource_name=f"{self.name}{path}"
        )

    # ------------------------------------------------------------------ access

    def allow(self, roles: Sequence[iam.IRole]) -> None:
        """Open the service to exactly `roles` (and the template provider), then put the
        index template."""
        assert not self._allowed, "allow() builds the one access policy: call it once"
        self._allowed = True
        provider = self._build_provider()
        assert provider.role is not None
        if self.collection is not None:
            policy = self._allow_collection(roles, provider.role)
            dependency: Construct = policy
        else:
            self._allow_domain(roles, provider.role)
            dependency = self.resource
        template_name = index_template_name(INDEX_PREFIX)
        self.template_resource = CustomResource(
            self,
            "IndexTemplate",
            service_token=provider.function_arn,
            resource_type="Custom::SearchIndexTemplate",
            properties={
                "Endpoint": self.endpoint,
                "Service": self.service,
                "Region": Stack.of(self).region,
                "TemplateName": template_name,
                "Template": json.dumps(self.template_body, sort_keys=True),
            },
        )
        self.template_resource.node.add_dependency(dependency)
        self.template_resource.node.add_dependency(provider)

    def _allow_collection(
        self, roles: Sequence[iam.IRole], provider: iam.IRole
    ) -> aoss.CfnAccessPolicy:
        for role in (*roles, provider):
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["aoss:APIAccessAll"], resources=[self.arn])
            )
        collection = [f"collection/{self.name}"]
        policy = [
            {
                "Description": "cairn functions that index and query the collection",
                "Rules": [
                    {
                        "ResourceType": "collection",
                        "Resource": collection,
                        "Permission": list(COLLECTION_PERMISSIONS),
                    },
                    {
                        "ResourceType": "index",
                        "Resource": [f"index/{self.name}/*"],
                        "Permission": list(INDEX_PERMISSIONS),
                    },
                ],
                "Principal": [role.role_arn for role in roles],
            },
            {
                "Description": "the deploy-time provider of the index template (no documents)",
                "Rules": [
                    {
                        "ResourceType": "collection",
                        "Resource": collection,
                        "Permission": list(TEMPLATE_PERMISSIONS),
                    }
                ],
                "Principal": [provider.role_arn],
            },
        ]
        access = aoss.CfnAccessPolicy(
            self,
            "DataAccessPolicy",
            name=self.name,
            type="data",
            policy=Stack.of(self).to_json_string(policy),
        )
        # Kept with the collection: it names the roles that may reach its data (an operator
        # adds their own role to it to read or delete what the stack left).
        access.apply_removal_policy(self._config.removal_policy)
        return access

    def _allow_domain(self, roles: Sequence[iam.IRole], provider: iam.IRole) -> None:
        assert self.domain is not None
        indexes = self.access_resource
        template = self._domain_arn(f"/_index_template/{index_template_name(INDEX_PREFIX)}")
        for role in roles:
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=list(DOMAIN_ACTIONS), resources=[indexes])
            )
            suppress(
                role,
                "IAM5",
                "Team indexes are named at run time (a hash of the team); the grant is the "
                "index paths of this one domain, HTTP methods only.",
                [nag_resource(Stack.of(self), indexes)],
            )
        provider.add_to_principal_policy(
            iam.PolicyStatement(actions=list(TEMPLATE_ACTIONS), resources=[template])
        )
        self.domain.access_policies = {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": [role.role_arn for role in roles]},
                    "Action": list(DOMAIN_ACTIONS),
                    "Resource": indexes,
                },
                {
                    "Effect": "Allow",
                    "Principal": {"AWS": [provider.role_arn]},
                    "Action": list(TEMPLATE_ACTIONS),
                    "Resource": template,
                },
            ],
        }

    def _build_provider(self) -> lambda_.Function:
        """The custom resource's function: its own role, its own log group, no managed
        policy, no cairn code (the asset is one file using the runtime's botocore)."""
        log_group = logs.LogGroup(
            self,
            "TemplateProviderLogs",
            retention=self._config.log_retention,
            removal_policy=self._config.removal_policy,
        )
        role = iam.Role(
            self,
            "TemplateProviderRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="cairn search index template (deploy time)",
        )
        log_group.grant_write(role)
        return lambda_.Function(
            self,
            "TemplateProvider",
            description="cairn: puts the search index template at deploy",
            runtime=LAMBDA_RUNTIME,
            architecture=LAMBDA_ARCHITECTURE,
            handler=PROVIDER_HANDLER,
            code=lambda_.Code.from_asset(str(PROVIDER_DIR), exclude=["**/__pycache__", "**/*.pyc"]),
            # Long enough to wait out a just-created access policy (403s are retried).
            timeout=Duration.minutes(5),
            memory_size=256,
            role=role,
            log_group=log_group,
        )
