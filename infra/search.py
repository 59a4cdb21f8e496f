"""Search: an OpenSearch Serverless vector collection (k-NN + BM25), IAM-only access.

Encryption at rest with an AWS-owned key (encryption policy), HTTPS-only endpoint, and a data
access policy that names exactly the roles passed to `allow` (the search and memory functions).
See docs/infra.md for why Serverless rather than a managed domain.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_opensearchserverless as aoss
from constructs import Construct

from infra.config import DeployConfig

# Data-plane permissions of the functions in the collection's data access policy.
COLLECTION_PERMISSIONS: Final = ("aoss:DescribeCollectionItems",)
INDEX_PERMISSIONS: Final = (
    "aoss:CreateIndex",
    "aoss:DescribeIndex",
    "aoss:UpdateIndex",
    "aoss:ReadDocument",
    "aoss:WriteDocument",
)


class Search(Construct):
    """The vector collection; `allow(roles)` opens it to those roles and nobody else."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self.collection_name = config.resource_prefix
        resource = [f"collection/{self.collection_name}"]
        encryption = aoss.CfnSecurityPolicy(
            self,
            "EncryptionPolicy",
            name=self.collection_name,
            type="encryption",
            policy=json.dumps(
                {
                    "Rules": [{"ResourceType": "collection", "Resource": resource}],
                    "AWSOwnedKey": True,
                }
            ),
        )
        # No VPC: the functions run outside one. The endpoint accepts only SigV4 requests from
        # principals in the data access policy; dashboards stay closed.
        network = aoss.CfnSecurityPolicy(
            self,
            "NetworkPolicy",
            name=self.collection_name,
            type="network",
            policy=json.dumps(
                [
                    {
                        "Rules": [{"ResourceType": "collection", "Resource": resource}],
                        "AllowFromPublic": True,
                    }
                ]
            ),
        )
        self.collection = aoss.CfnCollection(
            self,
            "Collection",
            name=self.collection_name,
            type="VECTORSEARCH",
            description="cairn hybrid search: chunks and memories (BM25 + k-NN)",
            # Standby replicas double the minimum OCUs; dev runs without them.
            standby_replicas="ENABLED" if config.is_prod else "DISABLED",
        )
        # Prod's index is rebuilt from DynamoDB only by a full re-embed (hours, and Bedrock's
        # bill): it outlives the stack there, as the tables do.
        self.collection.apply_removal_policy(config.removal_policy)
        self.collection.add_resource_dependency(encryption)
        self.collection.add_resource_dependency(network)
        self._allowed = False

    @property
    def endpoint(self) -> str:
        return self.collection.attr_collection_endpoint

    @property
    def arn(self) -> str:
        return self.collection.attr_arn

    def allow(self, roles: Sequence[iam.IRole]) -> aoss.CfnAccessPolicy:
        """The data access policy naming exactly `roles`, plus each role's IAM permission."""
        assert not self._allowed, "allow() builds the one data access policy: call it once"
        self._allowed = True
        for role in roles:
            role.add_to_principal_policy(
                iam.PolicyStatement(actions=["aoss:APIAccessAll"], resources=[self.arn])
            )
        policy = [
            {
                "Description": "cairn functions that index and query the collection",
                "Rules": [
                    {
                        "ResourceType": "collection",
                        "Resource": [f"collection/{self.collection_name}"],
                        "Permission": list(COLLECTION_PERMISSIONS),
                    },
                    {
                        "ResourceType": "index",
                        "Resource": [f"index/{self.collection_name}/*"],
                        "Permission": list(INDEX_PERMISSIONS),
                    },
                ],
                "Principal": [role.role_arn for role in roles],
            }
        ]
        return aoss.CfnAccessPolicy(
            self,
            "DataAccessPolicy",
            name=self.collection_name,
            type="data",
            policy=Stack.of(self).to_json_string(policy),
        )
