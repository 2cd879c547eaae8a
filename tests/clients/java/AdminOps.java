import java.util.*;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * One admin operation of the Java Admin client (kafka-clients 3.9.1), printed as ONE JSON line on stdout
 * (tests/clients/admin.py runs it once per operation). Errors are reported, not thrown: {"error": "ClassName: msg"}.
 *
 *   java AdminOps BOOTSTRAP list
 *   java AdminOps BOOTSTRAP describe GROUP
 *   java AdminOps BOOTSTRAP offsets GROUP
 *   java AdminOps BOOTSTRAP delete-offsets GROUP TOPIC P[,P...]
 *   java AdminOps BOOTSTRAP delete-group GROUP
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
                          + q(g.state().map(Object::toString).orElse(null)) + "}");
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
                                + ",\"assignment\":" + tps(m.assignment().topicPartitions()) + "}");
                }
                return "{\"group\":" + q(d.groupId()) + ",\"state\":" + q(d.state().toString())
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
            default:
                throw new IllegalArgumentException("unknown op " + op);
        }
    }
}
