/*
 * When a recommendation from the trigger feed may be handed out instead of the fallback assignor: the
 * same rule as streaming/apply/plan.py (parse_recommendation, map_members, check_fits, decide), checked
 * against the shared vectors in tests/data/fit. Pure: no Kafka client, no I/O.
 */
package io.github.kafkarebalancer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

public final class FitRule {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int MAX_NAME_CHARS = 4096;
    private static final UUID NAMESPACE_URL = UUID.fromString("6ba7b811-9dad-11d1-80b4-00c04fd430c8");

    private FitRule() {
    }

    /** Why a recommendation was not applied; {@code kind} is one of the kinds of tests/data/fit/README.md. */
    public static final class DoesNotFit extends Exception {
        public final String kind;

        DoesNotFit(String kind, String message) {
            super(message);
            this.kind = kind;
        }
    }

    /** A current member of the group, as the leader sees it. */
    public record Member(String memberId, Set<String> topics, String instanceId, String clientId, String rack) {
        String label() {
            return instanceId != null ? instanceId : clientId != null ? clientId : memberId;
        }
    }

    /** One member of a recommendation: its identities and partitions ("topic-partition" pairs). */
    public record Entry(String memberId, String instanceId, String clientId, List<Map.Entry<String, Integer>> partitions) {
        String label() {
            return instanceId != null ? instanceId : clientId != null ? clientId : memberId != null ? memberId : "?";
        }
    }

    /** Statuses of a feed record (streaming/recommendation.py); the apply side acts on ACTIONABLE ones. */
    public static final List<String> STATUSES = List.of("auto", "proposed", "approved", "rejected", "observed");
    public static final List<String> ACTIONABLE = List.of("auto", "approved");

    /** A parsed trigger-feed value; {@code status} is "auto" for a value without one (older writers);
     *  {@code loadModel} null when it carries none (or a malformed one: LoadModel.parse). */
    public record Recommendation(String group, long version, String recommendationId, List<Entry> entries,
                                 String status, LoadModel loadModel) {
        /** True when the apply side may act on it: status auto or approved, never a proposal or a rejection. */
        public boolean actionable() {
            return ACTIONABLE.contains(status);
        }

        /** True when {@code this} replaces {@code old} as its group's latest: a higher version, or at the same
         *  version a decision (approved, rejected) other than the old status; a replayed proposal never does. */
        public boolean replaces(Recommendation old) {
            if (old == null || version != old.version()) {
                return old == null || version > old.version();
            }
            return ("approved".equals(status) || "rejected".equals(status)) && !status.equals(old.status());
        }
    }

    /** The outcome: applied (with current member id -> partitions) or not (with the kind and reason). */
    public record Decision(boolean applied, Map<String, List<Map.Entry<String, Integer>>> assignment, String kind,
                           String reason, long considered) {
    }

    // -- parsing -----------------------------------------------------------------------------------------

