/*
 * Asks for a rebalance (Consumer.enforceRebalance) when a recommendation it may act on (status auto or approved)
 * gives this member other partitions than it owns, at most once per recommendation version: the leader then
 * decides with RecommendationAssignor. The check of streaming/apply/plan.py rejoin_reason, with one difference:
 * the leader's assignments carry no user data (a classic group whose assignments carry some cannot move to the
 * consumer protocol, see RecommendationAssignor), so this member does not know which version the leader last
 * considered and remembers instead which it asked for. A version the leader declined (it does not fit) costs each
 * member at most one request, and a restarted member one more. Call check() from the thread that polls the
 * consumer (KafkaConsumer is single-threaded), e.g. after every poll(); with group.protocol=consumer it does
 * nothing (no RecommendationAssignor runs there: the broker's ServerAssignor applies recommendations).
 */
package io.github.kafkarebalancer;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class RebalanceOnRecommendation {
    private static final Logger LOG = LoggerFactory.getLogger(RebalanceOnRecommendation.class);

    private final Consumer<?, ?> consumer;
    private final String clientId;
    private long asked;

    /** {@code clientId}: the consumer's client.id, by which its RecommendationAssignor is found. */
    public RebalanceOnRecommendation(Consumer<?, ?> consumer, String clientId) {
        this.consumer = consumer;
        this.clientId = clientId;
    }

    /** This member's entry of {@code rec}: by group.instance.id, else member id, else a unique client id. */
    static Optional<FitRule.Entry> ownEntry(FitRule.Recommendation rec, String memberId, String clientId,
                                            String instanceId) {
        List<FitRule.Entry> entries = rec.entries();
        if (instanceId != null) {
            return entries.stream().filter(e -> instanceId.equals(e.instanceId())).findFirst();
        }
        Optional<FitRule.Entry> hit = entries.stream().filter(e -> memberId.equals(e.memberId())).findFirst();
        if (hit.isPresent()) {
            return hit;
        }
        List<FitRule.Entry> same = entries.stream()
            .filter(e -> clientId.equals(e.clientId()) && e.instanceId() == null).toList();
        return same.size() == 1 ? Optional.of(same.get(0)) : Optional.empty();
    }

    /** Ask for a rebalance when there is a reason to; the reason, or null when there is none. */
    public String check() {
        RecommendationAssignor assignor = RecommendationAssignor.forClient(clientId);
        if (assignor == null || assignor.feed() == null) {
            return null;
        }
        FitRule.Recommendation rec = assignor.feed().latest();
        if (rec == null || !rec.actionable() || rec.version() <= asked) {
            return null;
        }
        ConsumerGroupMetadata meta = consumer.groupMetadata();
        Optional<FitRule.Entry> mine = ownEntry(rec, meta.memberId(), clientId, meta.groupInstanceId().orElse(null));
        if (mine.isEmpty()) {
            return null;  // the leader judges a recommendation without a part for this member
        }
        Set<TopicPartition> wanted = RecommendationAssignor.partitions(mine.get());
        Set<TopicPartition> owned = consumer.assignment();
        if (wanted.equals(owned)) {
            return null;
        }
        asked = rec.version();
        String reason = "recommendation v" + rec.version() + " gives this member " + wanted.size()
                        + " partition(s), it owns " + owned.size();
        LOG.info("{}: asking for a rebalance: {}", clientId, reason);
        consumer.enforceRebalance(reason);
        return reason;
    }
}
