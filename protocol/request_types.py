"""The request of each API, typed: the union of the kio request classes of every version we handle.

kio generates one class per version (`kio.schema.heartbeat.v4.HeartbeatRequest`); a handler gets whichever
version the client sent, so its `request` parameter is the union of them (a field added in a later version is
read with `getattr(request, name, default)`, as the handlers do). The unions follow protocol/apis.py's table
(its version ranges, protocol/legacy_messages.py's classes included): `tests/unit/test_request_types.py`
fails when a union and the table disagree. Annotations only: nothing here runs on a request's path.
"""

from __future__ import annotations

from kio.schema.add_offsets_to_txn.v0 import AddOffsetsToTxnRequest as AddOffsetsToTxnV0
from kio.schema.add_offsets_to_txn.v1 import AddOffsetsToTxnRequest as AddOffsetsToTxnV1
from kio.schema.add_offsets_to_txn.v2 import AddOffsetsToTxnRequest as AddOffsetsToTxnV2
from kio.schema.add_offsets_to_txn.v3 import AddOffsetsToTxnRequest as AddOffsetsToTxnV3
from kio.schema.add_offsets_to_txn.v4 import AddOffsetsToTxnRequest as AddOffsetsToTxnV4
from kio.schema.add_partitions_to_txn.v0 import AddPartitionsToTxnRequest as AddPartitionsToTxnV0
from kio.schema.add_partitions_to_txn.v1 import AddPartitionsToTxnRequest as AddPartitionsToTxnV1
from kio.schema.add_partitions_to_txn.v2 import AddPartitionsToTxnRequest as AddPartitionsToTxnV2
from kio.schema.add_partitions_to_txn.v3 import AddPartitionsToTxnRequest as AddPartitionsToTxnV3
from kio.schema.alter_configs.v0 import AlterConfigsRequest as AlterConfigsV0
from kio.schema.alter_configs.v1 import AlterConfigsRequest as AlterConfigsV1
from kio.schema.alter_configs.v2 import AlterConfigsRequest as AlterConfigsV2
from kio.schema.alter_share_group_offsets.v0 import AlterShareGroupOffsetsRequest as AlterShareGroupOffsetsV0
from kio.schema.alter_user_scram_credentials.v0 import AlterUserScramCredentialsRequest as AlterUserScramCredentialsV0
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsV0
from kio.schema.api_versions.v1 import ApiVersionsRequest as ApiVersionsV1
from kio.schema.api_versions.v2 import ApiVersionsRequest as ApiVersionsV2
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsV3
from kio.schema.api_versions.v4 import ApiVersionsRequest as ApiVersionsV4
from kio.schema.consumer_group_describe.v0 import ConsumerGroupDescribeRequest as ConsumerGroupDescribeV0
from kio.schema.consumer_group_describe.v1 import ConsumerGroupDescribeRequest as ConsumerGroupDescribeV1
from kio.schema.consumer_group_heartbeat.v0 import ConsumerGroupHeartbeatRequest as ConsumerGroupHeartbeatV0
from kio.schema.consumer_group_heartbeat.v1 import ConsumerGroupHeartbeatRequest as ConsumerGroupHeartbeatV1
from kio.schema.create_acls.v1 import CreateAclsRequest as CreateAclsV1
from kio.schema.create_acls.v2 import CreateAclsRequest as CreateAclsV2
from kio.schema.create_acls.v3 import CreateAclsRequest as CreateAclsV3
from kio.schema.create_partitions.v0 import CreatePartitionsRequest as CreatePartitionsV0
from kio.schema.create_partitions.v1 import CreatePartitionsRequest as CreatePartitionsV1
from kio.schema.create_partitions.v2 import CreatePartitionsRequest as CreatePartitionsV2
from kio.schema.create_partitions.v3 import CreatePartitionsRequest as CreatePartitionsV3
from kio.schema.create_topics.v2 import CreateTopicsRequest as CreateTopicsV2
from kio.schema.create_topics.v3 import CreateTopicsRequest as CreateTopicsV3
from kio.schema.create_topics.v4 import CreateTopicsRequest as CreateTopicsV4
from kio.schema.create_topics.v5 import CreateTopicsRequest as CreateTopicsV5
from kio.schema.create_topics.v6 import CreateTopicsRequest as CreateTopicsV6
from kio.schema.create_topics.v7 import CreateTopicsRequest as CreateTopicsV7
from kio.schema.delete_acls.v1 import DeleteAclsRequest as DeleteAclsV1
from kio.schema.delete_acls.v2 import DeleteAclsRequest as DeleteAclsV2
from kio.schema.delete_acls.v3 import DeleteAclsRequest as DeleteAclsV3
from kio.schema.delete_groups.v0 import DeleteGroupsRequest as DeleteGroupsV0
from kio.schema.delete_groups.v1 import DeleteGroupsRequest as DeleteGroupsV1
from kio.schema.delete_groups.v2 import DeleteGroupsRequest as DeleteGroupsV2
from kio.schema.delete_records.v0 import DeleteRecordsRequest as DeleteRecordsV0
from kio.schema.delete_records.v1 import DeleteRecordsRequest as DeleteRecordsV1
from kio.schema.delete_records.v2 import DeleteRecordsRequest as DeleteRecordsV2
from kio.schema.delete_share_group_offsets.v0 import DeleteShareGroupOffsetsRequest as DeleteShareGroupOffsetsV0
from kio.schema.delete_topics.v1 import DeleteTopicsRequest as DeleteTopicsV1
from kio.schema.delete_topics.v2 import DeleteTopicsRequest as DeleteTopicsV2
from kio.schema.delete_topics.v3 import DeleteTopicsRequest as DeleteTopicsV3
from kio.schema.delete_topics.v4 import DeleteTopicsRequest as DeleteTopicsV4
from kio.schema.delete_topics.v5 import DeleteTopicsRequest as DeleteTopicsV5
from kio.schema.delete_topics.v6 import DeleteTopicsRequest as DeleteTopicsV6
from kio.schema.describe_acls.v1 import DescribeAclsRequest as DescribeAclsV1
from kio.schema.describe_acls.v2 import DescribeAclsRequest as DescribeAclsV2
from kio.schema.describe_acls.v3 import DescribeAclsRequest as DescribeAclsV3
from kio.schema.describe_cluster.v0 import DescribeClusterRequest as DescribeClusterV0
from kio.schema.describe_cluster.v1 import DescribeClusterRequest as DescribeClusterV1
from kio.schema.describe_configs.v1 import DescribeConfigsRequest as DescribeConfigsV1
from kio.schema.describe_configs.v2 import DescribeConfigsRequest as DescribeConfigsV2
from kio.schema.describe_configs.v3 import DescribeConfigsRequest as DescribeConfigsV3
from kio.schema.describe_configs.v4 import DescribeConfigsRequest as DescribeConfigsV4
from kio.schema.describe_groups.v0 import DescribeGroupsRequest as DescribeGroupsV0
from kio.schema.describe_groups.v1 import DescribeGroupsRequest as DescribeGroupsV1
from kio.schema.describe_groups.v2 import DescribeGroupsRequest as DescribeGroupsV2
from kio.schema.describe_groups.v3 import DescribeGroupsRequest as DescribeGroupsV3
from kio.schema.describe_groups.v4 import DescribeGroupsRequest as DescribeGroupsV4
from kio.schema.describe_groups.v5 import DescribeGroupsRequest as DescribeGroupsV5
from kio.schema.describe_log_dirs.v1 import DescribeLogDirsRequest as DescribeLogDirsV1
from kio.schema.describe_log_dirs.v2 import DescribeLogDirsRequest as DescribeLogDirsV2
from kio.schema.describe_log_dirs.v3 import DescribeLogDirsRequest as DescribeLogDirsV3
from kio.schema.describe_log_dirs.v4 import DescribeLogDirsRequest as DescribeLogDirsV4
from kio.schema.describe_producers.v0 import DescribeProducersRequest as DescribeProducersV0
from kio.schema.describe_share_group_offsets.v0 import DescribeShareGroupOffsetsRequest as DescribeShareGroupOffsetsV0
from kio.schema.describe_share_group_offsets.v1 import DescribeShareGroupOffsetsRequest as DescribeShareGroupOffsetsV1
from kio.schema.describe_topic_partitions.v0 import DescribeTopicPartitionsRequest as DescribeTopicPartitionsV0
from kio.schema.describe_transactions.v0 import DescribeTransactionsRequest as DescribeTransactionsV0
from kio.schema.describe_user_scram_credentials.v0 import (
    DescribeUserScramCredentialsRequest as DescribeUserScramCredentialsV0,
)
from kio.schema.end_txn.v0 import EndTxnRequest as EndTxnV0
from kio.schema.end_txn.v1 import EndTxnRequest as EndTxnV1
from kio.schema.end_txn.v2 import EndTxnRequest as EndTxnV2
from kio.schema.end_txn.v3 import EndTxnRequest as EndTxnV3
from kio.schema.end_txn.v4 import EndTxnRequest as EndTxnV4
from kio.schema.fetch.v4 import FetchRequest as FetchV4
from kio.schema.fetch.v5 import FetchRequest as FetchV5
from kio.schema.fetch.v6 import FetchRequest as FetchV6
from kio.schema.fetch.v7 import FetchRequest as FetchV7
from kio.schema.fetch.v8 import FetchRequest as FetchV8
from kio.schema.fetch.v9 import FetchRequest as FetchV9
from kio.schema.fetch.v10 import FetchRequest as FetchV10
from kio.schema.fetch.v11 import FetchRequest as FetchV11
from kio.schema.fetch.v12 import FetchRequest as FetchV12
from kio.schema.fetch.v13 import FetchRequest as FetchV13
from kio.schema.fetch.v14 import FetchRequest as FetchV14
from kio.schema.fetch.v15 import FetchRequest as FetchV15
from kio.schema.fetch.v16 import FetchRequest as FetchV16
from kio.schema.find_coordinator.v0 import FindCoordinatorRequest as FindCoordinatorV0
from kio.schema.find_coordinator.v1 import FindCoordinatorRequest as FindCoordinatorV1
from kio.schema.find_coordinator.v2 import FindCoordinatorRequest as FindCoordinatorV2
from kio.schema.find_coordinator.v3 import FindCoordinatorRequest as FindCoordinatorV3
from kio.schema.find_coordinator.v4 import FindCoordinatorRequest as FindCoordinatorV4
from kio.schema.find_coordinator.v5 import FindCoordinatorRequest as FindCoordinatorV5
from kio.schema.find_coordinator.v6 import FindCoordinatorRequest as FindCoordinatorV6
from kio.schema.heartbeat.v0 import HeartbeatRequest as HeartbeatV0
from kio.schema.heartbeat.v1 import HeartbeatRequest as HeartbeatV1
from kio.schema.heartbeat.v2 import HeartbeatRequest as HeartbeatV2
from kio.schema.heartbeat.v3 import HeartbeatRequest as HeartbeatV3
from kio.schema.heartbeat.v4 import HeartbeatRequest as HeartbeatV4
from kio.schema.incremental_alter_configs.v0 import IncrementalAlterConfigsRequest as IncrementalAlterConfigsV0
from kio.schema.incremental_alter_configs.v1 import IncrementalAlterConfigsRequest as IncrementalAlterConfigsV1
from kio.schema.init_producer_id.v0 import InitProducerIdRequest as InitProducerIdV0
from kio.schema.init_producer_id.v1 import InitProducerIdRequest as InitProducerIdV1
from kio.schema.init_producer_id.v2 import InitProducerIdRequest as InitProducerIdV2
from kio.schema.init_producer_id.v3 import InitProducerIdRequest as InitProducerIdV3
from kio.schema.init_producer_id.v4 import InitProducerIdRequest as InitProducerIdV4
from kio.schema.init_producer_id.v5 import InitProducerIdRequest as InitProducerIdV5
from kio.schema.join_group.v0 import JoinGroupRequest as JoinGroupV0
from kio.schema.join_group.v1 import JoinGroupRequest as JoinGroupV1
from kio.schema.join_group.v2 import JoinGroupRequest as JoinGroupV2
from kio.schema.join_group.v3 import JoinGroupRequest as JoinGroupV3
from kio.schema.join_group.v4 import JoinGroupRequest as JoinGroupV4
from kio.schema.join_group.v5 import JoinGroupRequest as JoinGroupV5
from kio.schema.join_group.v6 import JoinGroupRequest as JoinGroupV6
from kio.schema.join_group.v7 import JoinGroupRequest as JoinGroupV7
from kio.schema.join_group.v8 import JoinGroupRequest as JoinGroupV8
from kio.schema.join_group.v9 import JoinGroupRequest as JoinGroupV9
from kio.schema.leave_group.v0 import LeaveGroupRequest as LeaveGroupV0
from kio.schema.leave_group.v1 import LeaveGroupRequest as LeaveGroupV1
from kio.schema.leave_group.v2 import LeaveGroupRequest as LeaveGroupV2
from kio.schema.leave_group.v3 import LeaveGroupRequest as LeaveGroupV3
from kio.schema.leave_group.v4 import LeaveGroupRequest as LeaveGroupV4
from kio.schema.leave_group.v5 import LeaveGroupRequest as LeaveGroupV5
from kio.schema.list_groups.v0 import ListGroupsRequest as ListGroupsV0
from kio.schema.list_groups.v1 import ListGroupsRequest as ListGroupsV1
from kio.schema.list_groups.v2 import ListGroupsRequest as ListGroupsV2
from kio.schema.list_groups.v3 import ListGroupsRequest as ListGroupsV3
from kio.schema.list_groups.v4 import ListGroupsRequest as ListGroupsV4
from kio.schema.list_groups.v5 import ListGroupsRequest as ListGroupsV5
from kio.schema.list_offsets.v1 import ListOffsetsRequest as ListOffsetsV1
from kio.schema.list_offsets.v2 import ListOffsetsRequest as ListOffsetsV2
from kio.schema.list_offsets.v3 import ListOffsetsRequest as ListOffsetsV3
from kio.schema.list_offsets.v4 import ListOffsetsRequest as ListOffsetsV4
from kio.schema.list_offsets.v5 import ListOffsetsRequest as ListOffsetsV5
from kio.schema.list_offsets.v6 import ListOffsetsRequest as ListOffsetsV6
from kio.schema.list_offsets.v7 import ListOffsetsRequest as ListOffsetsV7
from kio.schema.list_offsets.v8 import ListOffsetsRequest as ListOffsetsV8
from kio.schema.list_offsets.v9 import ListOffsetsRequest as ListOffsetsV9
from kio.schema.list_transactions.v0 import ListTransactionsRequest as ListTransactionsV0
from kio.schema.list_transactions.v1 import ListTransactionsRequest as ListTransactionsV1
from kio.schema.metadata.v0 import MetadataRequest as MetadataV0
from kio.schema.metadata.v1 import MetadataRequest as MetadataV1
from kio.schema.metadata.v2 import MetadataRequest as MetadataV2
from kio.schema.metadata.v3 import MetadataRequest as MetadataV3
from kio.schema.metadata.v4 import MetadataRequest as MetadataV4
from kio.schema.metadata.v5 import MetadataRequest as MetadataV5
from kio.schema.metadata.v6 import MetadataRequest as MetadataV6
from kio.schema.metadata.v7 import MetadataRequest as MetadataV7
from kio.schema.metadata.v8 import MetadataRequest as MetadataV8
from kio.schema.metadata.v9 import MetadataRequest as MetadataV9
from kio.schema.metadata.v10 import MetadataRequest as MetadataV10
from kio.schema.metadata.v11 import MetadataRequest as MetadataV11
from kio.schema.metadata.v12 import MetadataRequest as MetadataV12
from kio.schema.offset_commit.v2 import OffsetCommitRequest as OffsetCommitV2
from kio.schema.offset_commit.v3 import OffsetCommitRequest as OffsetCommitV3
from kio.schema.offset_commit.v4 import OffsetCommitRequest as OffsetCommitV4
from kio.schema.offset_commit.v5 import OffsetCommitRequest as OffsetCommitV5
from kio.schema.offset_commit.v6 import OffsetCommitRequest as OffsetCommitV6
from kio.schema.offset_commit.v7 import OffsetCommitRequest as OffsetCommitV7
from kio.schema.offset_commit.v8 import OffsetCommitRequest as OffsetCommitV8
from kio.schema.offset_commit.v9 import OffsetCommitRequest as OffsetCommitV9
from kio.schema.offset_delete.v0 import OffsetDeleteRequest as OffsetDeleteV0
from kio.schema.offset_fetch.v1 import OffsetFetchRequest as OffsetFetchV1
from kio.schema.offset_fetch.v2 import OffsetFetchRequest as OffsetFetchV2
from kio.schema.offset_fetch.v3 import OffsetFetchRequest as OffsetFetchV3
from kio.schema.offset_fetch.v4 import OffsetFetchRequest as OffsetFetchV4
from kio.schema.offset_fetch.v5 import OffsetFetchRequest as OffsetFetchV5
from kio.schema.offset_fetch.v6 import OffsetFetchRequest as OffsetFetchV6
from kio.schema.offset_fetch.v7 import OffsetFetchRequest as OffsetFetchV7
from kio.schema.offset_fetch.v8 import OffsetFetchRequest as OffsetFetchV8
from kio.schema.offset_fetch.v9 import OffsetFetchRequest as OffsetFetchV9
from kio.schema.offset_for_leader_epoch.v2 import OffsetForLeaderEpochRequest as OffsetForLeaderEpochV2
from kio.schema.offset_for_leader_epoch.v3 import OffsetForLeaderEpochRequest as OffsetForLeaderEpochV3
from kio.schema.offset_for_leader_epoch.v4 import OffsetForLeaderEpochRequest as OffsetForLeaderEpochV4
from kio.schema.produce.v3 import ProduceRequest as ProduceV3
from kio.schema.produce.v4 import ProduceRequest as ProduceV4
from kio.schema.produce.v5 import ProduceRequest as ProduceV5
from kio.schema.produce.v6 import ProduceRequest as ProduceV6
from kio.schema.produce.v7 import ProduceRequest as ProduceV7
from kio.schema.produce.v8 import ProduceRequest as ProduceV8
from kio.schema.produce.v9 import ProduceRequest as ProduceV9
from kio.schema.produce.v10 import ProduceRequest as ProduceV10
from kio.schema.produce.v11 import ProduceRequest as ProduceV11
from kio.schema.sasl_authenticate.v0 import SaslAuthenticateRequest as SaslAuthenticateV0
from kio.schema.sasl_authenticate.v1 import SaslAuthenticateRequest as SaslAuthenticateV1
from kio.schema.sasl_authenticate.v2 import SaslAuthenticateRequest as SaslAuthenticateV2
from kio.schema.sasl_handshake.v0 import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1 import SaslHandshakeRequest as SaslHandshakeV1
from kio.schema.share_acknowledge.v1 import ShareAcknowledgeRequest as ShareAcknowledgeV1
from kio.schema.share_acknowledge.v2 import ShareAcknowledgeRequest as ShareAcknowledgeV2
from kio.schema.share_fetch.v1 import ShareFetchRequest as ShareFetchV1
from kio.schema.share_fetch.v2 import ShareFetchRequest as ShareFetchV2
from kio.schema.share_group_describe.v1 import ShareGroupDescribeRequest as ShareGroupDescribeV1
from kio.schema.share_group_heartbeat.v1 import ShareGroupHeartbeatRequest as ShareGroupHeartbeatV1
from kio.schema.sync_group.v0 import SyncGroupRequest as SyncGroupV0
from kio.schema.sync_group.v1 import SyncGroupRequest as SyncGroupV1
from kio.schema.sync_group.v2 import SyncGroupRequest as SyncGroupV2
from kio.schema.sync_group.v3 import SyncGroupRequest as SyncGroupV3
from kio.schema.sync_group.v4 import SyncGroupRequest as SyncGroupV4
from kio.schema.sync_group.v5 import SyncGroupRequest as SyncGroupV5
from kio.schema.txn_offset_commit.v0 import TxnOffsetCommitRequest as TxnOffsetCommitV0
from kio.schema.txn_offset_commit.v1 import TxnOffsetCommitRequest as TxnOffsetCommitV1
from kio.schema.txn_offset_commit.v2 import TxnOffsetCommitRequest as TxnOffsetCommitV2
from kio.schema.txn_offset_commit.v3 import TxnOffsetCommitRequest as TxnOffsetCommitV3
from kio.schema.txn_offset_commit.v4 import TxnOffsetCommitRequest as TxnOffsetCommitV4

