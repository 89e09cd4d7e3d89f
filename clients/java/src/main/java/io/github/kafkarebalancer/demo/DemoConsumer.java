/*
 * One consumer of `rebalancer demo --consumers java` (streaming/dev/demo/java_members.py starts them): a
 * KafkaConsumer in a classic group, either on Kafka's RangeAssignor (the baseline) or on the project's
 * RecommendationAssignor with RebalanceOnRecommendation checked after every poll; it processes at most RATE
 * records/s, so that a consumer given too much of a skewed topic falls behind.
 *
 *   DemoConsumer GROUP TOPIC RACK CLIENT_ID range|rebalancer RATE
 *
 * Standard input first carries the client settings in .properties form (bootstrap.servers, security settings
 * and rebalancer.trigger.topic), ended by a line "#end": secrets stay off the command line. The consumer then
 * runs until its standard input closes, and leaves the group.
 *
 * Standard output: "assigned t-p,t-p" whenever the assignment changes, and log lines as the log4j2
 * configuration given with -Dlog4j2.configurationFile formats them (the assignor's decisions among them).
 */
package io.github.kafkarebalancer.demo;

import io.github.kafkarebalancer.RebalanceOnRecommendation;
import io.github.kafkarebalancer.RecommendationAssignor;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class DemoConsumer {
    /** Catch-up allowance: time spent polling counts as processing time up to this much. */
    private static final long SLACK_NANOS = 50_000_000L;

    private DemoConsumer() {
    }

    /** Holds a worker to {@code rate} records/s over time (not per batch), so polling costs no throughput. */
    static final class Pace {
        private final int rate;
        private long due = System.nanoTime();

        Pace(int rate) {
            this.rate = rate;
        }

        void after(int records) throws InterruptedException {
            if (rate <= 0 || records == 0) {
                return;
            }
            due = Math.max(due, System.nanoTime() - SLACK_NANOS) + records * 1_000_000_000L / rate;
            long wait = due - System.nanoTime();
            if (wait > 0) {
                Thread.sleep(wait / 1_000_000L, (int) (wait % 1_000_000L));
            }
        }
    }

    /** The settings on standard input, up to the "#end" line. */
    static Properties readSettings(BufferedReader in) throws Exception {
        StringBuilder text = new StringBuilder();
        for (String line = in.readLine(); line != null && !line.equals("#end"); line = in.readLine()) {
            text.append(line).append('\n');
        }
        Properties p = new Properties();
        p.load(new StringReader(text.toString()));
        return p;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6 || !(args[4].equals("range") || args[4].equals("rebalancer"))) {
            System.err.println("usage: DemoConsumer GROUP TOPIC RACK CLIENT_ID range|rebalancer RATE "
                               + "(client settings on stdin, ended by #end)");
            System.exit(2);
        }
        String clientId = args[3];
        boolean rebalancer = args[4].equals("rebalancer");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Properties p = readSettings(in);
        p.put("group.id", args[0]);
        p.put("group.protocol", "classic");
        p.put("client.rack", args[2]);
        p.put("client.id", clientId);
        p.put("partition.assignment.strategy",
              (rebalancer ? RecommendationAssignor.class : RangeAssignor.class).getName());
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        // small batches and frequent commits: the collector sees the lag of a slow worker as it is
        p.put("max.poll.records", "20");
        p.put("auto.commit.interval.ms", "1000");
        p.put("metadata.max.age.ms", "5000");
        p.put("session.timeout.ms", "10000");
        p.put("heartbeat.interval.ms", "1000");
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        RebalanceOnRecommendation rebalance = rebalancer ? new RebalanceOnRecommendation(consumer, clientId) : null;
        Thread stdin = new Thread(() -> {
            try {
                while (in.read() >= 0) {
                    // nothing more is sent: wait for the end of the input
                }
            } catch (Exception ignored) {
                // a broken pipe means stop as well
            }
            consumer.wakeup();
        }, "stdin");
        stdin.setDaemon(true);
        stdin.start();
        Pace pace = new Pace(Integer.parseInt(args[5]));
        String last = null;
        try {
            consumer.subscribe(List.of(args[1]));
            while (true) {
                pace.after(consumer.poll(Duration.ofMillis(200)).count());
                if (rebalance != null) {
                    rebalance.check();
                }
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
            // standard input closed: leave the group
        } finally {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(10)));
        }
    }
}
