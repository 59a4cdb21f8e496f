"""Data: the DynamoDB tables (built from `shared.config.tables`), the artifacts/inbox bucket and
the token pepper secret."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from infra.config import DeployConfig
from infra.nag import suppress
from shared.config.tables import ALL_TABLES, TableSpec


class Data(Construct):
    """Tables keyed by logical id, one bucket for artifacts and the inbox, the pepper secret."""

    def __init__(self, scope: Construct, construct_id: str, *, config: DeployConfig) -> None:
        super().__init__(scope, construct_id)
        self._config = config
        self.tables: dict[str, dynamodb.Table] = {
            spec.logical_id: self._build_table(spec) for spec in ALL_TABLES
        }
        self.bucket = self._build_bucket()
        self.token_pepper = self._build_pepper()

    def table(self, logical_id: str) -> dynamodb.Table:
        return self.tables[logical_id]

    def _build_table(self, spec: TableSpec) -> dynamodb.Table:
        table = dynamodb.Table(
            self,
            f"{spec.logical_id.capitalize()}Table",
            partition_key=_string(spec.partition_key),
            sort_key=_string(spec.sort_key) if spec.sort_key else None,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute=spec.ttl_attribute,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES if spec.stream else None,
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            deletion_protection=self._config.is_prod,
            removal_policy=self._config.removal_policy,
        )
        for index in spec.indexes:
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=_string(index.partition_key),
                sort_key=_string(index.sort_key) if index.sort_key else None,
                projection_type=dynamodb.ProjectionType(index.projection),
            )
        return table

    def _build_bucket(self) -> s3.Bucket:
        # Buckets are retained in every environment: CloudFormation cannot delete a non-empty
        # bucket, and emptying one needs a custom-resource Lambda we would rather not ship.
        access_logs = s3.Bucket(
            self,
            "AccessLogsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,  # log delivery supports SSE-S3 only
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            versioned=False,
            lifecycle_rules=[s3.LifecycleRule(id="expire-logs", expiration=Duration.days(365))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        suppress(
            access_logs,
            "S1",
            "This is the server-access-log target bucket; logging it into itself would loop.",
        )
        return s3.Bucket(
            self,
            "ArtifactsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            enforce_ssl=True,
            versioned=True,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="artifacts/",
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="abort-incomplete-uploads",
                    abort_incomplete_multipart_upload_after=Duration.days(7),
                ),
                s3.LifecycleRule(
                    id="expire-old-versions",
                    noncurrent_version_expiration=Duration.days(30),
                ),
                s3.LifecycleRule(
                    id="expire-processed-inbox",
                    prefix="inbox/",
                    expiration=Duration.days(90),
                ),
            ],
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _build_pepper(self) -> secretsmanager.Secret:
        secret = secretsmanager.Secret(
            self,
            "TokenPepper",
            description="HMAC key of cairn token hashes (read by the gateway and the orchestrator)",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True
            ),
            removal_policy=self._config.removal_policy,
        )
        suppress(
            secret,
            "SMG4",
            "The pepper keys every stored token hash: rotating it invalidates every issued "
            "token at once, so it changes only as a planned re-issue, never on a schedule.",
        )
        return secret


def _string(name: str) -> dynamodb.Attribute:
    return dynamodb.Attribute(name=name, type=dynamodb.AttributeType.STRING)