from protocol.apis import ApiKey
from protocol.legacy_messages import OffsetCommitRequestV0, OffsetCommitRequestV1, OffsetFetchRequestV0

ProduceRequest = (
    ProduceV3 | ProduceV4 | ProduceV5 | ProduceV6 | ProduceV7 | ProduceV8 | ProduceV9 | ProduceV10 | ProduceV11
)
FetchRequest = (
    FetchV4 | FetchV5 | FetchV6 | FetchV7 | FetchV8 | FetchV9 | FetchV10 | FetchV11 | FetchV12 | FetchV13 | FetchV14
    | FetchV15 | FetchV16
)
ListOffsetsRequest = (
    ListOffsetsV1 | ListOffsetsV2 | ListOffsetsV3 | ListOffsetsV4 | ListOffsetsV5 | ListOffsetsV6 | ListOffsetsV7
    | ListOffsetsV8 | ListOffsetsV9
)
MetadataRequest = (
    MetadataV0 | MetadataV1 | MetadataV2 | MetadataV3 | MetadataV4 | MetadataV5 | MetadataV6 | MetadataV7 | MetadataV8
    | MetadataV9 | MetadataV10 | MetadataV11 | MetadataV12
)
OffsetCommitRequest = (
    OffsetCommitRequestV0 | OffsetCommitRequestV1 | OffsetCommitV2 | OffsetCommitV3 | OffsetCommitV4 | OffsetCommitV5
    | OffsetCommitV6 | OffsetCommitV7 | OffsetCommitV8 | OffsetCommitV9
)
OffsetFetchRequest = (
    OffsetFetchRequestV0 | OffsetFetchV1 | OffsetFetchV2 | OffsetFetchV3 | OffsetFetchV4 | OffsetFetchV5
    | OffsetFetchV6 | OffsetFetchV7 | OffsetFetchV8 | OffsetFetchV9
)
FindCoordinatorRequest = (
    FindCoordinatorV0 | FindCoordinatorV1 | FindCoordinatorV2 | FindCoordinatorV3 | FindCoordinatorV4
    | FindCoordinatorV5 | FindCoordinatorV6
)
JoinGroupRequest = (
    JoinGroupV0 | JoinGroupV1 | JoinGroupV2 | JoinGroupV3 | JoinGroupV4 | JoinGroupV5 | JoinGroupV6 | JoinGroupV7
    | JoinGroupV8 | JoinGroupV9
)
HeartbeatRequest = HeartbeatV0 | HeartbeatV1 | HeartbeatV2 | HeartbeatV3 | HeartbeatV4
LeaveGroupRequest = LeaveGroupV0 | LeaveGroupV1 | LeaveGroupV2 | LeaveGroupV3 | LeaveGroupV4 | LeaveGroupV5
SyncGroupRequest = SyncGroupV0 | SyncGroupV1 | SyncGroupV2 | SyncGroupV3 | SyncGroupV4 | SyncGroupV5
DescribeGroupsRequest = (
    DescribeGroupsV0 | DescribeGroupsV1 | DescribeGroupsV2 | DescribeGroupsV3 | DescribeGroupsV4 | DescribeGroupsV5
)
ListGroupsRequest = ListGroupsV0 | ListGroupsV1 | ListGroupsV2 | ListGroupsV3 | ListGroupsV4 | ListGroupsV5
SaslHandshakeRequest = SaslHandshakeV0 | SaslHandshakeV1
ApiVersionsRequest = ApiVersionsV0 | ApiVersionsV1 | ApiVersionsV2 | ApiVersionsV3 | ApiVersionsV4
CreateTopicsRequest = (
    CreateTopicsV2 | CreateTopicsV3 | CreateTopicsV4 | CreateTopicsV5 | CreateTopicsV6 | CreateTopicsV7
)
DeleteTopicsRequest = (
    DeleteTopicsV1 | DeleteTopicsV2 | DeleteTopicsV3 | DeleteTopicsV4 | DeleteTopicsV5 | DeleteTopicsV6
)
DeleteRecordsRequest = DeleteRecordsV0 | DeleteRecordsV1 | DeleteRecordsV2
InitProducerIdRequest = (
    InitProducerIdV0 | InitProducerIdV1 | InitProducerIdV2 | InitProducerIdV3 | InitProducerIdV4 | InitProducerIdV5
)
OffsetForLeaderEpochRequest = OffsetForLeaderEpochV2 | OffsetForLeaderEpochV3 | OffsetForLeaderEpochV4
AddPartitionsToTxnRequest = AddPartitionsToTxnV0 | AddPartitionsToTxnV1 | AddPartitionsToTxnV2 | AddPartitionsToTxnV3
AddOffsetsToTxnRequest = (
    AddOffsetsToTxnV0 | AddOffsetsToTxnV1 | AddOffsetsToTxnV2 | AddOffsetsToTxnV3 | AddOffsetsToTxnV4
)
EndTxnRequest = EndTxnV0 | EndTxnV1 | EndTxnV2 | EndTxnV3 | EndTxnV4
TxnOffsetCommitRequest = (
    TxnOffsetCommitV0 | TxnOffsetCommitV1 | TxnOffsetCommitV2 | TxnOffsetCommitV3 | TxnOffsetCommitV4
)
DescribeAclsRequest = DescribeAclsV1 | DescribeAclsV2 | DescribeAclsV3
CreateAclsRequest = CreateAclsV1 | CreateAclsV2 | CreateAclsV3
DeleteAclsRequest = DeleteAclsV1 | DeleteAclsV2 | DeleteAclsV3
DescribeConfigsRequest = DescribeConfigsV1 | DescribeConfigsV2 | DescribeConfigsV3 | DescribeConfigsV4
AlterConfigsRequest = AlterConfigsV0 | AlterConfigsV1 | AlterConfigsV2
DescribeLogDirsRequest = DescribeLogDirsV1 | DescribeLogDirsV2 | DescribeLogDirsV3 | DescribeLogDirsV4
SaslAuthenticateRequest = SaslAuthenticateV0 | SaslAuthenticateV1 | SaslAuthenticateV2
CreatePartitionsRequest = CreatePartitionsV0 | CreatePartitionsV1 | CreatePartitionsV2 | CreatePartitionsV3
DeleteGroupsRequest = DeleteGroupsV0 | DeleteGroupsV1 | DeleteGroupsV2
IncrementalAlterConfigsRequest = IncrementalAlterConfigsV0 | IncrementalAlterConfigsV1
OffsetDeleteRequest = OffsetDeleteV0
DescribeUserScramCredentialsRequest = DescribeUserScramCredentialsV0
AlterUserScramCredentialsRequest = AlterUserScramCredentialsV0
DescribeClusterRequest = DescribeClusterV0 | DescribeClusterV1
DescribeProducersRequest = DescribeProducersV0
DescribeTransactionsRequest = DescribeTransactionsV0
ListTransactionsRequest = ListTransactionsV0 | ListTransactionsV1
ConsumerGroupHeartbeatRequest = ConsumerGroupHeartbeatV0 | ConsumerGroupHeartbeatV1
ConsumerGroupDescribeRequest = ConsumerGroupDescribeV0 | ConsumerGroupDescribeV1
DescribeTopicPartitionsRequest = DescribeTopicPartitionsV0
ShareGroupHeartbeatRequest = ShareGroupHeartbeatV1
ShareGroupDescribeRequest = ShareGroupDescribeV1
ShareFetchRequest = ShareFetchV1 | ShareFetchV2
ShareAcknowledgeRequest = ShareAcknowledgeV1 | ShareAcknowledgeV2
DescribeShareGroupOffsetsRequest = DescribeShareGroupOffsetsV0 | DescribeShareGroupOffsetsV1
AlterShareGroupOffsetsRequest = AlterShareGroupOffsetsV0
DeleteShareGroupOffsetsRequest = DeleteShareGroupOffsetsV0

