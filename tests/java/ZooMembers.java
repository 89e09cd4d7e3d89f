/*
 * The zoo's JVM members that kafka-python and librdkafka cannot play (tests/integration/zoo.py), compiled with
 * javac against the zoo's classpath (kafka-streams and kafka-clients at the broker's Kafka version).
 *
 *   ZooMembers streams BOOTSTRAP APPLICATION_ID INPUT OUTPUT CLIENT_ID [KIP1071_APPLICATION_ID]
 *       a Kafka Streams application on the classic protocol (its `stream` assignor and its own user data):
 *       INPUT -> filter -> OUTPUT, two stream threads (two group members); prints "state RUNNING" and
 *       "assigned t-p,t-p" (its active tasks' partitions) whenever they change. A line "add-thread" on its
 *       input adds a stream thread (a third member: "added THREAD"). With KIP1071_APPLICATION_ID, a second
 *       application of the same topology on the streams rebalance protocol (KIP-1071, a group of type
 *       streams, one thread) runs beside it and prints "kip1071 state S".
 *   ZooMembers share BOOTSTRAP GROUP TOPIC CLIENT_ID
 *       a KIP-932 share consumer of GROUP subscribed to TOPIC; prints "polled N" for every non-empty poll.
 *   ZooMembers consumers BOOTSTRAP (GROUP PROTOCOL MEMBERS SUBSCRIPTION OPTIONS)...
 *       MEMBERS KafkaConsumers of GROUP per quintuple, one thread each, all in this JVM: PROTOCOL classic or
 *       consumer; SUBSCRIPTION "topic:NAME" or "regex:RX" (classic: a java.util.regex Pattern the client
 *       matches itself; consumer: a SubscriptionPattern the broker matches, KIP-848); OPTIONS "-" or a
 *       comma-separated list of "static" (member i has group.instance.id GROUP-static-i) and "manual-commit"
 *       (commitSync after each poll that returned records, instead of auto-commit). Member i has client.id
 *       GROUP-i and client.rack a, b or c (i mod 3). Small fetch buffers and no JMX reporter, so hundreds fit
 *       in one small heap. Prints "held CLIENT_ID t-p,t-p" whenever a member's assignment changes.
 *
 * Each leaves its groups and exits when its standard input closes (the JavaProcess protocol).
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.regex.Pattern;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
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
        if ((args.length == 6 || args.length == 7) && args[0].equals("streams")) {
            streams(args[1], args[2], args[3], args[4], args[5], args.length == 7 ? args[6] : null);
        } else if (args.length == 5 && args[0].equals("share")) {
            share(args[1], args[2], args[3], args[4]);
        } else if (args.length >= 7 && (args.length - 2) % 5 == 0 && args[0].equals("consumers")) {
            consumers(args);
        } else {
            System.err.println("usage: ZooMembers streams BOOTSTRAP APPLICATION_ID INPUT OUTPUT CLIENT_ID [KIP1071_ID]"
                               + " | ZooMembers share BOOTSTRAP GROUP TOPIC CLIENT_ID"
                               + " | ZooMembers consumers BOOTSTRAP (GROUP PROTOCOL MEMBERS SUBSCRIPTION STATIC)...");
            System.exit(2);
        }
    }

    /** Hand each line of standard input to {@code command}; return when it closes (the test's way of saying stop). */
    static void readStdin(Consumer<String> command) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                command.accept(line.trim());
            }
        } catch (Exception ignored) {
            // EOF or a closed pipe both mean stop
        }
    }

    static Thread daemon(Runnable body) {
        Thread t = new Thread(body);
        t.setDaemon(true);
        t.start();
        return t;
    }

    static KafkaStreams streamsApp(String bootstrap, String appId, String input, String output, String clientId,
                                   String protocol, int threads) {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, clientId);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        p.put(StreamsConfig.STATE_DIR_CONFIG, System.getProperty("java.io.tmpdir") + "/zoo-streams-" + appId);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.ByteArray().getClass());
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
        if (protocol.equals("classic")) {
            p.put("consumer.session.timeout.ms", "10000");
            p.put("consumer.heartbeat.interval.ms", "1000");
        }
        p.put("consumer.auto.offset.reset", "earliest");
        p.put("metric.reporters", "");
        StreamsBuilder builder = new StreamsBuilder();
        builder.<byte[], byte[]>stream(input).filter((k, v) -> v != null).to(output);
        return new KafkaStreams(builder.build(), p);
    }

    static void streams(String bootstrap, String appId, String input, String output, String clientId,
                        String kip1071AppId) throws Exception {
        KafkaStreams app = streamsApp(bootstrap, appId, input, output, clientId, "classic", 2);
        app.setStateListener((now, before) -> say("state " + now));
        KafkaStreams kip1071 = kip1071AppId == null ? null
            : streamsApp(bootstrap, kip1071AppId, input, output, clientId + "-kip1071", "streams", 1);
        if (kip1071 != null) {
            kip1071.setStateListener((now, before) -> say("kip1071 state " + now));
        }
        CountDownLatch stop = new CountDownLatch(1);
        daemon(() -> {
            readStdin(line -> {
                if (line.equals("add-thread")) {
                    say("added " + app.addStreamThread().orElse("none"));
                }
            });
            stop.countDown();
        });
        app.start();
        if (kip1071 != null) {
            kip1071.start();
        }
        String last = null;
        try {
            while (!stop.await(200, TimeUnit.MILLISECONDS)) {
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
            if (kip1071 != null) {
                kip1071.close(Duration.ofSeconds(10));
            }
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
        daemon(() -> {
            readStdin(line -> { });
            consumer.wakeup();
        });
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

    /** One member of the consumers mode: its settings and how it subscribes. */
    record Spec(String group, String protocol, int index, String subscription, boolean isStatic,
                boolean manualCommit) {
        String clientId() {
            return group + "-" + index;
        }

        Properties properties(String bootstrap) {
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("group.id", group);
            p.put("group.protocol", protocol);
            p.put("client.id", clientId());
            p.put("client.rack", String.valueOf("abc".charAt(index % 3)));
            p.put("auto.offset.reset", "earliest");
            p.put("auto.commit.interval.ms", "1000");
            p.put("enable.auto.commit", String.valueOf(!manualCommit));
            p.put("key.deserializer", ByteArrayDeserializer.class.getName());
            p.put("value.deserializer", ByteArrayDeserializer.class.getName());
            p.put("metadata.max.age.ms", "5000");  // a regex member sees new topics, every member a deleted one
            p.put("fetch.max.bytes", "65536");
            p.put("max.partition.fetch.bytes", "16384");
            p.put("receive.buffer.bytes", "16384");
            p.put("send.buffer.bytes", "16384");
            p.put("metric.reporters", "");
            if (isStatic) {
                p.put("group.instance.id", group + "-static-" + index);
            }
            if (protocol.equals("classic")) {
                p.put("session.timeout.ms", "10000");
                p.put("heartbeat.interval.ms", "1000");
            }
            return p;
        }

        void subscribe(KafkaConsumer<byte[], byte[]> consumer) {
            String[] kind = subscription.split(":", 2);
            if (kind[0].equals("topic")) {
                consumer.subscribe(List.of(kind[1]));
            } else if (protocol.equals("classic")) {
                consumer.subscribe(Pattern.compile(kind[1]));
            } else {
                consumer.subscribe(new SubscriptionPattern(kind[1]));
            }
        }
    }

    static void consumers(String[] args) throws Exception {
        String bootstrap = args[1];
        List<Spec> specs = new ArrayList<>();
        for (int i = 2; i < args.length; i += 5) {
            for (int m = 0; m < Integer.parseInt(args[i + 2]); m++) {
                List<String> options = List.of(args[i + 4].split(","));
                specs.add(new Spec(args[i], args[i + 1], m, args[i + 3], options.contains("static"),
                                   options.contains("manual-commit")));
            }
        }
        AtomicBoolean stopping = new AtomicBoolean(false);
        List<KafkaConsumer<byte[], byte[]>> made = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (Spec spec : specs) {
            Thread t = new Thread(() -> member(bootstrap, spec, stopping, made), "zoo-" + spec.clientId());
            t.start();
            threads.add(t);
        }
        readStdin(line -> { });
        stopping.set(true);
        synchronized (made) {
            made.forEach(KafkaConsumer::wakeup);
        }
        for (Thread t : threads) {
            t.join(30_000);
        }
    }

    static void member(String bootstrap, Spec spec, AtomicBoolean stopping,
                       List<KafkaConsumer<byte[], byte[]>> made) {
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(spec.properties(bootstrap));
        synchronized (made) {
            made.add(consumer);
        }
        String last = null;
        try {
            spec.subscribe(consumer);
            while (!stopping.get()) {
                if (!consumer.poll(Duration.ofMillis(500)).isEmpty() && spec.manualCommit()) {
                    consumer.commitSync();
                }
                Set<String> now = new TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) {
                    now.add(tp.topic() + "-" + tp.partition());
                }
                String line = String.join(",", now);
                if (!line.equals(last)) {
                    say("held " + spec.clientId() + " " + line);
                    last = line;
                }
            }
        } catch (WakeupException stop) {
            // asked to stop
        } finally {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(5)));
        }
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
