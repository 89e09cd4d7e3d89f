/*
 * What ServerAssignor needs beyond the coordinator's GroupSpec, kept by one background thread per broker JVM:
 * the latest recommendation of every group (the compacted trigger feed, read by a KafkaConsumer that assign()s
 * every partition: no group, no commits), which group and client id each current member has
 * (ConsumerGroupDescribe through an Admin client) and topic names by id. The coordinator thread only reads
 * these maps.
 *
 * It also makes a new recommendation take effect. The coordinator computes a target assignment only when the
 * group epoch moves (docs/server-assignor.md), so when a group on this assignor, coordinated by this broker,
 * has a recommendation that names its current members and its target assignment differs, the thread joins the
 * group with a short-lived static member (group.instance.id "rebalancer-nudge-...", no partitions: the
 * assignor gives it none) and leaves at once: two epoch bumps, two target assignments, both the recommendation.
 *
 * Broker settings it reads: rebalancer.bootstrap.servers (default: the broker's advertised listener for
 * inter-broker traffic), rebalancer.client.* (client settings such as security.protocol or sasl.jaas.config,
 * without the prefix), rebalancer.trigger.topic (default rebalancer.triggers), node.id.
 */
package io.github.kafkarebalancer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class ServerFeed {
    public static final String NUDGE_PREFIX = "rebalancer-nudge-";
    static final String CLIENT_PREFIX = "rebalancer.client.";

    private static final Logger LOG = LoggerFactory.getLogger(ServerFeed.class);
    private static final Map<String, ServerFeed> FEEDS = new ConcurrentHashMap<>();
    private static final long REFRESH_MS = 1000;
    private static final long RENUDGE_MS = 30_000;

    private final Properties client;
    private final String topic;
    private final int nodeId;
    private final Map<String, FitRule.Recommendation> latest = new ConcurrentHashMap<>();
    private final Map<String, String> groupOfMember = new ConcurrentHashMap<>();
    private final Map<String, String> clientOfMember = new ConcurrentHashMap<>();
    private final Map<String, Set<String>> membersOfGroup = new ConcurrentHashMap<>();
    private final Map<Uuid, String> topicNames = new ConcurrentHashMap<>();
    private final Map<String, Long> nudgedVersion = new HashMap<>();
    private final Map<String, Long> nudgedAt = new HashMap<>();
    private final Map<String, Long> reportedVersion = new HashMap<>();
    private volatile boolean reachable = true;

    private ServerFeed(Properties client, String topic, int nodeId) {
        this.client = client;
        this.topic = topic;
        this.nodeId = nodeId;
        Thread t = new Thread(this::run, "rebalancer-server-feed");
        t.setDaemon(true);
        t.start();
    }

    /** The feed of this broker JVM (one per bootstrap and feed topic), started on first use. */
    static ServerFeed forBroker(Map<String, ?> configs) {
        Properties client = clientProperties(configs);
        Object t = configs.get(RecommendationFeed.TOPIC_CONFIG);
        String topic = t == null ? RecommendationFeed.DEFAULT_TOPIC : t.toString();
        Object node = configs.get("node.id") != null ? configs.get("node.id") : configs.get("broker.id");
        int nodeId = node == null ? -1 : Integer.parseInt(node.toString().trim());
        String key = client.getProperty("bootstrap.servers") + "|" + topic;
        return FEEDS.computeIfAbsent(key, k -> new ServerFeed(client, topic, nodeId));
    }

    /** Connection settings for the feed's clients, from the broker's configuration. */
    static Properties clientProperties(Map<String, ?> configs) {
        Properties p = new Properties();
        configs.forEach((k, v) -> {
            if (v != null && k.startsWith(CLIENT_PREFIX)) {
                p.put(k.substring(CLIENT_PREFIX.length()), v.toString());
            }
        });
        Object bootstrap = configs.get("rebalancer.bootstrap.servers");
        p.put("bootstrap.servers", bootstrap != null ? bootstrap.toString() : ownListener(configs));
        return p;
    }

    /** host:port of the broker's inter-broker listener (advertised if set, else as it listens). */
    static String ownListener(Map<String, ?> configs) {
        Object name = configs.get("inter.broker.listener.name");
        for (String key : List.of("advertised.listeners", "listeners")) {
            Object listeners = configs.get(key);
            if (listeners == null) {
                continue;
            }
            String first = null;
            for (String l : listeners.toString().split(",")) {
                String[] parts = l.trim().split("://", 2);
                if (parts.length == 2 && !parts[0].equals("CONTROLLER")) {
                    first = first == null ? parts[1] : first;
                    if (name != null && parts[0].equals(name.toString())) {
                        return parts[1];
                    }
                }
            }
            if (first != null) {
                return first;
            }
        }
        return "localhost:9092";
    }

    /** What assign() may use for the group of {@code spec}'s members; null when no recommendation names it. */
    ServerAssignor.View view(GroupSpec spec) {
        Set<String> groups = new TreeSet<>();
        for (String id : ServerAssignor.nonNudgeMembers(spec)) {
            String g = groupOfMember.get(id);
            if (g != null) {
                groups.add(g);
            }
        }
        if (groups.size() != 1) {
            if (groups.size() > 1) {
                LOG.warn("members of one group are known in groups {}; using uniform", groups);
            }
            return null;
        }
        String group = groups.iterator().next();
        return new ServerAssignor.View(group, latest.get(group), Map.copyOf(clientOfMember), topicNames::get);
    }

    // -- the background thread ---------------------------------------------------------------------

    private void run() {
        Properties p = new Properties();
        p.putAll(client);
        p.put("client.id", "rebalancer-server-feed");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        Properties a = new Properties();
        a.putAll(client);
        a.put("client.id", "rebalancer-server-admin");
        a.put("default.api.timeout.ms", "10000");
        a.put("request.timeout.ms", "5000");
        long lastRefresh = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p); Admin admin = Admin.create(a)) {
            List<TopicPartition> assigned = new ArrayList<>();
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    if (assigned.isEmpty()) {
                        for (PartitionInfo info : consumer.partitionsFor(topic, Duration.ofSeconds(5))) {
                            assigned.add(new TopicPartition(topic, info.partition()));
                        }
                        if (assigned.isEmpty()) {
                            Thread.sleep(1000);  // the feed topic does not exist yet
                            continue;
                        }
                        consumer.assign(assigned);
                        consumer.seekToBeginning(assigned);
                    }
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        if (r.key() != null && r.value() != null) {
                            offer(r.key(), r.value(), r.partition(), r.offset());
                        }
                    }
                    if (System.currentTimeMillis() - lastRefresh >= REFRESH_MS) {
                        lastRefresh = System.currentTimeMillis();
                        refresh(admin);
                    }
                    if (!reachable) {
                        reachable = true;
                        LOG.info("the recommendation feed {} is reachable again", topic);
                    }
                } catch (InterruptedException stop) {
                    return;
                } catch (RuntimeException e) {
                    if (reachable) {  // once per outage; assign() meanwhile falls back to uniform
                        LOG.warn("the recommendation feed {} is unreachable ({}); groups without a known "
                                 + "recommendation get uniform", topic, e.toString());
                        reachable = false;
                    }
                    Thread.sleep(2000);
                }
            }
        } catch (InterruptedException stop) {
            // the broker is going away
        } catch (RuntimeException e) {
            LOG.error("the rebalancer server feed stopped: {}", e.toString());
        }
    }

    /** Keep {@code value} when it is a valid recommendation of group {@code key} newer than the latest. */
    void offer(String key, String value, int partition, long offset) {
        try {
            FitRule.Recommendation rec = FitRule.parse(value);
            if (!key.equals(rec.group())) {
                LOG.warn("feed record {}-{}@{} is keyed {} but holds group {}; skipped", topic, partition, offset, key,
                         rec.group());
                return;
            }
            FitRule.Recommendation now = latest.get(key);
            if (rec.replaces(now)) {
                latest.put(key, rec);
                for (FitRule.Entry e : rec.entries()) {
                    if (e.memberId() != null) {
                        groupOfMember.putIfAbsent(e.memberId(), key);
                    }
                }
                LOG.info("group {}: recommendation v{} read from {}", key, rec.version(), topic);
            }
        } catch (FitRule.DoesNotFit e) {
            LOG.warn("feed record {}-{}@{} skipped: {}", topic, partition, offset, e.getMessage());
        }
    }

    private static <T> T get(KafkaFuture<T> f) {
        try {
            return f.get(10, TimeUnit.SECONDS);
        } catch (Exception e) {
            return null;  // a group that does not exist (yet), a topic deleted: nothing to learn now
        }
    }

    /** Learn members and topic ids of the recommended groups; nudge those whose target is not the latest. */
    private void refresh(Admin admin) throws InterruptedException {
        if (latest.isEmpty()) {
            return;
        }
        Map<String, KafkaFuture<ConsumerGroupDescription>> described =
            admin.describeConsumerGroups(latest.keySet()).describedGroups();
        Set<String> names = new HashSet<>();
        latest.values().forEach(r -> r.entries().forEach(e -> e.partitions().forEach(tp -> names.add(tp.getKey()))));
        Map<String, KafkaFuture<TopicDescription>> topics = admin.describeTopics(names).topicNameValues();
        topics.values().forEach(f -> {
            TopicDescription t = get(f);
            if (t != null) {
                topicNames.put(t.topicId(), t.name());
            }
        });
        for (Map.Entry<String, KafkaFuture<ConsumerGroupDescription>> e : described.entrySet()) {
            ConsumerGroupDescription d = get(e.getValue());
            if (d == null || d.type() != GroupType.CONSUMER) {
                continue;
            }
            Set<String> now = new HashSet<>();
            for (MemberDescription m : d.members()) {
                now.add(m.consumerId());
                groupOfMember.put(m.consumerId(), e.getKey());
                clientOfMember.put(m.consumerId(), m.clientId());
            }
            Set<String> before = membersOfGroup.put(e.getKey(), now);
            if (before != null) {
                before.removeAll(now);
                before.forEach(id -> {
                    groupOfMember.remove(id, e.getKey());
                    clientOfMember.remove(id);
                });
            }
            maybeNudge(e.getKey(), latest.get(e.getKey()), d);
        }
    }

    private void maybeNudge(String group, FitRule.Recommendation rec, ConsumerGroupDescription d)
            throws InterruptedException {
        if (rec == null || !rec.actionable() || d.members().isEmpty() || d.coordinator() == null
                || d.coordinator().id() != nodeId
                || !ServerAssignor.NAME.equals(d.partitionAssignor())) {
            return;  // not ours to move: another broker coordinates it, or it runs another assignor
        }
        List<FitRule.Member> members = new ArrayList<>();
        Map<String, Set<TopicPartition>> target = new HashMap<>();
        for (MemberDescription m : d.members()) {
            if (m.groupInstanceId().map(i -> i.startsWith(NUDGE_PREFIX)).orElse(false)) {
                return;  // a nudge is under way
            }
            members.add(new FitRule.Member(m.consumerId(), Set.of(), m.groupInstanceId().orElse(null), m.clientId(),
                                           m.rackId().orElse(null)));
            target.put(m.consumerId(), m.targetAssignment().map(t -> t.topicPartitions()).orElse(Set.of()));
        }
        List<String> ids;
        try {
            ids = FitRule.mapMembers(rec.entries(), members);
        } catch (FitRule.DoesNotFit e) {
            if (!Long.valueOf(rec.version()).equals(reportedVersion.put(group, rec.version()))) {
                LOG.info("group {}: recommendation v{} names other members ({}); not moving the group", group,
                         rec.version(), e.getMessage());
            }
            return;
        }
        boolean same = true;
        for (int i = 0; i < ids.size(); i++) {
            same &= target.get(ids.get(i)).equals(RecommendationAssignor.partitions(rec.entries().get(i)));
        }
        long now = System.currentTimeMillis();
        if (same || (Long.valueOf(rec.version()).equals(nudgedVersion.get(group))
                     && now - nudgedAt.get(group) < RENUDGE_MS)) {
            return;
        }
        nudgedVersion.put(group, rec.version());
        nudgedAt.put(group, now);
        Set<String> subscribed = new TreeSet<>();
        rec.entries().forEach(e -> e.partitions().forEach(tp -> subscribed.add(tp.getKey())));
        target.values().forEach(tps -> tps.forEach(tp -> subscribed.add(tp.topic())));
        nudge(group, subscribed, rec.version());
    }

    /** Join {@code group} with a member that takes no partitions, and leave: the group epoch moves twice. */
    private void nudge(String group, Set<String> topics, long version) throws InterruptedException {
        Properties p = new Properties();
        p.putAll(client);
        p.put("group.id", group);
        p.put("group.protocol", "consumer");
        p.put("group.remote.assignor", ServerAssignor.NAME);
        p.put("group.instance.id", NUDGE_PREFIX + UUID.randomUUID().toString().substring(0, 8));
        p.put("client.id", "rebalancer-nudge");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        long t0 = System.currentTimeMillis();
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        try {
            c.subscribe(topics);
            while (c.groupMetadata().generationId() <= 0 && System.currentTimeMillis() - t0 < 15_000) {
                c.poll(Duration.ofMillis(100));
            }
        } finally {
            c.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                        .withTimeout(Duration.ofSeconds(10)));
        }
        LOG.info("group {}: recommendation v{} differs from the target assignment; a member joined and left to "
                 + "have it computed again ({} ms)", group, version, System.currentTimeMillis() - t0);
    }
}
