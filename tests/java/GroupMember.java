/*
 * A Java consumer for the integration tests, compiled with javac against the cached kafka-clients jar
 * (tests/integration/java_client.py), and a dump of Java's ConsumerProtocol encodings for unit tests.
 *
 *   GroupMember consume BOOTSTRAP GROUP TOPIC PROTOCOL RACK CLIENT_ID [INSTANCE_ID]
 *       joins GROUP (PROTOCOL: classic or consumer) with client.rack=RACK, subscribes to TOPIC and polls
 *       until its standard input closes; prints "assigned t-p,t-p" whenever its assignment changes.
 *       With -Drate=N it processes at most N records/s (a slow worker; offsets auto-committed every second);
 *       with -Dconfig=FILE the consumer settings in FILE (a properties file) are added, over these.
 *   GroupMember protocol
 *       prints one JSON object: hex of ConsumerProtocol subscriptions and assignments, versions 0-3, and of
 *       a ConsumerGroupDescribe response, versions 0-1, all as Java's kafka-clients writes them.
 */

import java.io.InputStream;
import java.io.Reader;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class GroupMember {
    /** Records per second this consumer processes (-Drate=N); 0 = as fast as it polls. */
    static final int RATE = Integer.getInteger("rate", 0);

    /** Take as long over {@code records} as a worker at RATE records/s would. */
    static void pace(int records) throws InterruptedException {
        if (RATE > 0 && records > 0) {
            Thread.sleep(records * 1000L / RATE);
        }
    }

    /** The test closes our standard input to stop us: wake the consumer's poll loop up then. */
    static void stopOnEof(KafkaConsumer<?, ?> consumer) {
        Thread stdin = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() >= 0) { /* nothing to read; wait for EOF */ }
            } catch (Exception ignored) {
                // EOF or a closed pipe both mean stop
            }
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
    }

    /** The consumer's assignment as the tests read it: "t-0,t-1", sorted. */
    static String assigned(KafkaConsumer<?, ?> consumer) {
        Set<String> now = new TreeSet<>();
        for (TopicPartition tp : consumer.assignment()) {
            now.add(tp.topic() + "-" + tp.partition());
        }
        return String.join(",", now);
    }

    public static void main(String[] args) throws Exception {
        if (args.length >= 1 && args[0].equals("protocol")) {
            protocol();
        } else if (args.length >= 7 && args[0].equals("consume")) {
            consume(args[1], args[2], args[3], args[4], args[5], args[6], args.length > 7 ? args[7] : null);
        } else {
            System.err.println("usage: GroupMember consume BOOTSTRAP GROUP TOPIC PROTOCOL RACK CLIENT_ID [INSTANCE_ID]"
                               + " | GroupMember protocol");
            System.exit(2);
        }
    }

    static void consume(String bootstrap, String group, String topic, String protocol, String rack,
                        String clientId, String instanceId) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", group);
        p.put("group.protocol", protocol);
        p.put("client.id", clientId);
        p.put("client.rack", rack);
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("metadata.max.age.ms", "5000");
        if (RATE > 0) {  // a slow worker: few records per poll, offsets committed every second
            p.put("max.poll.records", "20");
            p.put("auto.commit.interval.ms", "1000");
        }
        if (instanceId != null) {
            p.put("group.instance.id", instanceId);
        }
        if (protocol.equals("classic")) {
            p.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer.RangeAssignor");
            p.put("session.timeout.ms", "10000");
            p.put("heartbeat.interval.ms", "1000");
        }
        String extra = System.getProperty("config");
        if (extra != null) {  // a file, so that a secret among them never shows on a command line
            try (Reader in = Files.newBufferedReader(Path.of(extra))) {
                p.load(in);
            }
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        stopOnEof(consumer);
        String last = null;
        try {
            consumer.subscribe(List.of(topic));
            while (true) {
                pace(consumer.poll(Duration.ofMillis(200)).count());
                String line = assigned(consumer);
                if (!line.equals(last)) {
                    System.out.println("assigned " + line);
                    System.out.flush();
                    last = line;
                }
            }
        } catch (WakeupException stop) {
            // asked to stop
        } finally {
            consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(10)));
        }
    }

    static String hex(ByteBuffer buffer) {
        StringBuilder sb = new StringBuilder();
        ByteBuffer b = buffer.duplicate();
        while (b.hasRemaining()) {
            sb.append(String.format("%02x", b.get() & 0xff));
        }
        return sb.toString();
    }

    static ConsumerGroupDescribeResponseData.Assignment assignment(Uuid id, String topic, Integer... partitions) {
        return new ConsumerGroupDescribeResponseData.Assignment().setTopicPartitions(List.of(
            new ConsumerGroupDescribeResponseData.TopicPartitions().setTopicId(id).setTopicName(topic)
                .setPartitions(Arrays.asList(partitions))));
    }

    /** Two members (one with an instance id and a rack, one without) of a stable group, and a missing group. */
    static ConsumerGroupDescribeResponseData describeResponse() {
        Uuid orders = new Uuid(1234L, 5678L);
        ConsumerGroupDescribeResponseData.Member first = new ConsumerGroupDescribeResponseData.Member()
            .setMemberId("m-1").setInstanceId("i-1").setRackId("b").setMemberEpoch(12).setClientId("c-1")
            .setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("orders", "audit"))
            .setAssignment(assignment(orders, "orders", 2, 0)).setTargetAssignment(assignment(orders, "orders", 0))
            .setMemberType((byte) 1);
        ConsumerGroupDescribeResponseData.Member second = new ConsumerGroupDescribeResponseData.Member()
            .setMemberId("m-2").setMemberEpoch(11).setClientId("c-2").setClientHost("/127.0.0.2")
            .setSubscribedTopicNames(List.of("orders")).setSubscribedTopicRegex(null)
            .setAssignment(assignment(orders, "orders", 1))
            .setTargetAssignment(assignment(orders, "orders", 1, 2)).setMemberType((byte) 0);
        ConsumerGroupDescribeResponseData.DescribedGroup group = new ConsumerGroupDescribeResponseData.DescribedGroup()
            .setGroupId("orders-app").setGroupState("Reconciling").setGroupEpoch(12).setAssignmentEpoch(12)
            .setAssignorName("uniform").setMembers(List.of(first, second));
        ConsumerGroupDescribeResponseData.DescribedGroup missing = new ConsumerGroupDescribeResponseData.DescribedGroup()
            .setGroupId("gone").setErrorCode((short) 69).setErrorMessage("Group gone not found.");
        return new ConsumerGroupDescribeResponseData().setThrottleTimeMs(0).setGroups(List.of(group, missing));
    }

    static void protocol() {
        List<TopicPartition> owned = Arrays.asList(new TopicPartition("orders", 2), new TopicPartition("orders", 0),
                                                   new TopicPartition("audit", 1));
        ByteBuffer userData = ByteBuffer.wrap(new byte[] {0, (byte) 0xff, 'u', 'd'});
        Subscription sub = new Subscription(List.of("orders", "audit"), userData, owned, 7, java.util.Optional.of("rack-b"));
        Subscription bare = new Subscription(List.of("orders"), null, List.of(), -1, java.util.Optional.empty());
        Assignment assignment = new Assignment(owned, ByteBuffer.wrap(new byte[] {1, 2}));
        List<String> out = new ArrayList<>();
        for (short v = 0; v <= 3; v++) {
            out.add("\"subscription_v" + v + "\": \"" + hex(ConsumerProtocol.serializeSubscription(sub, v)) + "\"");
            out.add("\"bare_subscription_v" + v + "\": \"" + hex(ConsumerProtocol.serializeSubscription(bare, v)) + "\"");
            out.add("\"assignment_v" + v + "\": \"" + hex(ConsumerProtocol.serializeAssignment(assignment, v)) + "\"");
        }
        ConsumerGroupDescribeResponseData describe = describeResponse();
        for (short v = 0; v <= 1; v++) {
            out.add("\"consumer_group_describe_response_v" + v + "\": \""
                    + hex(MessageUtil.toByteBufferAccessor(describe, v).buffer()) + "\"");
        }
        ConsumerGroupDescribeRequestData request = new ConsumerGroupDescribeRequestData()
            .setGroupIds(List.of("orders-app", "gone")).setIncludeAuthorizedOperations(false);
        out.add("\"consumer_group_describe_request_v0\": \""
                + hex(MessageUtil.toByteBufferAccessor(request, (short) 0).buffer()) + "\"");
        System.out.println("{" + String.join(", ", out) + "}");
    }
}
