/*
 * The job's load model (the "load_model" of a trigger-feed value: streaming/contracts/load_model.py) and the
 * leader's fallback on it, the rule of streaming/apply/fallback.py: when the latest recommendation no longer
 * fits, balance the lags, rates and capacities the job decided on rather than count partitions.
 *
 * The rule: a partition weighs lag + rate * horizon_s (a null rate adds nothing), one the model lacks the median
 * of the model's loads; model members are matched to current ones as FitRule matches entries (instance id, exact
 * member id, a client id only one current member has), the unmatched take the median matched capacity (all 1
 * without capacities or matches). Heaviest partition first (ties: topic in UTF-8 byte order, partition), each
 * to the subscribed member that would finish it first, least (load + w) / capacity (ties: fewer partitions,
 * member id in UTF-8 byte order); a partition of load 0 to the member with the fewest partitions (ties: least
 * load / capacity, member id). Both sides pass the vectors in tests/data/fallback. Pure: no Kafka, no I/O.
 */
package io.github.kafkarebalancer;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

public record LoadModel(double horizonS, Map<String, long[]> lag, Map<String, Double[]> rate, List<Capacity> members) {
    public static final int VERSION = 1;
    public static final String NAME = "load-model";
    static final int MAX_PARTITIONS = 100_000;
    static final double MAX_RATE = 1e12;
    static final double MAX_HORIZON_S = 1e6;

    /** One member's capacity as the job estimated it (records/s). */
    public record Capacity(String memberId, String instanceId, String clientId, double recordsPerS) {
    }

    // -- reading ------------------------------------------------------------------------------------------

    private static boolean number(JsonNode n, double low, double high) {
        return n != null && n.isNumber() && Double.isFinite(n.asDouble()) && n.asDouble() >= low
            && n.asDouble() <= high;
    }

    private static boolean name(JsonNode n) {
        return n == null || n.isNull() || (n.isTextual() && !n.asText().isEmpty() && n.asText().length() <= 4096);
    }

    private static String text(JsonNode n) {
        return n == null || n.isNull() ? null : n.asText();
    }

    /** The model in {@code node}, or null when absent, of another version or breaking any of its rules. */
    public static LoadModel parse(JsonNode node) {
        if (node == null || !node.isObject() || !node.path("version").isIntegralNumber()
                || !node.path("version").canConvertToInt() || node.path("version").asInt() != VERSION) {
            return null;
        }
        JsonNode topics = node.get("topics");
        if (!number(node.get("horizon_s"), 0, MAX_HORIZON_S) || topics == null || !topics.isArray()) {
            return null;
        }
        Map<String, long[]> lag = new LinkedHashMap<>();
        Map<String, Double[]> rate = new LinkedHashMap<>();
        long total = 0;
        for (JsonNode t : topics) {
            if (!topic(t, lag, rate)) {
                return null;
            }
            total += lag.get(t.get("topic").asText()).length;
        }
        JsonNode m = node.get("members");
        List<Capacity> members = m == null || m.isNull() ? null : members(m);
        if (total > MAX_PARTITIONS || (members == null && m != null && !m.isNull())) {
            return null;
        }
        return new LoadModel(node.get("horizon_s").asDouble(), lag, rate, members);
    }

    /** One topic's lags and rates into {@code lag} and {@code rate}; false when it breaks a rule. */
    private static boolean topic(JsonNode t, Map<String, long[]> lag, Map<String, Double[]> rate) {
        JsonNode l = t.get("lag");
        JsonNode r = t.get("rate");
        if (!t.isObject() || !t.path("topic").isTextual() || t.get("topic").asText().isEmpty() || l == null
                || r == null || !l.isArray() || !r.isArray() || l.size() != r.size()
                || lag.containsKey(t.get("topic").asText())) {
            return false;
        }
        long[] lags = new long[l.size()];
        Double[] rates = new Double[r.size()];
        for (int p = 0; p < l.size(); p++) {
            JsonNode x = l.get(p);
            JsonNode y = r.get(p);
            if (!x.isIntegralNumber() || !x.canConvertToLong() || x.asLong() < 0
                    || !(y.isNull() || number(y, 0, MAX_RATE))) {
                return false;
            }
            lags[p] = x.asLong();
            rates[p] = y.isNull() ? null : y.asDouble();
        }
        lag.put(t.get("topic").asText(), lags);
        rate.put(t.get("topic").asText(), rates);
        return true;
    }

    /** The members' capacities; null when one breaks a rule (or {@code m} is not a list). */
    private static List<Capacity> members(JsonNode m) {
        if (!m.isArray()) {
            return null;
        }
        List<Capacity> out = new ArrayList<>();
        for (JsonNode e : m) {
            JsonNode c = e.get("records_per_s");
            if (!e.isObject() || !name(e.get("member_id")) || !name(e.get("instance_id"))
                    || !name(e.get("client_id")) || !number(c, 0, MAX_RATE) || c.asDouble() <= 0) {
                return null;
            }
            out.add(new Capacity(text(e.get("member_id")), text(e.get("instance_id")), text(e.get("client_id")),
                                 c.asDouble()));
        }
        return out;
    }

    // -- the fallback -------------------------------------------------------------------------------------

    /** The load-model fallback for a decision that did not apply {@code rec}; null when it has no say (no
     *  recommendation, another group's, one not to act on, or no model): the leader's usual fallback then runs. */
    public static Map<String, List<Map.Entry<String, Integer>>> fallback(String group, FitRule.Recommendation rec,
            FitRule.Decision d, List<FitRule.Member> members, Map<String, Integer> topics) {
        if (d.applied() || rec == null || !rec.group().equals(group) || !rec.actionable() || rec.loadModel() == null) {
            return null;
        }
        return rec.loadModel().assign(members, topics);
    }

