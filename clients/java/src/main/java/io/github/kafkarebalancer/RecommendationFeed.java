/*
 * The latest recommendation of one group, read from the compacted trigger feed (key = group) by a
 * KafkaConsumer of its own that assign()s every partition of the feed: no group, no commits. One reader
 * per (bootstrap servers, feed topic, group) in a JVM, shared by the assignor and RebalanceOnRecommendation.
 */
package io.github.kafkarebalancer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class RecommendationFeed {
    /** Consumer setting naming the trigger feed topic. */
    public static final String TOPIC_CONFIG = "rebalancer.trigger.topic";
    public static final String DEFAULT_TOPIC = "rebalancer.triggers";

    private static final Logger LOG = LoggerFactory.getLogger(RecommendationFeed.class);
    private static final Map<String, RecommendationFeed> FEEDS = new ConcurrentHashMap<>();
    // connection and security settings the feed's own consumer takes over from the group's consumer
    private static final List<String> PREFIXES = List.of("bootstrap.servers", "security.protocol", "sasl.", "ssl.",
                                                         "client.dns.lookup");

    private final String group;
    private final String topic;
    private final AtomicReference<FitRule.Recommendation> latest = new AtomicReference<>();
    private final KafkaConsumer<String, String> consumer;
    private boolean readable = true;  // the reader thread's own

    private RecommendationFeed(Map<String, ?> consumerConfigs, String group, String topic) {
        this.group = group;
        this.topic = topic;
        Properties p = new Properties();
        consumerConfigs.forEach((k, v) -> {
            if (v != null && PREFIXES.stream().anyMatch(k::startsWith)) {
                p.put(k, v instanceof List<?> l ? String.join(",", l.stream().map(String::valueOf).toList()) : v);
            }
        });
        p.put("client.id", "rebalancer-feed-" + group);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("metadata.max.age.ms", "5000");
        consumer = new KafkaConsumer<>(p);
        Thread t = new Thread(this::run, "rebalancer-feed-" + group);
        t.setDaemon(true);
        t.start();
    }

    /** The shared reader of {@code group}'s recommendations for a consumer with {@code consumerConfigs}. */
    public static RecommendationFeed forGroup(Map<String, ?> consumerConfigs, String group) {
        Object topicSetting = consumerConfigs.get(TOPIC_CONFIG);
        String topic = topicSetting == null ? DEFAULT_TOPIC : topicSetting.toString();
        String key = consumerConfigs.get("bootstrap.servers") + "|" + topic + "|" + group;
        return FEEDS.computeIfAbsent(key, k -> new RecommendationFeed(consumerConfigs, group, topic));
    }

    /** The highest-version valid recommendation read so far (the latest decision at that version), whatever
     *  its status (FitRule.decide acts only on an actionable one), or null. */
    public FitRule.Recommendation latest() {
        return latest.get();
    }

    private void run() {
        try {
            List<TopicPartition> assigned = awaitPartitions();
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            while (true) {
                try {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                        if (group.equals(r.key()) && r.value() != null) {
                            offer(r.value(), r.partition(), r.offset());
                        }
                    }
                    readable();
                } catch (RetriableException e) {
                    retryLater(e);  // a broker away or slow: the reader waits, it never gives up
                }
            }
        } catch (WakeupException | InterruptedException stop) {
            // the JVM is going away
        } catch (RuntimeException e) {
            LOG.warn("group {}: the recommendation feed {} stopped: {}", group, topic, e.toString());
        } finally {
            consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(5)));
        }
    }

    /** The feed's partitions, once its topic exists and its metadata can be read. */
    private List<TopicPartition> awaitPartitions() throws InterruptedException {
        while (true) {
            List<TopicPartition> assigned = new ArrayList<>();
            try {
                List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(10));
                for (PartitionInfo info : infos == null ? List.<PartitionInfo>of() : infos) {
                    assigned.add(new TopicPartition(topic, info.partition()));
                }
            } catch (RetriableException e) {  // e.g. TimeoutException fetching metadata of a busy cluster
                retryLater(e);
                continue;
            }
            if (!assigned.isEmpty()) {
                readable();
                return assigned;
            }
            Thread.sleep(1000);  // the feed topic does not exist yet
        }
    }

    private void retryLater(RetriableException e) throws InterruptedException {
        if (readable) {  // once per outage; meanwhile the assignor keeps the latest recommendation read
            LOG.warn("group {}: the recommendation feed {} is not readable now ({}); retrying every second", group,
                     topic, e.toString());
            readable = false;
        }
        Thread.sleep(1000);
    }

    private void readable() {
        if (!readable) {
            readable = true;
            LOG.info("group {}: the recommendation feed {} is readable again", group, topic);
        }
    }

    /** Keep {@code value} when it is a valid recommendation newer than the latest; log a bad one once. */
    void offer(String value, int partition, long offset) {
        try {
            FitRule.Recommendation rec = FitRule.parse(value);
            if (!group.equals(rec.group())) {
                LOG.warn("group {}: feed record {}-{}@{} is keyed for it but holds group {}; skipped", group, topic,
                         partition, offset, rec.group());
                return;
            }
            FitRule.Recommendation now = latest.get();
            if (rec.replaces(now)) {
                latest.set(rec);
                LOG.info("group {}: recommendation v{} ({}) read from {}", group, rec.version(), rec.status(), topic);
            }
        } catch (FitRule.DoesNotFit e) {
            LOG.warn("group {}: feed record {}-{}@{} skipped: {}", group, topic, partition, offset, e.getMessage());
        }
    }
}