#: the union of each API in the table (the test compares them)
REQUEST_TYPES: dict[ApiKey, object] = {
    ApiKey.PRODUCE: ProduceRequest,
    ApiKey.FETCH: FetchRequest,
    ApiKey.LIST_OFFSETS: ListOffsetsRequest,
    ApiKey.METADATA: MetadataRequest,
    ApiKey.OFFSET_COMMIT: OffsetCommitRequest,
    ApiKey.OFFSET_FETCH: OffsetFetchRequest,
    ApiKey.FIND_COORDINATOR: FindCoordinatorRequest,
    ApiKey.JOIN_GROUP: JoinGroupRequest,
    ApiKey.HEARTBEAT: HeartbeatRequest,
    ApiKey.LEAVE_GROUP: LeaveGroupRequest,
    ApiKey.SYNC_GROUP: SyncGroupRequest,
    ApiKey.DESCRIBE_GROUPS: DescribeGroupsRequest,
    ApiKey.LIST_GROUPS: ListGroupsRequest,
    ApiKey.SASL_HANDSHAKE: SaslHandshakeRequest,
    ApiKey.API_VERSIONS: ApiVersionsRequest,
    ApiKey.CREATE_TOPICS: CreateTopicsRequest,
    ApiKey.DELETE_TOPICS: DeleteTopicsRequest,
    ApiKey.DELETE_RECORDS: DeleteRecordsRequest,
    ApiKey.INIT_PRODUCER_ID: InitProducerIdRequest,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: OffsetForLeaderEpochRequest,
    ApiKey.ADD_PARTITIONS_TO_TXN: AddPartitionsToTxnRequest,
    ApiKey.ADD_OFFSETS_TO_TXN: AddOffsetsToTxnRequest,
    ApiKey.END_TXN: EndTxnRequest,
    ApiKey.TXN_OFFSET_COMMIT: TxnOffsetCommitRequest,
    ApiKey.DESCRIBE_ACLS: DescribeAclsRequest,
    ApiKey.CREATE_ACLS: CreateAclsRequest,
    ApiKey.DELETE_ACLS: DeleteAclsRequest,
    ApiKey.DESCRIBE_CONFIGS: DescribeConfigsRequest,
    ApiKey.ALTER_CONFIGS: AlterConfigsRequest,
    ApiKey.DESCRIBE_LOG_DIRS: DescribeLogDirsRequest,
    ApiKey.SASL_AUTHENTICATE: SaslAuthenticateRequest,
    ApiKey.CREATE_PARTITIONS: CreatePartitionsRequest,
    ApiKey.DELETE_GROUPS: DeleteGroupsRequest,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: IncrementalAlterConfigsRequest,
    ApiKey.OFFSET_DELETE: OffsetDeleteRequest,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: DescribeUserScramCredentialsRequest,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: AlterUserScramCredentialsRequest,
    ApiKey.DESCRIBE_CLUSTER: DescribeClusterRequest,
    ApiKey.DESCRIBE_PRODUCERS: DescribeProducersRequest,
    ApiKey.DESCRIBE_TRANSACTIONS: DescribeTransactionsRequest,
    ApiKey.LIST_TRANSACTIONS: ListTransactionsRequest,
    ApiKey.CONSUMER_GROUP_HEARTBEAT: ConsumerGroupHeartbeatRequest,
    ApiKey.CONSUMER_GROUP_DESCRIBE: ConsumerGroupDescribeRequest,
    ApiKey.DESCRIBE_TOPIC_PARTITIONS: DescribeTopicPartitionsRequest,
    ApiKey.SHARE_GROUP_HEARTBEAT: ShareGroupHeartbeatRequest,
    ApiKey.SHARE_GROUP_DESCRIBE: ShareGroupDescribeRequest,
    ApiKey.SHARE_FETCH: ShareFetchRequest,
    ApiKey.SHARE_ACKNOWLEDGE: ShareAcknowledgeRequest,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: DescribeShareGroupOffsetsRequest,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: AlterShareGroupOffsetsRequest,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: DeleteShareGroupOffsetsRequest,
}
