/*
 * A group consumer on the reference Java client (kafka-clients) for the conformance harness.
 *
 * It subscribes with the client's default settings, overriding only what the harness passes,
 * and prints one JSON object per line on stdout (the line protocol in docs/CLIENTS.md):
 * started, assigned, revoked, record, committed, error, closed. Logging goes to stderr.
 *
 * Flags: --bootstrap H:P --group G --topic T [--topic T2] [--instance-id I] [--count N]
 *        [--commit explicit|auto|none] [--assignor range|roundrobin|sticky|cooperative-sticky]
 *        [--session-timeout-ms N] [--set key=value ...]
 *
 * SIGTERM runs a shutdown hook that wakes the poll loop up; the loop then commits what it
 * consumed (explicit mode), closes the consumer (LeaveGroup) and prints "closed"; exit code 0.
 */
import java.time.Duration;
import java.util.*;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

public class GroupConsumer {
    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String str(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String parts(Collection<TopicPartition> tps) {
        List<TopicPartition> sorted = new ArrayList<>(tps);
        sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        StringJoiner j = new StringJoiner(",", "[", "]");
        for (TopicPartition tp : sorted) j.add("[" + str(tp.topic()) + "," + tp.partition() + "]");
        return j.toString();
    }

    static String assignor(String name) {
        switch (name) {
            case "range": return RangeAssignor.class.getName();
            case "roundrobin": return RoundRobinAssignor.class.getName();
            case "sticky": return StickyAssignor.class.getName();
            case "cooperative-sticky": return CooperativeStickyAssignor.class.getName();
            default: return name;  // a class name
        }
    }

    /** The group's committed offset of each partition, or its beginning when it has none (see KAFKA-17674 above). */
    static void positionFrom(Consumer<String, String> consumer, Set<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(partitions);
        List<TopicPartition> none = new ArrayList<>();
        for (TopicPartition tp : partitions) {
            OffsetAndMetadata at = committed.get(tp);
            if (at == null) none.add(tp);
            else consumer.seek(tp, at.offset());
            System.err.println("GroupConsumer: positioned " + tp + " at " + (at == null ? "its beginning" : "committed " + at.offset()));
        }
        if (!none.isEmpty()) consumer.seekToBeginning(none);
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        List<String> topics = new ArrayList<>();
        long count = -1;
        String commit = "explicit";
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--bootstrap": props.put("bootstrap.servers", v); break;
                case "--group": props.put("group.id", v); break;
                case "--topic": topics.add(v); break;
                case "--instance-id": props.put("group.instance.id", v); break;
                case "--count": count = Long.parseLong(v); break;
                case "--commit": commit = v; break;
                case "--assignor": props.put("partition.assignment.strategy", assignor(v)); break;
                case "--session-timeout-ms": props.put("session.timeout.ms", v); break;
                case "--set": props.put(v.substring(0, v.indexOf('=')), v.substring(v.indexOf('=') + 1)); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        // kafka-clients 3.9.1's consumer-protocol consumer (AsyncKafkaConsumer) resets a partition assigned while the
        // committed offsets of partitions assigned just before are being fetched with auto.offset.reset, not from its
        // own committed offset: KAFKA-17674, fixed in 4.0 (OffsetsRequestManager resets only the partitions it asked
        // about). With "none" such a partition raises NoOffsetForPartitionException instead, and positionFrom below
        // does what the fixed client does. A partition with no committed offset starts at the beginning ("earliest").
        final boolean kip848 = "consumer".equalsIgnoreCase(props.getProperty("group.protocol", "classic"));
        props.put("auto.offset.reset", kip848 ? "none" : "earliest");
        props.put("enable.auto.commit", commit.equals("auto") ? "true" : "false");
        props.put("key.deserializer", StringDeserializer.class.getName());
        props.put("value.deserializer", StringDeserializer.class.getName());

        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);
        Set<TopicPartition> owned = new HashSet<>();
        CountDownLatch done = new CountDownLatch(1);
        final int[] status = {0};
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try { done.await(); } catch (InterruptedException ignored) { }
            Runtime.getRuntime().halt(status[0]);  // after a clean close: 0, not the JVM's 143 for SIGTERM
        }));
        final boolean explicit = commit.equals("explicit");
        Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
        Runnable commitPending = () -> {
            if (!explicit || pending.isEmpty()) return;
            consumer.commitSync(pending);
            StringJoiner j = new StringJoiner(",", "[", "]");
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : pending.entrySet())
                j.add("[" + str(e.getKey().topic()) + "," + e.getKey().partition() + "," + e.getValue().offset() + "]");
            emit("{\"event\":\"committed\",\"offsets\":" + j + "}");
            pending.clear();
        };
        try {
            consumer.subscribe(topics, new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    commitPending.run();  // eager protocol: commit before giving partitions away
                    owned.removeAll(tps);
                    emit("{\"event\":\"revoked\",\"partitions\":" + parts(tps) + ",\"assignment\":" + parts(owned) + ",\"lost\":false}");
                }
                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    pending.keySet().removeAll(tps);
                    owned.removeAll(tps);
                    emit("{\"event\":\"revoked\",\"partitions\":" + parts(tps) + ",\"assignment\":" + parts(owned) + ",\"lost\":true}");
                }
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    owned.addAll(tps);
                    emit("{\"event\":\"assigned\",\"partitions\":" + parts(tps) + ",\"assignment\":" + parts(owned) + "}");
                }
            });
            emit("{\"event\":\"started\",\"client\":\"java\"}");
            long seen = 0;
            while (count < 0 || seen < count) {
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (NoOffsetForPartitionException e) {
                    positionFrom(consumer, e.partitions());
                    continue;
                }
                for (ConsumerRecord<String, String> r : records) {
                    emit("{\"event\":\"record\",\"topic\":" + str(r.topic()) + ",\"partition\":" + r.partition()
                         + ",\"offset\":" + r.offset() + ",\"value\":" + str(r.value()) + "}");
                    pending.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    if (count >= 0 && ++seen >= count) break;
                }
                commitPending.run();
            }
        } catch (WakeupException e) {
            // SIGTERM: fall through to commit and close
        } catch (Exception e) {
            emit("{\"event\":\"error\",\"message\":" + str(e.toString()) + "}");
            status[0] = 1;
            throw e;
        } finally {
            try {
                commitPending.run();
            } catch (Exception e) {
                emit("{\"event\":\"error\",\"message\":" + str("final commit: " + e) + "}");
                status[0] = 1;
            }
            consumer.close();
            emit("{\"event\":\"closed\"}");
            done.countDown();
        }
    }
}
