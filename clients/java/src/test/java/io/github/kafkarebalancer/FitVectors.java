/*
 * Runs FitRule over the shared vectors (tests/data/fit/*.json) and prints, per file, one JSON line
 * {"name": ..., "outcome": {"applied": true, "assignment": {...}} | {"applied": false, "reason": KIND}};
 * tests/integration/test_java_assignor.py compares each outcome with the vector's "expect".
 */
package io.github.kafkarebalancer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

public final class FitVectors {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String text(JsonNode node, String key) {
        JsonNode n = node.get(key);
        return n == null || n.isNull() ? null : n.asText();
    }

    static ObjectNode outcome(JsonNode vector) {
        List<FitRule.Member> members = new ArrayList<>();
        for (JsonNode m : vector.get("members")) {
            Set<String> topics = new LinkedHashSet<>();
            m.get("topics").forEach(t -> topics.add(t.asText()));
            members.add(new FitRule.Member(text(m, "member_id"), topics, text(m, "instance_id"), text(m, "client_id"),
                                           text(m, "rack")));
        }
        Map<String, Integer> topics = new HashMap<>();
        vector.get("topics").fields().forEachRemaining(e -> topics.put(e.getKey(), e.getValue().asInt()));
        ObjectNode out = JSON.createObjectNode();
        FitRule.Recommendation rec = null;
        JsonNode raw = vector.get("recommendation");
        if (raw != null && !raw.isNull()) {
            try {
                rec = FitRule.parse(raw.toString());
            } catch (FitRule.DoesNotFit e) {
                return out.put("applied", false).put("reason", e.kind);
            }
        }
        FitRule.Decision d = FitRule.decide(text(vector, "group"), rec, members, topics);
        if (!d.applied()) {
            return out.put("applied", false).put("reason", d.kind());
        }
        ObjectNode assignment = out.put("applied", true).putObject("assignment");
        d.assignment().forEach((member, parts) -> {
            ArrayNode list = assignment.putArray(member);
            parts.forEach(tp -> list.addArray().add(tp.getKey()).add(tp.getValue()));
        });
        return out;
    }

    public static void main(String[] args) throws Exception {
        File[] files = new File(args[0]).listFiles((dir, name) -> name.endsWith(".json"));
        Arrays.sort(files);
        for (File f : files) {
            ObjectNode line = JSON.createObjectNode().put("name", f.getName().replaceAll("\\.json$", ""));
            line.set("outcome", outcome(JSON.readTree(f)));
            System.out.println(JSON.writeValueAsString(line));
        }
    }
}
