/*
 * A KIP-848 consumer (group.protocol=consumer) that asks the broker for a server-side assignor by name
 * (group.remote.assignor), for tests/integration/test_served.py. Like GroupMember consume: it says
 * each new assignment on stdout ("assigned t-0,t-3"), processes at most -Drate=N records/s (offsets
 * auto-committed every second) and stops, closing its consumer, when its standard input is closed.
 *
 *   RemoteAssignorMember BOOTSTRAP GROUP TOPIC RACK CLIENT_ID ASSIGNOR
 */
import java.io.InputStream;
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

public final class RemoteAssignorMember {
    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: RemoteAssignorMember BOOTSTRAP GROUP TOPIC RACK CLIENT_ID ASSIGNOR");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("group.protocol", "consumer");
        p.put("group.remote.assignor", args[5]);
        p.put("client.id", args[4]);
        p.put("client.rack", args[3]);
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("metadata.max.age.ms", "5000");
        p.put("max.poll.records", "20");
        p.put("auto.commit.interval.ms", "1000");
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        Thread stdin = new Thread(() -> {
            try {
                InputStream in = System.in;
                while (in.read() >= 0) { /* wait for EOF */ }
            } catch (Exception ignored) {
                // EOF or a closed pipe both mean stop
            }
            consumer.wakeup();
        });
        stdin.setDaemon(true);
        stdin.start();
        String last = null;
        try {
            consumer.subscribe(List.of(args[2]));
            while (true) {
                GroupMember.pace(consumer.poll(Duration.ofMillis(200)).count());
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
