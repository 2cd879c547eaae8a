import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.Errors;

/**
 * One admin operation of the Java Admin client (kafka-clients 3.9.1), printed as ONE JSON line on stdout
 * (tests/clients/admin.py runs it once per operation). Errors are reported, not thrown: {"error": "ClassName: msg"}.
 *
 *   java AdminOps BOOTSTRAP list                                   -> {"groups": [{group, state, type}]}
 *   java AdminOps BOOTSTRAP describe GROUP                         -> {group, state, type, protocol, members:
 *                                                                  [{member_id, instance_id, client_id, assignment, target}]}
 *   java AdminOps BOOTSTRAP offsets GROUP
 *   java AdminOps BOOTSTRAP delete-offsets GROUP TOPIC P[,P...]
 *   java AdminOps BOOTSTRAP delete-group GROUP
 *   java AdminOps BOOTSTRAP create-topic NAME PARTITIONS [k=v ...]
 *   java AdminOps BOOTSTRAP describe-configs topic|broker NAME     -> {"configs": {name: {value, source, readOnly, sensitive}}}
 *   java AdminOps BOOTSTRAP alter-configs topic|broker NAME OP...  incrementalAlterConfigs; OP: k=v (SET), -k (DELETE),
 *                                                                  k+=v (APPEND), k-=v (SUBTRACT)
 *   java AdminOps BOOTSTRAP create-partitions TOPIC N
 *   java AdminOps BOOTSTRAP delete-records TOPIC PARTITION OFFSET  -> {"low_watermark": N}
 *   java AdminOps BOOTSTRAP describe-cluster                       -> {clusterId, controller, nodes: [[id, host, port]]}
 *   java AdminOps BOOTSTRAP describe-log-dirs                      -> {"dirs": {broker: {dir: {error, partitions: [[t, p, size]]}}}}
 *   java AdminOps BOOTSTRAP list-offsets TOPIC earliest|latest     -> {"offsets": [[p, offset]]}
 *   java AdminOps BOOTSTRAP alter-group-offsets GROUP TOPIC PARTITION OFFSET -> {"error": null} or {"error_name": ...}
 */
public class AdminOps {
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String tps(Collection<TopicPartition> parts) {
        StringJoiner j = new StringJoiner(",", "[", "]");
        for (TopicPartition tp : parts) j.add("[" + q(tp.topic()) + "," + tp.partition() + "]");
        return j.toString();
    }

    static String err(Throwable t) {
        if (t instanceof ExecutionException && t.getCause() != null) t = t.getCause();
        return "{\"error\":" + q(t.getClass().getSimpleName() + ": " + t.getMessage()) + "}";
    }

    static ConfigResource.Type resourceType(String kind) {
        return kind.equals("broker") ? ConfigResource.Type.BROKER : ConfigResource.Type.TOPIC;
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        String op = args[1];
        String out;
        try (Admin admin = Admin.create(props)) {
            try {
                out = run(admin, op, args);
            } catch (Exception e) {
                out = err(e);
            }
        }
        System.out.println(out);
        System.out.flush();
    }

