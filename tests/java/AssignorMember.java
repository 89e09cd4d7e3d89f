/*
 * A Java consumer of a classic group that uses the project's RecommendationAssignor and asks for a
 * rebalance with RebalanceOnRecommendation after every poll (tests/integration/test_java_assignor.py).
 * Compiled against clients/java's classes and the cached Kafka jars.
 *
 *   AssignorMember BOOTSTRAP GROUP TOPIC RACK CLIENT_ID TRIGGER_TOPIC
 *
 * With -Drate=N it processes at most N records/s, as GroupMember does.
 *
 * Prints "assigned t-p,t-p" whenever its assignment changes; the assignor's log lines (INFO and up, see
 * tests/java/log4j2.properties) go to stdout as well. Stops, closing the consumer, when stdin closes.
 */

import io.github.kafkarebalancer.RebalanceOnRecommendation;
import io.github.kafkarebalancer.RecommendationAssignor;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class AssignorMember {
    /** Records per second this consumer processes (-Drate=N); 0 = as fast as it polls. */
    static final int RATE = Integer.getInteger("rate", 0);

    /** Take as long over {@code records} as a worker at RATE records/s would. */
    static void pace(int records) throws InterruptedException {
        if (RATE > 0 && records > 0) {
            Thread.sleep(records * 1000L / RATE);
        }
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("client.rack", args[3]);
        p.put("client.id", args[4]);
        p.put("rebalancer.trigger.topic", args[5]);
        p.put("partition.assignment.strategy", RecommendationAssignor.class.getName());
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("metadata.max.age.ms", "5000");
        p.put("session.timeout.ms", "10000");
        p.put("heartbeat.interval.ms", "1000");
        if (RATE > 0) {  // a slow worker: few records per poll, offsets committed every second
            p.put("max.poll.records", "20");
            p.put("auto.commit.interval.ms", "1000");
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        RebalanceOnRecommendation rebalance = new RebalanceOnRecommendation(consumer, args[4]);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { /* wait for EOF */ }
            } catch (Exception ignored) {
                // a closed pipe means stop too
            }
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
        String last = null;
        try {
            consumer.subscribe(List.of(args[2]));
            while (true) {
                pace(consumer.poll(Duration.ofMillis(200)).count());
                rebalance.check();
                Set<String> now = new TreeSet<>();
                for (TopicPartition tp : consumer.assignment()) {
                    now.add(tp.topic() + "-" + tp.partition());
                }
                String line = String.join(",", now);
                if (!line.equals(last)) {
                    System.out.println("assigned " + line);
                    System.out.flush();
                    last = line;
                }
            }
        } catch (WakeupException stop) {
            // asked to stop
        } finally {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
        }
    }
}