    /** uuid5(NAMESPACE_URL, "kafka-rebalancer/GROUP/VERSION") as 32 hex digits, as the job derives it. */
    public static String recommendationId(String group, long version) {
        try {
            MessageDigest sha1 = MessageDigest.getInstance("SHA-1");
            ByteBuffer ns = ByteBuffer.allocate(16);
            ns.putLong(NAMESPACE_URL.getMostSignificantBits()).putLong(NAMESPACE_URL.getLeastSignificantBits());
            sha1.update(ns.array());
            sha1.update(("kafka-rebalancer/" + group + "/" + version).getBytes(StandardCharsets.UTF_8));
            byte[] h = sha1.digest();
            h[6] = (byte) ((h[6] & 0x0f) | 0x50);
            h[8] = (byte) ((h[8] & 0x3f) | 0x80);
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < 16; i++) {
                sb.append(String.format("%02x", h[i] & 0xff));
            }
            return sb.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean isName(JsonNode n) {
        return n != null && n.isTextual() && !n.asText().isEmpty() && n.asText().length() <= MAX_NAME_CHARS;
    }

    private static String optionalName(JsonNode entry, String key) throws DoesNotFit {
        JsonNode n = entry.get(key);
        if (n == null || n.isNull()) {
            return null;
        }
        if (!isName(n)) {
            throw invalid("recommendation entry " + key + " must be a non-empty string or null");
        }
        return n.asText();
    }

    private static DoesNotFit invalid(String message) {
        return new DoesNotFit("invalid", message);
    }

    /** A trigger-feed value checked for everything applying reads; {@link DoesNotFit} of kind "invalid" else. */
    public static Recommendation parse(String value) throws DoesNotFit {
        JsonNode rec;
        try {
            rec = JSON.readTree(value);
        } catch (Exception e) {
            throw invalid("recommendation is not JSON: " + e.getMessage());
        }
        if (rec == null || !rec.isObject()) {
            throw invalid("a recommendation is a JSON object");
        }
        for (String name : List.of("group", "version", "assignment")) {
            if (!rec.has(name)) {
                throw invalid("recommendation without '" + name + "'");
            }
        }
        if (!isName(rec.get("group"))) {
            throw invalid("recommendation group must be a non-empty string");
        }
        String group = rec.get("group").asText();
        JsonNode v = rec.get("version");
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.asLong() < 1) {
            throw invalid("recommendation version must be an integer in 1..2^63-1");
        }
        long version = v.asLong();
        String id = null;
        if (rec.has("recommendation_id")) {
            JsonNode idNode = rec.get("recommendation_id");
            id = idNode.isTextual() ? idNode.asText() : null;
            if (!recommendationId(group, version).equals(id)) {
                throw invalid("recommendation_id is not the id of version " + version + " of this group");
            }
        }
        String status = "auto";
        if (rec.has("status")) {
            JsonNode s = rec.get("status");
            if (!s.isTextual() || !STATUSES.contains(s.asText())) {
                throw invalid("recommendation status must be one of " + String.join(", ", STATUSES));
            }
            status = s.asText();
        }
        JsonNode assignment = rec.get("assignment");
        if (!assignment.isArray()) {
            throw invalid("recommendation assignment must be a list");
        }
        List<Entry> entries = new ArrayList<>();
        for (JsonNode entry : assignment) {
            if (!entry.isObject() || entry.get("partitions") == null || !entry.get("partitions").isArray()) {
                throw invalid("recommendation assignment entry has no partitions list");
            }
            String memberId = optionalName(entry, "member_id");
            String instanceId = optionalName(entry, "instance_id");
            String clientId = optionalName(entry, "client_id");
            optionalName(entry, "rack");
            List<Map.Entry<String, Integer>> partitions = new ArrayList<>();
            for (JsonNode tp : entry.get("partitions")) {
                if (!tp.isArray() || tp.size() != 2 || !isName(tp.get(0)) || !tp.get(1).isIntegralNumber()
                        || !tp.get(1).canConvertToInt() || tp.get(1).asInt() < 0) {
                    throw invalid("partition " + tp + " is not [topic, partition]");
                }
                partitions.add(Map.entry(tp.get(0).asText(), tp.get(1).asInt()));
            }
            entries.add(new Entry(memberId, instanceId, clientId, partitions));
        }
        return new Recommendation(group, version, id, entries, status, LoadModel.parse(rec.get("load_model")));
    }

    // -- matching and fitting ----------------------------------------------------------------------------

    /** The current member id of each entry (same order), or why the recommendation does not fit. */
    public static List<String> mapMembers(List<Entry> entries, List<Member> members) throws DoesNotFit {
        Map<String, Member> byInstance = new HashMap<>();
        Map<String, Member> byMemberId = new HashMap<>();
        Map<String, List<Member>> byClient = new HashMap<>();
        for (Member m : members) {
            if (m.instanceId() != null) {
                byInstance.put(m.instanceId(), m);
            }
            byMemberId.put(m.memberId(), m);
            if (m.clientId() != null) {
                byClient.computeIfAbsent(m.clientId(), k -> new ArrayList<>()).add(m);
            }
        }
        List<String> out = new ArrayList<>();
        Map<String, String> used = new HashMap<>();
        List<String> gone = new ArrayList<>();
        for (Entry e : entries) {
            Member found;
            if (e.instanceId() != null) {
                found = byInstance.get(e.instanceId());
            } else if (e.memberId() != null && byMemberId.containsKey(e.memberId())) {
                found = byMemberId.get(e.memberId());
            } else if (e.clientId() != null) {
                List<Member> same = byClient.getOrDefault(e.clientId(), List.of());
                if (same.size() > 1) {
                    throw new DoesNotFit("ambiguous_client_id", same.size() + " current members have client id "
                                         + e.clientId() + ": cannot tell which one the recommendation means");
                }
                found = same.isEmpty() ? null : same.get(0);
            } else {
                throw new DoesNotFit("no_identity", "recommended member " + e.label()
                                     + " has no group.instance.id or client id to match");
            }
            if (found == null) {
                gone.add(e.label());
                continue;
            }
            if (used.containsKey(found.memberId())) {
                throw new DoesNotFit("same_member", "recommended members " + used.get(found.memberId()) + " and "
                                     + e.label() + " are the same member now");
            }
            used.put(found.memberId(), e.label());
            out.add(found.memberId());
        }
        if (!gone.isEmpty()) {
            List<String> parts = new ArrayList<>();
            for (String g : gone) {
                parts.add("recommended member " + g + " is no longer in the group");
            }
            throw new DoesNotFit("member_gone", String.join("; ", parts));
        }
        Set<String> missing = new TreeSet<>();
        for (Member m : members) {
            if (!used.containsKey(m.memberId())) {
                missing.add(m.label());
            }
        }
        if (!missing.isEmpty()) {
            throw new DoesNotFit("member_joined", "member(s) " + String.join(", ", missing)
                                 + " joined after the recommendation");
        }
        return out;
    }

