/*
 * One member of a group moving from the classic protocol to KIP-848 by a rolling restart
 * (tests/integration/test_migration.py): the same application code on either protocol, only its settings differ.
 *
 *   RollingMember BOOTSTRAP GROUP TOPIC RACK CLIENT_ID classic|consumer TRIGGER_TOPIC
 *
 * classic: partition.assignment.strategy=RecommendationAssignor (clients/java), RebalanceOnRecommendation after
 * every poll. consumer: group.protocol=consumer and group.remote.assignor=rebalancer (the broker's ServerAssignor);
 * the Kafka settings the new protocol refuses (partition.assignment.strategy, session.timeout.ms,
 * heartbeat.interval.ms) are left out, and RebalanceOnRecommendation stays in the code, where it does nothing.
 *
 * With -Drate=N it processes at most N records/s (20 per poll, offsets auto-committed every second). Prints
 * "assigned t-p,t-p" whenever its assignment changes, "generation N" whenever its generation (classic) or member
 * epoch (consumer) does, and "read t-p FIRST LAST" for each partition of each poll (the offsets it processed); the
 * assignor's log lines with tests/java/log4j2.properties. Stops, closing the consumer (which commits and leaves
 * the group), when its standard input closes.
 */

import io.github.kafkarebalancer.RebalanceOnRecommendation;
import io.github.kafkarebalancer.RecommendationAssignor;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class RollingMember {
    static Properties settings(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("client.rack", args[3]);
        p.put("client.id", args[4]);
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("metadata.max.age.ms", "5000");
        p.put("max.poll.records", "20");
        p.put("auto.commit.interval.ms", "1000");
        if (args[5].equals("classic")) {
            p.put("partition.assignment.strategy", RecommendationAssignor.class.getName());
            p.put("rebalancer.trigger.topic", args[6]);
            p.put("session.timeout.ms", "10000");
            p.put("heartbeat.interval.ms", "1000");
        } else {
            p.put("group.protocol", "consumer");
            p.put("group.remote.assignor", "rebalancer");
        }
        return p;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 7) {
            System.err.println("usage: RollingMember BOOTSTRAP GROUP TOPIC RACK CLIENT_ID classic|consumer TRIGGER_TOPIC");
            System.exit(2);
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings(args));
        RebalanceOnRecommendation rebalance = new RebalanceOnRecommendation(consumer, args[4]);
        GroupMember.stopOnEof(consumer);
        String last = null;
        int generation = -1;
        try {
            consumer.subscribe(List.of(args[2]));
            while (true) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                for (TopicPartition tp : records.partitions()) {
                    List<ConsumerRecord<byte[], byte[]>> got = records.records(tp);
                    System.out.println("read " + tp.topic() + "-" + tp.partition() + " " + got.get(0).offset() + " "
                                       + got.get(got.size() - 1).offset());
                }
                System.out.flush();
                GroupMember.pace(records.count());
                rebalance.check();
                String line = GroupMember.assigned(consumer);
                if (!line.equals(last)) {
                    System.out.println("assigned " + line);
                    last = line;
                }
                if (consumer.groupMetadata().generationId() != generation) {
                    generation = consumer.groupMetadata().generationId();
                    System.out.println("generation " + generation);
                }
                System.out.flush();
            }
        } catch (WakeupException stop) {
            // asked to stop
        } finally {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
        }
    }
}