    static String run(Admin admin, String op, String[] args) throws Exception {
        switch (op) {
            case "list": {
                StringJoiner j = new StringJoiner(",", "{\"groups\":[", "]}");
                for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) {
                    j.add("{\"group\":" + q(g.groupId()) + ",\"state\":"
                          + q(g.state().map(Object::toString).orElse(null)) + ",\"type\":"
                          + q(g.type().map(Object::toString).orElse(null)) + "}");
                }
                return j.toString();
            }
            case "describe": {
                String group = args[2];
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).describedGroups()
                        .get(group).get();
                StringJoiner members = new StringJoiner(",", "[", "]");
                for (MemberDescription m : d.members()) {
                    members.add("{\"member_id\":" + q(m.consumerId()) + ",\"instance_id\":"
                                + q(m.groupInstanceId().orElse(null)) + ",\"client_id\":" + q(m.clientId())
                                + ",\"assignment\":" + tps(m.assignment().topicPartitions())
                                + ",\"target\":" + m.targetAssignment().map(a -> tps(a.topicPartitions())).orElse("null")
                                + "}");
                }
                return "{\"group\":" + q(d.groupId()) + ",\"state\":" + q(d.state().toString())
                       + ",\"type\":" + q(d.type().toString())
                       + ",\"protocol\":" + q(d.partitionAssignor()) + ",\"members\":" + members + "}";
            }
            case "offsets": {
                String group = args[2];
                Map<TopicPartition, OffsetAndMetadata> offsets =
                        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                StringJoiner j = new StringJoiner(",", "{\"offsets\":[", "]}");
                for (Map.Entry<TopicPartition, OffsetAndMetadata> e : offsets.entrySet()) {
                    if (e.getValue() == null) continue;
                    j.add("[" + q(e.getKey().topic()) + "," + e.getKey().partition() + "," + e.getValue().offset() + "]");
                }
                return j.toString();
            }
            case "delete-offsets": {
                String group = args[2], topic = args[3];
                Set<TopicPartition> parts = new LinkedHashSet<>();
                for (String p : args[4].split(",")) parts.add(new TopicPartition(topic, Integer.parseInt(p)));
                DeleteConsumerGroupOffsetsResult r = admin.deleteConsumerGroupOffsets(group, parts);
                StringJoiner j = new StringJoiner(",", "{\"partitions\":[", "]}");
                for (TopicPartition tp : parts) {
                    String e;
                    try {
                        r.partitionResult(tp).get();
                        e = "null";
                    } catch (ExecutionException ex) {
                        e = q(ex.getCause().getClass().getSimpleName());
                    }
                    j.add("[" + tp.partition() + "," + e + "]");
                }
                return j.toString();
            }
            case "delete-group": {
                String group = args[2];
                try {
                    admin.deleteConsumerGroups(List.of(group)).all().get();
                    return "{\"deleted\":true}";
                } catch (ExecutionException ex) {
                    return "{\"deleted\":false,\"error\":" + q(ex.getCause().getClass().getSimpleName()) + "}";
                }
            }
            case "create-topic": {
                Map<String, String> configs = new LinkedHashMap<>();
                for (int i = 4; i < args.length; i++) {
                    int eq = args[i].indexOf('=');
                    configs.put(args[i].substring(0, eq), args[i].substring(eq + 1));
                }
                NewTopic topic = new NewTopic(args[2], Integer.parseInt(args[3]), (short) 1).configs(configs);
                admin.createTopics(List.of(topic)).all().get();
                return "{\"created\":true}";
            }
            case "describe-configs": {
                ConfigResource resource = new ConfigResource(resourceType(args[2]), args[3]);
                Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
                StringJoiner j = new StringJoiner(",", "{\"configs\":{", "}}");
                for (ConfigEntry e : config.entries()) {
                    j.add(q(e.name()) + ":{\"value\":" + q(e.value()) + ",\"source\":" + q(e.source().name())
                          + ",\"readOnly\":" + e.isReadOnly() + ",\"sensitive\":" + e.isSensitive() + "}");
                }
                return j.toString();
            }
            case "alter-configs": {
                ConfigResource resource = new ConfigResource(resourceType(args[2]), args[3]);
                List<AlterConfigOp> ops = new ArrayList<>();
                for (int i = 4; i < args.length; i++) {
                    String a = args[i];
                    if (a.startsWith("-")) {
                        ops.add(new AlterConfigOp(new ConfigEntry(a.substring(1), null), AlterConfigOp.OpType.DELETE));
                        continue;
                    }
                    int eq = a.indexOf('=');
                    String name = a.substring(0, eq), value = a.substring(eq + 1);
                    AlterConfigOp.OpType type = AlterConfigOp.OpType.SET;
                    if (name.endsWith("+")) type = AlterConfigOp.OpType.APPEND;
                    else if (name.endsWith("-")) type = AlterConfigOp.OpType.SUBTRACT;
                    if (type != AlterConfigOp.OpType.SET) name = name.substring(0, name.length() - 1);
                    ops.add(new AlterConfigOp(new ConfigEntry(name, value), type));
                }
                admin.incrementalAlterConfigs(Map.of(resource, ops)).all().get();
                return "{\"altered\":true}";
            }
            case "create-partitions": {
                admin.createPartitions(Map.of(args[2], NewPartitions.increaseTo(Integer.parseInt(args[3])))).all().get();
                return "{\"created\":true}";
            }
            case "delete-records": {
                TopicPartition tp = new TopicPartition(args[2], Integer.parseInt(args[3]));
                DeletedRecords d = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(Long.parseLong(args[4]))))
                        .lowWatermarks().get(tp).get();
                return "{\"low_watermark\":" + d.lowWatermark() + "}";
            }
            case "describe-cluster": {
                DescribeClusterResult r = admin.describeCluster();
                Node controller = r.controller().get();
                StringJoiner nodes = new StringJoiner(",", "[", "]");
                for (Node n : r.nodes().get()) nodes.add("[" + n.id() + "," + q(n.host()) + "," + n.port() + "]");
                return "{\"clusterId\":" + q(r.clusterId().get()) + ",\"controller\":"
                       + (controller == null ? "null" : String.valueOf(controller.id())) + ",\"nodes\":" + nodes + "}";
            }
            case "describe-log-dirs": {
                List<Integer> brokers = new ArrayList<>();
                for (Node n : admin.describeCluster().nodes().get()) brokers.add(n.id());
                Map<Integer, Map<String, LogDirDescription>> all = admin.describeLogDirs(brokers).allDescriptions().get();
                StringJoiner j = new StringJoiner(",", "{\"dirs\":{", "}}");
                for (Map.Entry<Integer, Map<String, LogDirDescription>> b : all.entrySet()) {
                    StringJoiner dirs = new StringJoiner(",", "{", "}");
                    for (Map.Entry<String, LogDirDescription> d : b.getValue().entrySet()) {
                        StringJoiner parts = new StringJoiner(",", "[", "]");
                        for (Map.Entry<TopicPartition, ReplicaInfo> r : d.getValue().replicaInfos().entrySet()) {
                            parts.add("[" + q(r.getKey().topic()) + "," + r.getKey().partition() + ","
                                      + r.getValue().size() + "]");
                        }
                        ApiException e = d.getValue().error();
                        dirs.add(q(d.getKey()) + ":{\"error\":" + q(e == null ? null : e.getClass().getSimpleName())
                                 + ",\"partitions\":" + parts + "}");
                    }
                    j.add(q(String.valueOf(b.getKey())) + ":" + dirs);
                }
                return j.toString();
            }
            case "list-offsets": {
                String topic = args[2];
                OffsetSpec spec = args[3].equals("earliest") ? OffsetSpec.earliest() : OffsetSpec.latest();
                Map<TopicPartition, OffsetSpec> wanted = new LinkedHashMap<>();
                for (TopicPartitionInfo p : admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions())
                    wanted.put(new TopicPartition(topic, p.partition()), spec);
                Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> got = admin.listOffsets(wanted).all().get();
                StringJoiner j = new StringJoiner(",", "{\"offsets\":[", "]}");
                for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : got.entrySet())
                    j.add("[" + e.getKey().partition() + "," + e.getValue().offset() + "]");
                return j.toString();
            }
            case "alter-group-offsets": {
                TopicPartition tp = new TopicPartition(args[3], Integer.parseInt(args[4]));
                AlterConsumerGroupOffsetsResult r = admin.alterConsumerGroupOffsets(
                        args[2], Map.of(tp, new OffsetAndMetadata(Long.parseLong(args[5]))));
                try {
                    r.partitionResult(tp).get();
                    return "{\"error_name\":null}";
                } catch (ExecutionException ex) {
                    Throwable cause = ex.getCause();
                    return "{\"error_name\":" + q(Errors.forException(cause).name()) + ",\"exception\":"
                           + q(cause.getClass().getSimpleName() + ": " + cause.getMessage()) + "}";
                }
            }
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }
}