    private static final Comparator<String> UTF8 = (a, b) -> Arrays.compareUnsigned(
        a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8));

    private static double median(List<Double> values) {
        if (values.isEmpty()) {
            return 0.0;
        }
        double[] s = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        int mid = s.length / 2;
        return s.length % 2 == 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
    }

    /** lag + rate * horizon of a partition in the model; null when the model does not have it. */
    Double load(String topic, int p) {
        long[] lags = lag.get(topic);
        if (lags == null || p >= lags.length) {
            return null;
        }
        Double r = rate.get(topic)[p];
        return (double) lags[p] + (r != null ? r * horizonS : 0.0);
    }

    /** member id -> capacity, for {@code members}. */
    Map<String, Double> capacities(List<FitRule.Member> current) {
        Map<String, Double> out = new HashMap<>();
        Map<String, FitRule.Member> byInstance = new HashMap<>();
        Map<String, FitRule.Member> byMemberId = new HashMap<>();
        Map<String, List<FitRule.Member>> byClient = new HashMap<>();
        for (FitRule.Member m : current) {
            if (m.instanceId() != null) {
                byInstance.put(m.instanceId(), m);
            }
            byMemberId.put(m.memberId(), m);
            if (m.clientId() != null) {
                byClient.computeIfAbsent(m.clientId(), k -> new ArrayList<>()).add(m);
            }
        }
        List<Double> found = new ArrayList<>();
        for (Capacity e : members == null ? List.<Capacity>of() : members) {
            FitRule.Member hit = null;
            if (e.instanceId() != null) {
                hit = byInstance.get(e.instanceId());
            } else if (e.memberId() != null && byMemberId.containsKey(e.memberId())) {
                hit = byMemberId.get(e.memberId());
            } else if (e.clientId() != null && byClient.getOrDefault(e.clientId(), List.of()).size() == 1) {
                hit = byClient.get(e.clientId()).get(0);
            }
            if (hit != null && !out.containsKey(hit.memberId())) {
                out.put(hit.memberId(), e.recordsPerS());
                found.add(e.recordsPerS());
            }
        }
        double fallback = found.isEmpty() ? 1.0 : median(found);
        current.forEach(m -> out.putIfAbsent(m.memberId(), fallback));
        return out;
    }

    /** Every current subscribed partition to one member subscribed to its topic; every member listed. */
    public Map<String, List<Map.Entry<String, Integer>>> assign(List<FitRule.Member> current,
                                                                Map<String, Integer> topics) {
        List<FitRule.Member> order = new ArrayList<>(current);
        order.sort(Comparator.comparing(FitRule.Member::memberId, UTF8));
        List<Map.Entry<String, Integer>> parts = partitions(order, topics);
        double[] w = weights(parts);
        Integer[] ranked = new Integer[parts.size()];
        Arrays.setAll(ranked, i -> i);
        Arrays.sort(ranked, Comparator.<Integer>comparingDouble(i -> -w[i])
            .thenComparing(i -> parts.get(i).getKey(), UTF8).thenComparingInt(i -> parts.get(i).getValue()));
        Map<String, Double> capacity = capacities(order);
        int n = order.size();
        double[] c = new double[n];
        double[] load = new double[n];
        int[] count = new int[n];
        Map<String, List<Map.Entry<String, Integer>>> out = new LinkedHashMap<>();
        for (int m = 0; m < n; m++) {
            c[m] = capacity.get(order.get(m).memberId());
            out.put(order.get(m).memberId(), new ArrayList<>());
        }
        for (int i : ranked) {
            int best = -1;
            double bestTime = 0;
            for (int m = 0; m < n; m++) {
                if (!order.get(m).topics().contains(parts.get(i).getKey())) {
                    continue;
                }
                double time = (load[m] + w[i]) / c[m];
                boolean better = best < 0 || (w[i] > 0
                    ? time < bestTime || (time == bestTime && count[m] < count[best])
                    : count[m] < count[best] || (count[m] == count[best] && time < bestTime));
                if (better) {
                    best = m;
                    bestTime = time;
                }
            }
            load[best] += w[i];
            count[best]++;
            out.get(order.get(best).memberId()).add(parts.get(i));
        }
        Comparator<Map.Entry<String, Integer>> byPartition =
            Map.Entry.<String, Integer>comparingByKey(UTF8).thenComparing(Map.Entry.comparingByValue());
        out.values().forEach(l -> l.sort(byPartition));
        return out;
    }

    /** Every partition of a topic some member subscribes to, topics in UTF-8 byte order. */
    private static List<Map.Entry<String, Integer>> partitions(List<FitRule.Member> members,
                                                               Map<String, Integer> topics) {
        TreeMap<String, Integer> subscribed = new TreeMap<>(UTF8);
        members.forEach(m -> m.topics().forEach(t -> {
            if (topics.getOrDefault(t, 0) > 0) {
                subscribed.put(t, topics.get(t));
            }
        }));
        List<Map.Entry<String, Integer>> out = new ArrayList<>();
        subscribed.forEach((t, n) -> {
            for (int p = 0; p < n; p++) {
                out.add(Map.entry(t, p));
            }
        });
        return out;
    }

    /** The load of each partition; the median of the model's loads for one it does not have. */
    private double[] weights(List<Map.Entry<String, Integer>> parts) {
        List<Double> known = new ArrayList<>();
        lag.forEach((t, lags) -> {
            for (int p = 0; p < lags.length; p++) {
                known.add(load(t, p));
            }
        });
        double unknown = median(known);
        double[] w = new double[parts.size()];
        for (int i = 0; i < w.length; i++) {
            Double x = load(parts.get(i).getKey(), parts.get(i).getValue());
            w[i] = x == null ? unknown : x;
        }
        return w;
    }
}
