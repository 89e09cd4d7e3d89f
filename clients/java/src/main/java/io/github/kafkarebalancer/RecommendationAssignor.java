/*
 * A ConsumerPartitionAssignor for classic groups (partition.assignment.strategy): on the group leader it
 * hands out the latest recommendation from the trigger feed when it fits the current members and
 * partitions (FitRule, the rule of streaming/apply/plan.py); otherwise it balances the job's load model when the
 * recommendation carries one (LoadModel, the rule of streaming/apply/fallback.py), else runs cooperative-sticky
 * (or sticky with rebalancer.rebalance.protocol=eager), and logs why.
 *
 * Its assignments carry no user data: Kafka converts a classic group to a KIP-848 consumer group (the online
 * upgrade of a rolling restart with group.protocol=consumer) only when no member's assignment has any
 * (KAFKA-18134, Kafka 4.0: "userData from a custom assignor would be lost"); docs/server-assignor.md has the
 * migration. So the members do not learn which recommendation the leader considered, and
 * RebalanceOnRecommendation asks at most once per version instead.
 *
 * Consumer settings it reads: group.id, client.id, rebalancer.trigger.topic (default rebalancer.triggers),
 * rebalancer.rebalance.protocol (cooperative, the default, or eager), and the connection settings.
 */
package io.github.kafkarebalancer;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class RecommendationAssignor implements ConsumerPartitionAssignor, Configurable {
    public static final String PROTOCOL_CONFIG = "rebalancer.rebalance.protocol";

    private static final Logger LOG = LoggerFactory.getLogger(RecommendationAssignor.class);
    // the broker makes a dynamic member id "<client.id>-<UUID>"
    private static final Pattern UUID_SUFFIX =
        Pattern.compile("-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$");
    private static final Map<String, RecommendationAssignor> BY_CLIENT = new ConcurrentHashMap<>();

    private ConsumerPartitionAssignor fallback = new CooperativeStickyAssignor();
    private RebalanceProtocol protocol = RebalanceProtocol.COOPERATIVE;
    private String group;
    private RecommendationFeed feed;

    @Override
    public void configure(Map<String, ?> configs) {
        Object p = configs.get(PROTOCOL_CONFIG);
        if (p != null && p.toString().equalsIgnoreCase("eager")) {
            protocol = RebalanceProtocol.EAGER;
            fallback = new StickyAssignor();
        }
        Object g = configs.get("group.id");
        group = g == null ? null : g.toString();
        if (group != null) {
            feed = RecommendationFeed.forGroup(configs, group);
        }
        Object clientId = configs.get("client.id");
        if (clientId != null) {
            BY_CLIENT.put(clientId.toString(), this);
        }
    }

    /** The assignor of the consumer with {@code clientId} in this JVM, or null. */
    public static RecommendationAssignor forClient(String clientId) {
        return BY_CLIENT.get(clientId);
    }

    public RecommendationFeed feed() {
        return feed;
    }

    @Override
    public String name() {
        return "rebalancer";
    }

    @Override
    public List<RebalanceProtocol> supportedProtocols() {
        return protocol == RebalanceProtocol.EAGER ? List.of(RebalanceProtocol.EAGER)
                                                   : List.of(RebalanceProtocol.EAGER, RebalanceProtocol.COOPERATIVE);
    }

    @Override
    public short version() {
        return fallback.version();
    }

    @Override
    public ByteBuffer subscriptionUserData(Set<String> topics) {
        return fallback.subscriptionUserData(topics);  // sticky's memory of its last assignment
    }

    @Override
    public void onAssignment(Assignment assignment, ConsumerGroupMetadata metadata) {
        fallback.onAssignment(assignment, metadata);
    }

    static String clientIdFromMemberId(String memberId) {
        Matcher m = UUID_SUFFIX.matcher(memberId);
        return m.find() && m.start() > 0 ? memberId.substring(0, m.start()) : null;
    }

    @Override
    public GroupAssignment assign(Cluster metadata, GroupSubscription groupSubscription) {
        Map<String, Subscription> subs = groupSubscription.groupSubscription();
        List<FitRule.Member> members = new ArrayList<>();
        Map<String, Integer> topics = new HashMap<>();
        for (Map.Entry<String, Subscription> e : subs.entrySet()) {
            Subscription s = e.getValue();
            members.add(new FitRule.Member(e.getKey(), new LinkedHashSet<>(s.topics()), s.groupInstanceId().orElse(null),
                                           clientIdFromMemberId(e.getKey()), s.rackId().orElse(null)));
            for (String t : s.topics()) {
                Integer n = metadata.partitionCountForTopic(t);
                topics.put(t, n == null ? 0 : n);
            }
        }
        FitRule.Recommendation rec = feed == null ? null : feed.latest();
        FitRule.Decision d = FitRule.decide(group, rec, members, topics);
        Map<TopicPartition, String> owner = new HashMap<>();
        subs.forEach((id, s) -> s.ownedPartitions().forEach(tp -> owner.put(tp, id)));
        Map<String, Assignment> out = new HashMap<>();
        if (d.applied()) {
            int held = handOut(d.assignment(), owner, out);
            LOG.info("group {}: applying recommendation v{} to {} member(s){}", group, d.considered(), out.size(),
                     held > 0 ? " (" + held + " partition(s) follow once their owners revoke them)" : "");
            return new GroupAssignment(out);
        }
        Map<String, List<Map.Entry<String, Integer>>> planned = LoadModel.fallback(group, rec, d, members, topics);
        String name = planned != null ? LoadModel.NAME
            : protocol == RebalanceProtocol.EAGER ? "sticky" : "cooperative-sticky";
        if (d.kind().equals("no_recommendation") || d.kind().equals("not_approved")) {  // nothing wrong
            LOG.info("group {}: {}; using the {} fallback", group, d.reason(), name);
        } else {
            LOG.warn("group {}: {}; not applied, using the {} fallback [{}]", group, d.reason(), name, d.kind());
        }
        if (planned != null) {
            handOut(planned, owner, out);
            return new GroupAssignment(out);
        }
        GroupAssignment fb = fallback.assign(metadata, groupSubscription);
        fb.groupAssignment().forEach((id, a) -> out.put(id, new Assignment(a.partitions())));  // sticky's have none
        return new GroupAssignment(out);
    }

    /** {@code plan} into {@code out}; returns how many partitions were held back: under cooperative a partition
     *  another member still owns moves at the next rebalance, once revoked (the plan is computed again then). */
    private int handOut(Map<String, List<Map.Entry<String, Integer>>> plan, Map<TopicPartition, String> owner,
                        Map<String, Assignment> out) {
        int held = 0;
        for (Map.Entry<String, List<Map.Entry<String, Integer>>> e : plan.entrySet()) {
            List<TopicPartition> parts = new ArrayList<>();
            for (Map.Entry<String, Integer> tp : e.getValue()) {
                TopicPartition p = new TopicPartition(tp.getKey(), tp.getValue());
                String from = owner.get(p);
                if (protocol == RebalanceProtocol.COOPERATIVE && from != null && !from.equals(e.getKey())) {
                    held++;
                    continue;
                }
                parts.add(p);
            }
            out.put(e.getKey(), new Assignment(parts));
        }
        return held;
    }

    /** The partitions of {@code entry} as TopicPartitions. */
    static Set<TopicPartition> partitions(FitRule.Entry entry) {
        Set<TopicPartition> out = new HashSet<>();
        entry.partitions().forEach(tp -> out.add(new TopicPartition(tp.getKey(), tp.getValue())));
        return out;
    }
}
