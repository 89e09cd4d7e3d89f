/*
 * The zoo's JVM members that kafka-clients alone cannot play (tests/integration/zoo.py), compiled with javac
 * against the zoo's classpath (kafka-streams at the broker's Kafka version).
 *
 *   ZooMembers streams BOOTSTRAP APPLICATION_ID INPUT OUTPUT CLIENT_ID
 *       a Kafka Streams application on the classic protocol (its `stream` assignor and its own user data):
 *       INPUT -> filter -> OUTPUT, two stream threads (two group members); prints "state RUNNING" and
 *       "assigned t-p,t-p" (its active tasks' partitions) whenever they change.
 *   ZooMembers share BOOTSTRAP GROUP TOPIC CLIENT_ID
 *       a KIP-932 share consumer of GROUP subscribed to TOPIC; prints "polled N" for every non-empty poll.
 *
 * Both leave their group and exit when their standard input closes (the JavaProcess protocol).
 */

import java.io.InputStream;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;

public final class ZooMembers {
    public static void main(String[] args) throws Exception {
        if (args.length == 6 && args[0].equals("streams")) {
            streams(args[1], args[2], args[3], args[4], args[5]);
        } else if (args.length == 5 && args[0].equals("share")) {
            share(args[1], args[2], args[3], args[4]);
        } else {
            System.err.println("usage: ZooMembers streams BOOTSTRAP APPLICATION_ID INPUT OUTPUT CLIENT_ID"
                               + " | ZooMembers share BOOTSTRAP GROUP TOPIC CLIENT_ID");
            System.exit(2);
        }
    }

    /** Block until standard input closes (the test's way of saying stop). */
    static void awaitStdinEof() {
        try {
            InputStream in = System.in;
            while (in.read() >= 0) { /* nothing to read; wait for EOF */ }
        } catch (Exception ignored) {
            // EOF or a closed pipe both mean stop
        }
    }

    static void streams(String bootstrap, String appId, String input, String output, String clientId)
            throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "classic");  // KIP-1071 streams groups are not this slice's
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/zoo-streams-" + appId);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        p.put("consumer.session.timeout.ms", "10000");
        p.put("consumer.heartbeat.interval.ms", "1000");
        p.put("consumer.auto.offset.reset", "earliest");
        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(input).filter((k, v) -> v != null).to(output);
        KafkaStreams app = new KafkaStreams(builder.build(), p);
        app.setStateListener((now, before) -> say("state " + now));
        CountDownLatch stop = new CountDownLatch(1);
        Thread stdin = new Thread(() -> {
            awaitStdinEof();
            stop.countDown();
        });
        stdin.setDaemon(true);
        stdin.start();
        app.start();
        String last = null;
        try {
            while (!stop.await(200, java.util.concurrent.TimeUnit.MILLISECONDS)) {
                Set<String> now = new TreeSet<>();
                for (ThreadMetadata thread : app.metadataForLocalThreads()) {
                    for (TaskMetadata task : thread.activeTasks()) {
                        for (TopicPartition tp : task.topicPartitions()) {
                            now.add(tp.topic() + "-" + tp.partition());
                        }
                    }
                }
                String line = String.join(",", now);
                if (app.state() == KafkaStreams.State.RUNNING && !line.equals(last)) {
                    say("assigned " + line);
                    last = line;
                }
            }
        } finally {
            app.close(Duration.ofSeconds(10));
        }
    }

    static void share(String bootstrap, String group, String topic, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("client.id", clientId);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(p);
        Thread stdin = new Thread(() -> {
            awaitStdinEof();
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
        try {
            consumer.subscribe(List.of(topic));
            say("subscribed " + topic);
            while (true) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(200));
                if (!got.isEmpty()) {
                    say("polled " + got.count());
                }
            }
        } catch (WakeupException stopped) {
            // asked to stop
        } finally {
            consumer.close(Duration.ofSeconds(10));
        }
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
