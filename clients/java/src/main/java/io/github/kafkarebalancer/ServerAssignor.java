/*
 * A KIP-848 server-side assignor (group.consumer.assignors on the broker; consumers pick it with
 * group.remote.assignor=rebalancer): for a group whose latest recommendation fits its current members and
 * partitions (FitRule, the rule of streaming/apply/plan.py and of RecommendationAssignor) it returns that
 * recommendation as the target assignment; otherwise it balances the recommendation's load model when it carries
 * one (LoadModel, the rule of streaming/apply/fallback.py), else runs Kafka's uniform assignor, and logs why.
 *
 * The coordinator calls assign() on its own thread, so assign() does no I/O: everything it needs that the
 * GroupSpec lacks (the group's name, members' client ids, topic names, the latest recommendations) comes from
 * ServerFeed, which a background thread keeps up to date. Members whose group.instance.id starts with
 * ServerFeed.NUDGE_PREFIX are the short-lived members ServerFeed joins to make the coordinator compute a new
 * target assignment (see docs/server-assignor.md): they are left out of the fit and get nothing.
 */
package io.github.kafkarebalancer;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.apache.kafka.common.Configurable;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignorException;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class ServerAssignor implements ConsumerGroupPartitionAssignor, Configurable {
    public static final String NAME = "rebalancer";

    private static final Logger LOG = LoggerFactory.getLogger(ServerAssignor.class);

    private final ConsumerGroupPartitionAssignor uniform = new UniformAssignor();
    private ServerFeed feed;

    /** What the feed knows about one group, as assign() reads it; tests build it by hand. */
    public record View(String group, FitRule.Recommendation recommendation, Map<String, String> clientIds,
                       Function<Uuid, String> topicName) {
    }

    /** One member's target partitions. */
    record Partitions(Map<Uuid, Set<Integer>> partitions) implements MemberAssignment {
    }

    /** The outcome of one assign(): the assignment, the decision behind it (null when no view was known) and who
     *  computed it ("recommendation", LoadModel.NAME or the fallback's name). */
    public record Outcome(GroupAssignment assignment, FitRule.Decision decision, String assignor) {
    }

    @Override
    public void configure(Map<String, ?> configs) {
        // the broker passes its own configuration (GroupCoordinatorConfig.consumerGroupAssignors)
        feed = ServerFeed.forBroker(configs);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public GroupAssignment assign(GroupSpec spec, SubscribedTopicDescriber topics) throws PartitionAssignorException {
        View view = null;
        try {
            view = feed == null ? null : feed.view(spec);
            return assign(spec, topics, view, uniform).assignment();
        } catch (RuntimeException e) {
            // never fail the coordinator because of us: uniform over the members it asked about
            LOG.warn("group {}: the rebalancer assignor failed ({}); using uniform", view == null ? "?" : view.group(),
                     e.toString());
            return withEmptyNudges(spec, uniform.assign(new WithoutNudges(spec), topics));
        }
    }

    /** The pure core: apply {@code view}'s recommendation when it fits, else {@code fallback}. No I/O. */
    public static Outcome assign(GroupSpec spec, SubscribedTopicDescriber topics, View view,
                                 ConsumerGroupPartitionAssignor fallback) {
        if (view == null || view.group() == null) {
            LOG.debug("a group of {} member(s) with no recommendation known; using uniform", spec.memberIds().size());
            return new Outcome(withEmptyNudges(spec, fallback.assign(new WithoutNudges(spec), topics)), null,
                               fallback.name());
        }
        Map<Uuid, String> names = new HashMap<>();
        Map<String, Integer> counts = new HashMap<>();
        List<FitRule.Member> members = new ArrayList<>();
        for (String id : nonNudgeMembers(spec)) {
            MemberSubscription s = spec.memberSubscription(id);
            Set<String> subscribed = new LinkedHashSet<>();
            for (Uuid t : s.subscribedTopicIds()) {
                // a topic the feed cannot name yet keeps its id: no recommendation names it, so it cannot fit
                String name = names.computeIfAbsent(t, k -> {
                    String n = view.topicName().apply(k);
                    return n == null ? k.toString() : n;
                });
                subscribed.add(name);
                counts.put(name, Math.max(0, topics.numPartitions(t)));
            }
            members.add(new FitRule.Member(id, subscribed, s.instanceId().orElse(null), view.clientIds().get(id),
                                           s.rackId().orElse(null)));
        }
        FitRule.Decision d = FitRule.decide(view.group(), view.recommendation(), members, counts);
        Map<String, Uuid> ids = new HashMap<>();
        names.forEach((id, name) -> ids.put(name, id));
        if (d.applied()) {
            GroupAssignment out = target(spec, ids, d.assignment());
            if (out != null) {
                LOG.info("group {}: recommendation v{} is the target assignment of {} member(s)", view.group(),
                         d.considered(), out.members().size());
                return new Outcome(withEmptyNudges(spec, out), d, "recommendation");
            }
            d = new FitRule.Decision(false, null, "partition_not_assignable", "recommendation v" + d.considered()
                + " does not fit: a partition of it cannot be assigned now", d.considered());
        }
        Map<String, List<Map.Entry<String, Integer>>> planned =
            LoadModel.fallback(view.group(), view.recommendation(), d, members, counts);
        GroupAssignment modelled = planned == null ? null : target(spec, ids, planned);
        String name = modelled != null ? LoadModel.NAME : fallback.name();
        if (d.kind().equals("no_recommendation") || d.kind().equals("not_approved")) {  // nothing wrong
            LOG.info("group {}: {}; using {}", view.group(), d.reason(), name);
        } else {
            LOG.warn("group {}: {}; not applied, using {} [{}]", view.group(), d.reason(), name, d.kind());
        }
        if (modelled != null) {
            return new Outcome(withEmptyNudges(spec, modelled), d, LoadModel.NAME);
        }
        return new Outcome(withEmptyNudges(spec, fallback.assign(new WithoutNudges(spec), topics)), d, fallback.name());
    }

    /** {@code plan} (member id -> topic names and partitions) as a target assignment; null when a partition of it
     *  cannot be assigned now. */
    static GroupAssignment target(GroupSpec spec, Map<String, Uuid> ids,
                                  Map<String, List<Map.Entry<String, Integer>>> plan) {
        Map<String, MemberAssignment> out = new HashMap<>();
        for (Map.Entry<String, List<Map.Entry<String, Integer>>> e : plan.entrySet()) {
            Map<Uuid, Set<Integer>> parts = new HashMap<>();
            for (Map.Entry<String, Integer> tp : e.getValue()) {
                Uuid id = ids.get(tp.getKey());
                if (!spec.isPartitionAssignable(id, tp.getValue())) {
                    return null;
                }
                parts.computeIfAbsent(id, k -> new HashSet<>()).add(tp.getValue());
            }
            out.put(e.getKey(), new Partitions(Collections.unmodifiableMap(parts)));
        }
        return new GroupAssignment(out);
    }

    static boolean isNudge(MemberSubscription s) {
        return s.instanceId().map(i -> i.startsWith(ServerFeed.NUDGE_PREFIX)).orElse(false);
    }

    static List<String> nonNudgeMembers(GroupSpec spec) {
        List<String> out = new ArrayList<>();
        for (String id : spec.memberIds()) {
            if (!isNudge(spec.memberSubscription(id))) {
                out.add(id);
            }
        }
        return out;
    }

    /** {@code assignment} plus an empty assignment for every nudge member of {@code spec}. */
    static GroupAssignment withEmptyNudges(GroupSpec spec, GroupAssignment assignment) {
        Map<String, MemberAssignment> out = new HashMap<>(assignment.members());
        for (String id : spec.memberIds()) {
            if (isNudge(spec.memberSubscription(id))) {
                out.put(id, new Partitions(Collections.emptyMap()));
            }
        }
        return new GroupAssignment(out);
    }

    /** {@code spec} without its nudge members, for the fallback. */
    static final class WithoutNudges implements GroupSpec {
        private final GroupSpec spec;
        private final List<String> members;
        private final SubscriptionType type;

        WithoutNudges(GroupSpec spec) {
            this.spec = spec;
            this.members = nonNudgeMembers(spec);
            Set<Set<Uuid>> subscriptions = new HashSet<>();
            members.forEach(id -> subscriptions.add(spec.memberSubscription(id).subscribedTopicIds()));
            this.type = members.size() == spec.memberIds().size() ? spec.subscriptionType()
                : subscriptions.size() <= 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        }

        @Override
        public Collection<String> memberIds() {
            return members;
        }

        @Override
        public SubscriptionType subscriptionType() {
            return type;
        }

        @Override
        public boolean isPartitionAssigned(Uuid topicId, int partition) {
            return spec.isPartitionAssigned(topicId, partition);
        }

        @Override
        public boolean isPartitionAssignable(Uuid topicId, int partition) {
            return spec.isPartitionAssignable(topicId, partition);
        }

        @Override
        public MemberSubscription memberSubscription(String memberId) {
            return spec.memberSubscription(memberId);
        }

        @Override
        public MemberAssignment memberAssignment(String memberId) {
            return spec.memberAssignment(memberId);
        }
    }
}