    /** Every current subscribed partition assigned once, only to a current member subscribed to its topic. */
    public static void checkFits(Map<String, List<Map.Entry<String, Integer>>> assignment, List<Member> members,
                                 Map<String, Integer> topics) throws DoesNotFit {
        Map<String, Member> byId = new HashMap<>();
        Set<Map.Entry<String, Integer>> wanted = new HashSet<>();
        for (Member m : members) {
            byId.put(m.memberId(), m);
            for (String t : m.topics()) {
                for (int p = 0; p < topics.getOrDefault(t, 0); p++) {
                    wanted.add(Map.entry(t, p));
                }
            }
        }
        Set<Map.Entry<String, Integer>> seen = new HashSet<>();
        for (Map.Entry<String, List<Map.Entry<String, Integer>>> e : assignment.entrySet()) {
            Member m = byId.get(e.getKey());
            if (m == null) {
                throw new DoesNotFit("member_gone", "member " + e.getKey() + " is not in the group");
            }
            for (Map.Entry<String, Integer> tp : e.getValue()) {
                String name = tp.getKey() + "-" + tp.getValue();
                if (!seen.add(tp)) {
                    throw new DoesNotFit("partition_twice", name + " is assigned twice");
                }
                if (!m.topics().contains(tp.getKey())) {
                    throw new DoesNotFit("not_subscribed", name + " goes to " + m.label()
                                         + ", which does not subscribe to " + tp.getKey());
                }
                if (!wanted.contains(tp)) {
                    int now = topics.getOrDefault(tp.getKey(), 0);
                    throw new DoesNotFit("partition_not_current", name + " is not a current partition ("
                        + (now == 0 ? "topic no longer exists" : tp.getKey() + " has " + now + " partitions now") + ")");
                }
            }
        }
        Set<String> missing = new TreeSet<>();
        for (Map.Entry<String, Integer> tp : wanted) {
            if (!seen.contains(tp)) {
                missing.add(tp.getKey() + "-" + tp.getValue());
            }
        }
        if (!missing.isEmpty()) {
            throw new DoesNotFit("partition_missing", missing.size() + " current partition(s) not in the recommendation"
                                 + " (added or newly subscribed since): " + String.join(", ", missing));
        }
    }

    /** Apply {@code rec} (the latest recommendation of {@code group}, or null) when it fits. */
    public static Decision decide(String group, Recommendation rec, List<Member> members, Map<String, Integer> topics) {
        if (rec == null) {
            return new Decision(false, null, "no_recommendation", "no recommendation for the group yet", 0);
        }
        if (!Objects.equals(rec.group(), group)) {
            return new Decision(false, null, "other_group", "recommendation is for group " + rec.group()
                                + ", not " + group, rec.version());
        }
        if (!rec.actionable()) {
            // not "considered": its approval (same version) must still make members ask for a rebalance
            return new Decision(false, null, "not_approved", "recommendation v" + rec.version() + " is "
                                + rec.status() + ", not approved", 0);
        }
        try {
            List<String> ids = mapMembers(rec.entries(), members);
            Map<String, List<Map.Entry<String, Integer>>> assignment = new LinkedHashMap<>();
            for (Member m : members) {
                assignment.put(m.memberId(), new ArrayList<>());
            }
            for (int i = 0; i < ids.size(); i++) {
                List<Map.Entry<String, Integer>> parts = new ArrayList<>(rec.entries().get(i).partitions());
                parts.sort(Map.Entry.<String, Integer>comparingByKey().thenComparing(Map.Entry.comparingByValue()));
                assignment.put(ids.get(i), parts);
            }
            checkFits(assignment, members, topics);
            return new Decision(true, Collections.unmodifiableMap(assignment), null,
                                "recommendation v" + rec.version() + " fits the group", rec.version());
        } catch (DoesNotFit e) {
            return new Decision(false, null, e.kind, "recommendation v" + rec.version() + " does not fit: "
                                + e.getMessage(), rec.version());
        }
    }
}
