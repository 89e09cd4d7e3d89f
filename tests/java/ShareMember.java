import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.message.DescribeShareGroupOffsetsRequestData;
import org.apache.kafka.common.message.DescribeShareGroupOffsetsResponseData;
import org.apache.kafka.common.message.ShareGroupDescribeRequestData;
import org.apache.kafka.common.message.ShareGroupDescribeResponseData;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * A KIP-932 share consumer for the tests, which leaves a backlog the broker counts as share-partition lag:
 *
 *   ShareMember BOOTSTRAP GROUP TOPIC CLIENT_ID BUDGET
 *
 * joins share group GROUP subscribed to TOPIC and acknowledges (ACCEPT) the first BUDGET records the broker
 * hands it, releasing any others of the same delivery back to the group (explicit acknowledgement), then stops
 * fetching; it stays a member (its heartbeats go on) until its standard input closes, then leaves. Prints
 * "subscribed TOPIC", "accepted N" after each committed delivery and, once the budget is spent, "done N" and
 * what it accepted of each partition ("done 25 orders-0:12,orders-2:13").
 *
 *   ShareMember protocol
 *
 * prints one JSON object: hex of ShareGroupDescribe (v1) and DescribeShareGroupOffsets (v0, v1) requests and
 * responses as Java's kafka-clients writes them (tests/data/share_group_protocol.json; the unit tests decode it).
 */
public final class ShareMember {
    public static void main(String[] args) throws InterruptedException {
        if (args.length == 1 && args[0].equals("protocol")) {
            protocol();
            return;
        }
        if (args.length != 5) {
            System.err.println("usage: ShareMember BOOTSTRAP GROUP TOPIC CLIENT_ID BUDGET");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("client.id", args[3]);
        p.put("share.acknowledgement.mode", "explicit");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        int budget = Integer.parseInt(args[4]);
        KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(p);
        Thread stdin = new Thread(() -> {
            awaitStdinEof();
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
        try {
            consumer.subscribe(List.of(args[2]));
            say("subscribed " + args[2]);
            int accepted = 0;
            Map<String, Integer> byPartition = new TreeMap<>();
            while (accepted < budget) {
                ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : got) {
                    boolean take = accepted < budget;
                    consumer.acknowledge(r, take ? AcknowledgeType.ACCEPT : AcknowledgeType.RELEASE);
                    if (take) {
                        accepted++;
                        byPartition.merge(r.topic() + "-" + r.partition(), 1, Integer::sum);
                    }
                }
                if (!got.isEmpty()) {
                    consumer.commitSync();
                    say("accepted " + accepted);
                }
            }
            List<String> cells = new ArrayList<>();
            byPartition.forEach((tp, n) -> cells.add(tp + ":" + n));
            say("done " + accepted + " " + String.join(",", cells));
            stdin.join();
        } catch (WakeupException stopped) {
            // asked to stop
        } finally {
            consumer.close(Duration.ofSeconds(10));
        }
    }

    static String hex(ApiMessage message, short version) {
        ByteBuffer b = MessageUtil.toByteBufferAccessor(message, version).buffer();
        StringBuilder sb = new StringBuilder();
        while (b.hasRemaining()) {
            sb.append(String.format("%02x", b.get() & 0xff));
        }
        return sb.toString();
    }

    /** A stable share group of two members given the same partition (one with a rack), and a missing group. */
    static ShareGroupDescribeResponseData describeResponse() {
        Uuid orders = new Uuid(1234L, 5678L);
        ShareGroupDescribeResponseData.Member first = new ShareGroupDescribeResponseData.Member()
            .setMemberId("s-1").setRackId("b").setMemberEpoch(4).setClientId("c-1").setClientHost("/127.0.0.1")
            .setSubscribedTopicNames(List.of("orders")).setAssignment(assignment(orders, 2, 0));
        ShareGroupDescribeResponseData.Member second = new ShareGroupDescribeResponseData.Member()
            .setMemberId("s-2").setMemberEpoch(5).setClientId("c-2").setClientHost("/127.0.0.2")
            .setSubscribedTopicNames(List.of("orders")).setAssignment(assignment(orders, 1, 2));
        ShareGroupDescribeResponseData.DescribedGroup group = new ShareGroupDescribeResponseData.DescribedGroup()
            .setGroupId("queue").setGroupState("Stable").setGroupEpoch(5).setAssignmentEpoch(5)
            .setAssignorName("simple").setMembers(List.of(first, second));
        ShareGroupDescribeResponseData.DescribedGroup missing = new ShareGroupDescribeResponseData.DescribedGroup()
            .setGroupId("gone").setErrorCode((short) 69).setErrorMessage("Group gone not found.");
        return new ShareGroupDescribeResponseData().setThrottleTimeMs(0).setGroups(List.of(group, missing));
    }

    static ShareGroupDescribeResponseData.Assignment assignment(Uuid id, Integer... partitions) {
        return new ShareGroupDescribeResponseData.Assignment().setTopicPartitions(List.of(
            new ShareGroupDescribeResponseData.TopicPartitions().setTopicId(id).setTopicName("orders")
                .setPartitions(Arrays.asList(partitions))));
    }

    /** Partition 0 with a lag, 1 whose lag the broker does not know (-1), 2 with an error; a missing group. */
    static DescribeShareGroupOffsetsResponseData offsetsResponse() {
        List<DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition> partitions = List.of(
            new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition()
                .setPartitionIndex(0).setStartOffset(100).setLeaderEpoch(3).setLag(250),
            new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition()
                .setPartitionIndex(1).setStartOffset(-1).setLeaderEpoch(-1).setLag(-1),
            new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition()
                .setPartitionIndex(2).setErrorCode((short) 6).setErrorMessage("not the leader"));
        DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup group =
            new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup().setGroupId("queue")
                .setTopics(List.of(new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseTopic()
                    .setTopicName("orders").setTopicId(new Uuid(1234L, 5678L)).setPartitions(partitions)));
        DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup missing =
            new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup().setGroupId("gone")
                .setErrorCode((short) 69).setErrorMessage("Group gone not found.");
        return new DescribeShareGroupOffsetsResponseData().setThrottleTimeMs(0).setGroups(List.of(group, missing));
    }

    static void protocol() {
        List<String> out = new ArrayList<>();
        ShareGroupDescribeRequestData describe = new ShareGroupDescribeRequestData()
            .setGroupIds(List.of("queue", "gone")).setIncludeAuthorizedOperations(false);
        out.add("\"share_group_describe_request_v1\": \"" + hex(describe, (short) 1) + "\"");
        out.add("\"share_group_describe_response_v1\": \"" + hex(describeResponse(), (short) 1) + "\"");
        DescribeShareGroupOffsetsRequestData offsets = new DescribeShareGroupOffsetsRequestData().setGroups(List.of(
            new DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestGroup().setGroupId("queue")
                .setTopics(null)));
        for (short v = 0; v <= 1; v++) {
            out.add("\"describe_share_group_offsets_request_v" + v + "\": \"" + hex(offsets, v) + "\"");
            out.add("\"describe_share_group_offsets_response_v" + v + "\": \"" + hex(offsetsResponse(), v) + "\"");
        }
        System.out.println("{" + String.join(", ", out) + "}");
    }

    static void awaitStdinEof() {
        try {
            while (System.in.read() >= 0) {
                // wait for EOF
            }
        } catch (IOException e) {
            // treat as EOF
        }
    }

    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
