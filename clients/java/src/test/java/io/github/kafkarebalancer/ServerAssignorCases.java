/*
 * Runs ServerAssignor's core over (1) the shared fit vectors (tests/data/fit/*.json), as the coordinator would
 * hand them over (topic ids, no client ids: those come from the feed's view), and (2) the shapes of Kafka's own
 * assignor tests (empty group, topic deleted, partitions added, ...) with Kafka's uniform assignor as the
 * fallback, and (3) the shared load-model fallback vectors (tests/data/fallback/*.json, a second directory) with
 * a fallback that assigns nothing, so that only the load model can. Prints one JSON line per case;
 * tests/integration/test_server_assignor.py checks them.
 */
package io.github.kafkarebalancer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;

public final class ServerAssignorCases {
    // non-ASCII escaped: the output reads the same whatever the JVM's stdout encoding
    private static final ObjectMapper JSON =
        new ObjectMapper(JsonFactory.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build());

    /** A topic's id, fixed by its name so that cases can name topics. */
    static Uuid id(String topic) {
        java.util.UUID u = java.util.UUID.nameUUIDFromBytes(topic.getBytes(StandardCharsets.UTF_8));
        return new Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits());
    }

    record Sub(Optional<String> rackId, Optional<String> instanceId, Set<Uuid> subscribedTopicIds)
        implements MemberSubscription {
    }

    /** A group as the coordinator describes it: members (id -> subscription) and topics (name -> partitions). */
    record Spec(Map<String, Sub> members, Map<String, Integer> topics) implements GroupSpec, SubscribedTopicDescriber {
        @Override
        public Collection<String> memberIds() {
            return members.keySet();
        }

        @Override
        public SubscriptionType subscriptionType() {
            return new HashSet<>(members.values().stream().map(Sub::subscribedTopicIds).toList()).size() <= 1
                ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        }

        @Override
        public boolean isPartitionAssigned(Uuid topicId, int partition) {
            return false;
        }

        @Override
        public boolean isPartitionAssignable(Uuid topicId, int partition) {
            return true;
        }

        @Override
        public MemberSubscription memberSubscription(String memberId) {
            return members.get(memberId);
        }

        @Override
        public MemberAssignment memberAssignment(String memberId) {
            return new ServerAssignor.Partitions(java.util.Collections.emptyMap());  // Kafka's assignors check it
        }

        @Override
        public int numPartitions(Uuid topicId) {
            for (Map.Entry<String, Integer> t : topics.entrySet()) {
                if (id(t.getKey()).equals(topicId)) {
                    return t.getValue();
                }
            }
            return -1;
        }

        @Override
        public Set<String> racksForPartition(Uuid topicId, int partition) {
            return Set.of();
        }

        String name(Uuid topicId) {
            for (String t : topics.keySet()) {
                if (id(t).equals(topicId)) {
                    return t;
                }
            }
            return null;
        }
    }

    static Sub sub(String instanceId, String... topics) {
        Set<Uuid> ids = new HashSet<>();
        Arrays.stream(topics).forEach(t -> ids.add(id(t)));
        return new Sub(Optional.empty(), Optional.ofNullable(instanceId), ids);
    }

    /** {"applied", "kind", "assignment": member -> sorted ["topic-p"]} of one run. */
    static ObjectNode result(Spec spec, ServerAssignor.Outcome o, Map<Uuid, String> names) {
        ObjectNode out = JSON.createObjectNode();
        FitRule.Decision d = o.decision();
        out.put("applied", d != null && d.applied());
        out.put("kind", d == null ? "no_view" : d.kind());
        out.put("assignor", o.assignor());
        ObjectNode a = out.putObject("assignment");
        new TreeMap<>(o.assignment().members()).forEach((member, parts) -> {
            Set<String> tps = new TreeSet<>();
            parts.partitions().forEach((t, ps) -> ps.forEach(p -> tps.add(names.getOrDefault(t, t.toString()) + "-" + p)));
            ArrayNode list = a.putArray(member);
            tps.forEach(list::add);
        });
        return out;
    }

    static ObjectNode vector(JsonNode v) {
        Map<String, Sub> members = new LinkedHashMap<>();
        Map<String, String> clients = new HashMap<>();
        for (JsonNode m : v.get("members")) {
            List<String> topics = new ArrayList<>();
            m.get("topics").forEach(t -> topics.add(t.asText()));
            String instance = m.hasNonNull("instance_id") ? m.get("instance_id").asText() : null;
            members.put(m.get("member_id").asText(), sub(instance, topics.toArray(String[]::new)));
            if (m.hasNonNull("client_id")) {
                clients.put(m.get("member_id").asText(), m.get("client_id").asText());
            }
        }
        Map<String, Integer> topics = new HashMap<>();
        v.get("topics").fields().forEachRemaining(e -> topics.put(e.getKey(), e.getValue().asInt()));
        // the feed names every topic the members subscribe to, a deleted one too (the vectors keep it subscribed)
        Map<Uuid, String> names = new HashMap<>();
        for (JsonNode m : v.get("members")) {
            m.get("topics").forEach(t -> names.put(id(t.asText()), t.asText()));
        }
        Spec spec = new Spec(members, topics);
        FitRule.Recommendation rec = null;
        JsonNode raw = v.get("recommendation");
        if (raw != null && !raw.isNull()) {
            try {
                rec = FitRule.parse(raw.toString());
            } catch (FitRule.DoesNotFit e) {
                return JSON.createObjectNode().put("applied", false).put("kind", e.kind);
            }
        }
        ServerAssignor.View view = new ServerAssignor.View(v.get("group").asText(), rec, clients, names::get);
        ConsumerGroupPartitionAssignor none = new ConsumerGroupPartitionAssignor() {
            public String name() {
                return "none";
            }

            public GroupAssignment assign(GroupSpec s, SubscribedTopicDescriber d) {
                return new GroupAssignment(Map.of());
            }
        };
        return result(spec, ServerAssignor.assign(spec, spec, view, none), names);
    }

    static String recommendation(String group, long version, Map<String, List<String>> byMember) {
        ObjectNode r = JSON.createObjectNode().put("group", group).put("version", version);
        ArrayNode entries = r.putArray("assignment");
        byMember.forEach((member, tps) -> {
            ObjectNode e = entries.addObject().put("member_id", member).putNull("instance_id").putNull("client_id");
            ArrayNode parts = e.putArray("partitions");
            tps.forEach(tp -> parts.addArray().add(tp.substring(0, tp.lastIndexOf('-')))
                .add(Integer.parseInt(tp.substring(tp.lastIndexOf('-') + 1))));
        });
        return r.toString();
    }

    static ObjectNode shape(String group, Spec spec, String recJson, boolean known) throws Exception {
        Map<Uuid, String> names = new HashMap<>();
        spec.members().values().forEach(s -> s.subscribedTopicIds().forEach(t -> names.put(t, spec.name(t))));
        ServerAssignor.View view = known ? new ServerAssignor.View(
            group, recJson == null ? null : FitRule.parse(recJson), Map.of(), names::get) : null;
        return result(spec, ServerAssignor.assign(spec, spec, view, new UniformAssignor()), names);
    }

    static Map<String, ObjectNode> shapes() throws Exception {
        Map<String, ObjectNode> out = new LinkedHashMap<>();
        String rec = recommendation("g", 1, Map.of("m1", List.of("t-0", "t-1", "t-2"), "m2", List.of("t-3")));
        Map<String, Sub> two = new LinkedHashMap<>();
        two.put("m1", sub(null, "t"));
        two.put("m2", sub(null, "t"));
        out.put("fits", shape("g", new Spec(two, Map.of("t", 4)), rec, true));
        out.put("empty_group", shape("g", new Spec(Map.of(), Map.of("t", 4)), rec, true));
        out.put("partitions_added", shape("g", new Spec(two, Map.of("t", 6)), rec, true));
        String both = recommendation("g", 2, Map.of("m1", List.of("t-0", "t-1", "u-0"), "m2", List.of("t-2", "t-3")));
        Map<String, Sub> deleted = new LinkedHashMap<>();  // u is gone: the coordinator no longer lists its id
        deleted.put("m1", sub(null, "t"));
        deleted.put("m2", sub(null, "t"));
        out.put("topic_deleted", shape("g", new Spec(deleted, Map.of("t", 4)), both, true));
        Map<String, Sub> nudged = new LinkedHashMap<>(two);
        nudged.put("n1", sub(ServerFeed.NUDGE_PREFIX + "x", "t"));
        out.put("fits_with_a_nudge_member", shape("g", new Spec(nudged, Map.of("t", 4)), rec, true));
        out.put("uniform_with_a_nudge_member", shape("g", new Spec(nudged, Map.of("t", 6)), rec, true));
        out.put("feed_unknown", shape("g", new Spec(two, Map.of("t", 4)), null, false));
        return out;
    }

    public static void main(String[] args) throws Exception {
        File[] files = new File(args[0]).listFiles((dir, name) -> name.endsWith(".json"));
        Arrays.sort(files);
        for (File f : files) {
            ObjectNode line = JSON.createObjectNode().put("case", "vector").put("name", f.getName().replace(".json", ""));
            line.set("outcome", vector(JSON.readTree(f)));
            System.out.println(JSON.writeValueAsString(line));
        }
        File[] fallbacks = args.length > 1 ? new File(args[1]).listFiles((dir, name) -> name.endsWith(".json"))
                                           : new File[0];
        Arrays.sort(fallbacks);
        for (File f : fallbacks) {
            ObjectNode line = JSON.createObjectNode().put("case", "fallback").put("name", f.getName().replace(".json", ""));
            line.set("outcome", vector(JSON.readTree(f)));
            System.out.println(JSON.writeValueAsString(line));
        }
        for (Map.Entry<String, ObjectNode> e : shapes().entrySet()) {
            ObjectNode line = JSON.createObjectNode().put("case", "shape").put("name", e.getKey());
            line.set("outcome", e.getValue());
            System.out.println(JSON.writeValueAsString(line));
        }
    }
}
