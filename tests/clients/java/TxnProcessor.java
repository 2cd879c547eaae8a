/*
 * A consume-transform-produce (exactly-once) loop on the reference Java client (kafka-clients) for the
 * transactions tests (tests/clients/test_transactions.py; the line protocol of tests/clients/txn_drivers.py).
 *
 * A group consumer (isolation.level=read_committed, no auto-commit) reads --input; a transactional producer
 * (transactional.id = --txn-id) writes, for each polled batch, one transaction: value "x" + input value to the
 * same partition number of --output, then sendOffsetsToTransaction(next offsets, consumer.groupMetadata()),
 * then commitTransaction -- or abortTransaction for every --abort-every-th transaction, after which the
 * consumer seeks back to the batch's first offsets so the records are processed again.
 * --batch N: at most N records per poll (max.poll.records), so per transaction.
 * --hold-at K: in the K-th transaction, after the records are sent (flushed) and before the offsets and the
 * commit, print "holding" and wait until the file --release-file exists (the test crashes the server then).
 *
 * ProducerFencedException (another instance with the same transactional.id): print "fenced", close, exit 0.
 * Any other failure of a transaction: print it (txn outcome "failed"), abort, seek back; if the producer is
 * unusable, make a new one with the same transactional.id and seek to the group's committed offsets.
 * SIGTERM: the loop ends between transactions, closes both clients, prints "closed", exit 0.
 */
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProcessor {
    static String bootstrap, group, input, output, txnId, releaseFile;
    static int abortEvery = 0, holdAt = 0, batch = 0;
    static Map<String, String> extra = new HashMap<>();
    static volatile boolean stopping = false;

    static synchronized void emit(String json) {
        System.out.println(json);
        System.out.flush();
    }

    static String str(String s) { return GroupConsumer.str(s); }

    static KafkaProducer<String, String> newProducer() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        emit("{\"event\":\"ready\"}");
        return producer;
    }

    static boolean fenced(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause())
            if (t instanceof ProducerFencedException) return true;
        return false;
    }

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--bootstrap": bootstrap = v; break;
                case "--group": group = v; break;
                case "--input": input = v; break;
                case "--output": output = v; break;
                case "--txn-id": txnId = v; break;
                case "--abort-every": abortEvery = Integer.parseInt(v); break;
                case "--hold-at": holdAt = Integer.parseInt(v); break;
                case "--release-file": releaseFile = v; break;
                case "--batch": batch = Integer.parseInt(v); break;
                case "--set": extra.put(v.substring(0, v.indexOf('=')), v.substring(v.indexOf('=') + 1)); break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("isolation.level", "read_committed");
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        if (batch > 0) c.put("max.poll.records", String.valueOf(batch));
        c.putAll(extra);
        KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stopping = true;
            consumer.wakeup();
            try { done.await(); } catch (InterruptedException ignored) { }
            Runtime.getRuntime().halt(0);
        }));
        emit("{\"event\":\"started\",\"client\":\"java\"}");
        KafkaProducer<String, String> producer = null;
        try {
            producer = newProducer();
            producer = loop(consumer, producer);
        } catch (WakeupException e) {
            // SIGTERM between transactions
        } catch (Exception e) {
            if (fenced(e)) emit("{\"event\":\"fenced\",\"message\":" + str(e.toString()) + "}");
            else emit("{\"event\":\"error\",\"message\":" + str(e.toString()) + "}");
        } finally {
            try { if (producer != null) producer.close(Duration.ofSeconds(5)); } catch (Exception ignored) { }
            try { consumer.close(); } catch (Exception ignored) { }
            emit("{\"event\":\"closed\"}");
            done.countDown();
        }
    }

    static KafkaProducer<String, String> loop(KafkaConsumer<String, String> consumer,
                                              KafkaProducer<String, String> producer) throws Exception {
        Set<TopicPartition> owned = new HashSet<>();
        consumer.subscribe(List.of(input), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                owned.removeAll(tps);
                emit("{\"event\":\"revoked\",\"partitions\":" + GroupConsumer.parts(tps) + ",\"assignment\":"
                     + GroupConsumer.parts(owned) + ",\"lost\":false}");
            }
            public void onPartitionsLost(Collection<TopicPartition> tps) {
                owned.removeAll(tps);
                emit("{\"event\":\"revoked\",\"partitions\":" + GroupConsumer.parts(tps) + ",\"assignment\":"
                     + GroupConsumer.parts(owned) + ",\"lost\":true}");
            }
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                owned.addAll(tps);
                emit("{\"event\":\"assigned\",\"partitions\":" + GroupConsumer.parts(tps) + ",\"assignment\":"
                     + GroupConsumer.parts(owned) + "}");
            }
        });
        int n = 0;
        while (!stopping) {
            ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
            if (records.isEmpty()) continue;
            n++;
            Map<TopicPartition, Long> first = new HashMap<>();
            Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
            StringJoiner seen = new StringJoiner(",", "[", "]");
            for (ConsumerRecord<String, String> r : records) {
                TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                first.putIfAbsent(tp, r.offset());
                next.put(tp, new OffsetAndMetadata(r.offset() + 1));
                seen.add("[" + r.partition() + "," + r.offset() + "," + str(r.value()) + "]");
            }
            StringJoiner offsets = new StringJoiner(",", "[", "]");
            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet())
                offsets.add("[" + str(e.getKey().topic()) + "," + e.getKey().partition() + "," + e.getValue().offset() + "]");
            boolean abort = abortEvery > 0 && n % abortEvery == 0;
            String what = "\"n\":" + n + ",\"records\":" + seen + ",\"offsets\":" + offsets;
            try {
                producer.beginTransaction();
                for (ConsumerRecord<String, String> r : records)
                    producer.send(new ProducerRecord<>(output, r.partition(), null, "x" + r.value()));
                if (n == holdAt) hold(producer, what);
                producer.sendOffsetsToTransaction(next, consumer.groupMetadata());
                if (abort) {
                    producer.flush();  // the aborted records are in the log (read_uncommitted sees them)
                    producer.abortTransaction();
                    first.forEach(consumer::seek);
                } else {
                    producer.commitTransaction();
                }
                emit("{\"event\":\"txn\",\"outcome\":\"" + (abort ? "abort" : "commit") + "\"," + what + "}");
            } catch (KafkaException e) {
                if (fenced(e)) throw e;
                emit("{\"event\":\"txn\",\"outcome\":\"failed\",\"error\":" + str(e.toString()) + "," + what + "}");
                try {
                    producer.abortTransaction();
                    first.forEach(consumer::seek);
                } catch (KafkaException again) {
                    if (fenced(again)) throw again;
                    producer.close(Duration.ZERO);
                    producer = newProducer();  // fences the old epoch; its open transaction is aborted
                    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(owned);
                    for (TopicPartition tp : owned) {
                        OffsetAndMetadata at = committed.get(tp);
                        if (at != null) consumer.seek(tp, at.offset());
                        else consumer.seekToBeginning(List.of(tp));
                    }
                }
            }
        }
        return producer;
    }

    static void hold(KafkaProducer<String, String> producer, String what) throws InterruptedException {
        producer.flush();
        emit("{\"event\":\"holding\"," + what + "}");
        while (!Files.exists(Paths.get(releaseFile))) Thread.sleep(50);
    }
}
