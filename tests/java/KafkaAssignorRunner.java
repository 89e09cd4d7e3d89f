/*
 * Runs Kafka's own client-side assignors (kafka-clients, see conf/maven/pom.xml) on the project's scenario
 * format, so the Python assignors can be checked against the real thing and timed beside it.
 *
 * Built and run by benchmarks/javaref.py (classpath .cache/jars/kafka/*). Two modes:
 *
 *   cases  --assignor NAME --in CASES.json --out RESULTS.json [--map hash|linked]
 *       CASES.json is a JSON array of scenarios in the conformance schema
 *       (tests/data/conformance/assignor-scenarios.json, element 0): topics, replica_racks, members
 *       [{id, instance_id, rack, topics, owned, generation}], prefer_rack_aware_logic, and optionally java_map
 *       ("hash" or "linked") to override --map for that case. Every case runs on a
 *       fresh assignor instance (AbstractStickyAssignor.maxGeneration is never reset otherwise).
 *       RESULTS.json is an array, one object per case:
 *         name, assignment (member -> [[topic, partition], ...] in Kafka's list order, members in input
 *         order), member_order (the order Java iterated the subscriptions map), map ("hash" or "linked"),
 *         transferring (sticky family: partitionsTransferringOwnership as {"topic-p": member}, or null),
 *         time_ns (the assign call only), error (null, or "ExceptionClass: message").
 *
 *   timing --assignor NAME --topics T --partitions P --consumers C --subscription equal|one-single|split|buckets
 *          [--rounds 1|2] [--warmup N] [--warmup-topics K] [--repeat R]
 *       Generates the group in Java (names as Kafka's AbstractStickyAssignorTest: "t"/"c" + zero-padded index),
 *       runs N warm-up assignments, then measures the assign call only. Round 2 (as Kafka's scale tests) re-sends
 *       every member but member 0 with the partitions it got in round 1, generation 1. Prints one JSON object:
 *       time_ns per round, peak heap bytes (sum of heap pools' peak usage, reset before the measured call),
 *       heap used before, GC count and time during the measured call. With --repeat R the measured rounds run
 *       R times in this JVM (each on a fresh assignor instance) and repeat_ns lists each repetition's time
 *       (all rounds); the other figures are the first repetition's. With --warmup 0, repetition 1 is the cold
 *       call of a fresh JVM and the later ones, after JIT warm-up, are what a group leader's warm JVM does.
 *
 * Members are put into a java.util.HashMap in input order, as ConsumerCoordinator.onLeaderElected and Kafka's
 * tests do; sticky results can depend on that map's iteration order, so it is reported.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupAssignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

import java.io.File;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.reflect.Field;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

public final class KafkaAssignorRunner {

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int NO_GENERATION = -1;

    private KafkaAssignorRunner() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            usage("missing mode");
        }
        Map<String, String> opts = parseOptions(args);
        switch (args[0]) {
            case "cases":
                runCases(opts);
                break;
            case "timing":
                runTiming(opts);
                break;
            default:
                usage("unknown mode " + args[0]);
        }
    }

    private static void usage(String why) {
        System.err.println("KafkaAssignorRunner: " + why);
        System.err.println("  cases  --assignor NAME --in CASES.json --out RESULTS.json [--map hash|linked]");
        System.err.println("  timing --assignor NAME --topics T --partitions P --consumers C "
            + "--subscription equal|one-single|split|buckets [--rounds 1|2] [--warmup N] [--warmup-topics K] "
            + "[--repeat R]");
        System.exit(2);
    }

    private static Map<String, String> parseOptions(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("bad option " + args[i]);
            }
            opts.put(args[i].substring(2), args[++i]);
        }
        return opts;
    }

    private static String need(Map<String, String> opts, String key) {
        String v = opts.get(key);
        if (v == null) {
            usage("missing --" + key);
        }
        return v;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Assignors and how each one learns what a member owned

    static ConsumerPartitionAssignor newAssignor(String name, boolean preferRackAwareLogic) throws Exception {
        AbstractPartitionAssignor assignor;
        switch (name) {
            case "range":
                assignor = new RangeAssignor();
                break;
            case "roundrobin":
                assignor = new RoundRobinAssignor();
                break;
            case "sticky":
                assignor = new StickyAssignor();
                break;
            case "cooperative-sticky":
                assignor = new CooperativeStickyAssignor();
                break;
            default:
                throw new IllegalArgumentException("no Kafka assignor named " + name
                    + " (range, roundrobin, sticky, cooperative-sticky)");
        }
        if (preferRackAwareLogic) {
            // package-private, test-only switch of AbstractPartitionAssignor
            Field f = AbstractPartitionAssignor.class.getDeclaredField("preferRackAwareLogic");
            f.setAccessible(true);
            f.setBoolean(assignor, true);
        }
        return assignor;
    }

    /**
     * The Subscription a member sends, built the way the real client builds it (ConsumerCoordinator.metadata):
     * the user data comes from the assignor's own subscriptionUserData after onAssignment, so eager sticky
     * carries owned partitions + generation in its user data and cooperative-sticky carries its generation.
     */
    @SuppressWarnings("removal") // the ConsumerGroupMetadata constructor Kafka's own tests use
    static Subscription subscription(String assignorName, String memberId, List<String> topics, String instanceId,
                                     String rack, List<TopicPartition> owned, Integer generation) {
        int gen = generation == null ? NO_GENERATION : generation;
        ByteBuffer userData = null;
        if (assignorName.equals("sticky") || assignorName.equals("cooperative-sticky")) {
            boolean neverAssigned = owned.isEmpty() && generation == null;
            if (!neverAssigned) {
                ConsumerPartitionAssignor member = assignorName.equals("sticky")
                    ? new StickyAssignor() : new CooperativeStickyAssignor();
                member.onAssignment(new Assignment(owned),
                    new ConsumerGroupMetadata("group", gen, memberId, Optional.ofNullable(instanceId)));
                userData = member.subscriptionUserData(new HashSet<>(topics));
            }
        }
        Subscription s = new Subscription(topics, userData, owned, gen, Optional.ofNullable(rack));
        s.setGroupInstanceId(Optional.ofNullable(instanceId));
        return s;
    }

    // ---------------------------------------------------------------------------------------------------------
    // Cluster metadata with the requested replica racks

    /** Nodes keyed by (replica slot, rack): one node per distinct rack per slot, so a partition's replicas are distinct. */
    static final class NodePool {
        private final Map<String, Node> nodes = new LinkedHashMap<>();

        Node get(int slot, String rack) {
            String key = slot + "\u0000" + (rack == null ? "\u0001" : rack);
            return nodes.computeIfAbsent(key, k -> {
                int id = nodes.size();
                return new Node(id, "broker" + id, 9092, rack);
            });
        }

        List<Node> values() {
            return new ArrayList<>(nodes.values());
        }
    }

    static Cluster cluster(JsonNode scenario) {
        NodePool pool = new NodePool();
        List<PartitionInfo> infos = new ArrayList<>();
        JsonNode racks = scenario.get("replica_racks");
        JsonNode topics = scenario.get("topics");
        for (Map.Entry<String, JsonNode> e : iterable(topics)) {
            String topic = e.getKey();
            int count = e.getValue().asInt();
            JsonNode topicRacks = racks == null || racks.isNull() ? null : racks.get(topic);
            for (int p = 0; p < count; p++) {
                Node[] replicas;
                if (topicRacks == null || topicRacks.isNull()) {
                    replicas = new Node[] {pool.get(0, null)};
                } else {
                    JsonNode list = topicRacks.get(p);
                    replicas = new Node[list.size()];
                    for (int i = 0; i < list.size(); i++) {
                        JsonNode r = list.get(i);
                        replicas[i] = pool.get(i, r == null || r.isNull() ? null : r.asText());
                    }
                }
                Node leader = replicas.length > 0 ? replicas[0] : null;
                infos.add(new PartitionInfo(topic, p, leader, replicas, replicas));
            }
        }
        return new Cluster("cluster", pool.values(), infos, Collections.emptySet(), Collections.emptySet());
    }

    private static Iterable<Map.Entry<String, JsonNode>> iterable(JsonNode object) {
        List<Map.Entry<String, JsonNode>> out = new ArrayList<>();
        if (object != null && object.isObject()) {
            out.addAll(object.properties());
        }
        return out;
    }

    private static String textOrNull(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }

    // ---------------------------------------------------------------------------------------------------------
    // cases mode

    static void runCases(Map<String, String> opts) throws Exception {
        String assignorName = need(opts, "assignor");
        JsonNode cases = JSON.readTree(new File(need(opts, "in")));
        String mapKind = opts.getOrDefault("map", "hash");
        ArrayNode results = JSON.createArrayNode();
        for (JsonNode scenario : cases) {
            results.add(runCase(assignorName, scenario, mapKind));
        }
        JSON.writeValue(new File(need(opts, "out")), results);
    }

    static ObjectNode runCase(String assignorName, JsonNode scenario, String mapKind) {
        ObjectNode out = JSON.createObjectNode();
        out.put("name", textOrNull(scenario.get("name")));
        JsonNode caseMap = scenario.get("java_map");
        if (caseMap != null && !caseMap.isNull()) {
            mapKind = caseMap.asText();
        }
        out.put("map", mapKind);
        try {
            Map<String, Subscription> subscriptions = mapKind.equals("linked") ? new LinkedHashMap<>() : new HashMap<>();
            List<String> memberIds = new ArrayList<>();
            for (JsonNode m : scenario.get("members")) {
                String id = m.get("id").asText();
                List<String> topics = new ArrayList<>();
                m.get("topics").forEach(t -> topics.add(t.asText()));
                List<TopicPartition> owned = new ArrayList<>();
                JsonNode ownedNode = m.get("owned");
                if (ownedNode != null && !ownedNode.isNull()) {
                    ownedNode.forEach(tp -> owned.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt())));
                }
                JsonNode genNode = m.get("generation");
                Integer generation = genNode == null || genNode.isNull() ? null : genNode.asInt();
                subscriptions.put(id, subscription(assignorName, id, topics, textOrNull(m.get("instance_id")),
                    textOrNull(m.get("rack")), owned, generation));
                memberIds.add(id);
            }
            ArrayNode order = out.putArray("member_order");
            subscriptions.keySet().forEach(order::add);

            JsonNode prefer = scenario.get("prefer_rack_aware_logic");
            ConsumerPartitionAssignor assignor = newAssignor(assignorName, prefer != null && prefer.asBoolean(false));
            Cluster cluster = cluster(scenario);
            GroupSubscription group = new GroupSubscription(subscriptions);

            long start = System.nanoTime();
            GroupAssignment result = assignor.assign(cluster, group);
            long elapsed = System.nanoTime() - start;

            ObjectNode assignment = out.putObject("assignment");
            Map<String, Assignment> byMember = result.groupAssignment();
            for (String id : memberIds) {
                ArrayNode list = assignment.putArray(id);
                Assignment a = byMember.get(id);
                if (a != null) {
                    for (TopicPartition tp : a.partitions()) {
                        list.addArray().add(tp.topic()).add(tp.partition());
                    }
                }
            }
            if (assignor instanceof AbstractStickyAssignor) {
                Map<TopicPartition, String> moving = ((AbstractStickyAssignor) assignor).partitionsTransferringOwnership();
                if (moving == null) {
                    out.putNull("transferring");
                } else {
                    ObjectNode t = out.putObject("transferring");
                    moving.forEach((tp, member) -> t.put(tp.topic() + "-" + tp.partition(), member));
                }
            } else {
                out.putNull("transferring");
            }
            out.put("time_ns", elapsed);
            out.putNull("error");
        } catch (Exception | Error e) {
            out.put("error", e.getClass().getName() + ": " + e.getMessage());
        }
        return out;
    }

    // ---------------------------------------------------------------------------------------------------------
    // timing mode

    static String canonicalName(String prefix, int i, int max) {
        int digits = Integer.toString(Math.max(max - 1, 0)).length();
        StringBuilder sb = new StringBuilder(prefix);
        String n = Integer.toString(i);
        for (int k = n.length(); k < digits; k++) {
            sb.append('0');
        }
        return sb.append(n).toString();
    }

    /** Member i's topics for a subscription pattern; mirrored by benchmarks/speed/cases.py (topics_for). */
    static List<String> topicsFor(String pattern, int i, int consumers, List<String> topics) {
        int n = topics.size();
        switch (pattern) {
            case "equal":
                return topics;
            case "one-single": // testLargeAssignmentAndGroupWithNonEqualSubscription
                return i == consumers - 1 ? topics.subList(0, 1) : topics;
            case "split": // testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout
                return i % 4 == 0 ? topics.subList(0, n / 2) : topics.subList(n / 2, n);
            case "buckets": { // ClientSideAssignorBenchmark HETEROGENEOUS: min(5, members) contiguous buckets
                int buckets = Math.min(5, consumers);
                int bucket = (int) ((long) i * buckets / consumers);
                int from = (int) ((long) bucket * n / buckets);
                int to = (int) ((long) (bucket + 1) * n / buckets);
                return topics.subList(from, to);
            }
            default:
                throw new IllegalArgumentException("unknown subscription pattern " + pattern);
        }
    }

    /** A generated group: cluster metadata, topic names, member ids and their fresh subscriptions. */
    static final class Generated {
        final Cluster cluster;
        final List<String> topics = new ArrayList<>();
        final List<String> ids = new ArrayList<>();
        final Map<String, Subscription> fresh = new HashMap<>();

        Generated(String assignorName, int topicCount, int partitionCount, int consumerCount, String pattern) {
            List<PartitionInfo> infos = new ArrayList<>();
            Node node = new Node(0, "broker0", 9092);
            Node[] replicas = {node};
            for (int t = 0; t < topicCount; t++) {
                String topic = canonicalName("t", t, topicCount);
                topics.add(topic);
                for (int p = 0; p < partitionCount; p++) {
                    infos.add(new PartitionInfo(topic, p, node, replicas, replicas));
                }
            }
            cluster = new Cluster("cluster", Collections.singletonList(node), infos,
                Collections.emptySet(), Collections.emptySet());
            for (int i = 0; i < consumerCount; i++) {
                String id = canonicalName("c", i, consumerCount);
                ids.add(id);
                fresh.put(id, subscription(assignorName, id,
                    new ArrayList<>(topicsFor(pattern, i, consumerCount, topics)), null, null,
                    Collections.emptyList(), null));
            }
        }
    }

    static void runTiming(Map<String, String> opts) throws Exception {
        String assignorName = need(opts, "assignor");
        int topicCount = Integer.parseInt(need(opts, "topics"));
        int partitionCount = Integer.parseInt(need(opts, "partitions"));
        int consumerCount = Integer.parseInt(need(opts, "consumers"));
        String pattern = need(opts, "subscription");
        int rounds = Integer.parseInt(opts.getOrDefault("rounds", "1"));
        int warmups = Integer.parseInt(opts.getOrDefault("warmup", "1"));
        // the warm-up may use fewer topics (same partitions per topic and members): JIT warm-up, less wall time
        int warmupTopics = Integer.parseInt(opts.getOrDefault("warmup-topics", Integer.toString(topicCount)));

        ObjectNode out = JSON.createObjectNode();
        out.put("assignor", assignorName);
        out.put("topics", topicCount);
        out.put("partitions_per_topic", partitionCount);
        out.put("consumers", consumerCount);
        out.put("subscription", pattern);
        out.put("java_version", System.getProperty("java.version"));
        out.put("max_heap_bytes", Runtime.getRuntime().maxMemory());
        out.put("warmup_topics", warmupTopics);

        for (int w = 0; w < warmups; w++) {
            Generated g = new Generated(assignorName, warmupTopics, partitionCount, consumerCount, pattern);
            long t0 = System.nanoTime();
            GroupAssignment a = newAssignor(assignorName, false).assign(g.cluster, new GroupSubscription(g.fresh));
            if (rounds > 1) {
                newAssignor(assignorName, false).assign(g.cluster,
                    new GroupSubscription(secondRound(assignorName, g.ids, pattern, g.topics, a)));
            }
            out.withArray("warmup_ns").add(System.nanoTime() - t0);
        }

        int repeats = Integer.parseInt(opts.getOrDefault("repeat", "1"));
        Generated g = new Generated(assignorName, topicCount, partitionCount, consumerCount, pattern);
        ArrayNode repeatTimes = out.putArray("repeat_ns");
        ArrayNode repeatRounds = out.putArray("repeat_round_ns");
        for (int rep = 0; rep < repeats; rep++) {
            long repTotal = measure(assignorName, g, pattern, rounds, rep == 0 ? out : null, repeatRounds.addArray());
            repeatTimes.add(repTotal);
        }
        System.out.println(JSON.writeValueAsString(out));
    }

    /** The measured rounds once; their total time. With {@code out}, records per-round times, heap and GC. */
    private static long measure(String assignorName, Generated g, String pattern, int rounds, ObjectNode out,
                                ArrayNode roundsOut) throws Exception {
        ObjectNode sink = out != null ? out : JSON.createObjectNode();
        ArrayNode roundTimes = sink.putArray("round_ns");
        long peak = 0;
        long gcCount = 0;
        long gcMillis = 0;
        long heapBefore = 0;
        GroupAssignment previous = null;
        ConsumerPartitionAssignor assignor = newAssignor(assignorName, false);
        for (int r = 0; r < rounds; r++) {
            Map<String, Subscription> subs = r == 0 ? g.fresh : secondRound(assignorName, g.ids, pattern, g.topics, previous);
            GroupSubscription group = new GroupSubscription(subs);
            previous = null;
            System.gc();
            long[] gc0 = gcTotals();
            long before = heapUsed();
            resetPeaks();
            long start = System.nanoTime();
            GroupAssignment result = assignor.assign(g.cluster, group);
            long elapsed = System.nanoTime() - start;
            long peakNow = heapPeak();
            long[] gc1 = gcTotals();
            roundTimes.add(elapsed);
            roundsOut.add(elapsed);
            if (r == 0) {
                heapBefore = before;
            }
            peak = Math.max(peak, peakNow);
            gcCount += gc1[0] - gc0[0];
            gcMillis += gc1[1] - gc0[1];
            previous = result;
            int assigned = 0;
            for (Assignment a : result.groupAssignment().values()) {
                assigned += a.partitions().size();
            }
            sink.withArray("assigned_partitions").add(assigned);
        }
        long total = 0;
        for (JsonNode n : roundTimes) {
            total += n.asLong();
        }
        sink.put("time_ns", total);
        sink.put("heap_before_bytes", heapBefore);
        sink.put("peak_heap_bytes", peak);
        sink.put("gc_count", gcCount);
        sink.put("gc_ms", gcMillis);
        return total;
    }

    private static Map<String, Subscription> secondRound(String assignorName, List<String> ids, String pattern,
                                                         List<String> topics, GroupAssignment first) {
        Map<String, Subscription> subs = new HashMap<>();
        for (int i = 0; i < ids.size(); i++) {
            String id = ids.get(i);
            List<String> t = new ArrayList<>(topicsFor(pattern, i, ids.size(), topics));
            List<TopicPartition> owned = i == 0 ? Collections.emptyList() : first.groupAssignment().get(id).partitions();
            Integer gen = i == 0 ? null : 1;
            subs.put(id, subscription(assignorName, id, t, null, null, owned, gen));
        }
        return subs;
    }

    private static long heapUsed() {
        long used = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                used += pool.getUsage().getUsed();
            }
        }
        return used;
    }

    private static void resetPeaks() {
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                pool.resetPeakUsage();
            }
        }
    }

    /** Sum of the heap pools' peak usage since the last reset (an upper bound of the true peak). */
    private static long heapPeak() {
        long peak = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                peak += pool.getPeakUsage().getUsed();
            }
        }
        return peak;
    }

    private static long[] gcTotals() {
        long count = 0;
        long millis = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            count += Math.max(0, gc.getCollectionCount());
            millis += Math.max(0, gc.getCollectionTime());
        }
        return new long[] {count, millis};
    }
}
