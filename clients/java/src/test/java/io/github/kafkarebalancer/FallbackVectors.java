/*
 * Runs the client assignor's fallback rule (FitRule.decide, then LoadModel.fallback) over the shared vectors
 * (tests/data/fallback/*.json) and prints, per file, one JSON line
 * {"name": ..., "outcome": {"fallback": "load-model", "assignment": {...}} | {"fallback": "default"}};
 * tests/integration/test_java_assignor.py compares each outcome with the vector's "expect".
 */
package io.github.kafkarebalancer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
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

public final class FallbackVectors {
    // non-ASCII escaped: the output reads the same whatever the JVM's stdout encoding
    private static final ObjectMapper JSON =
        new ObjectMapper(JsonFactory.builder().enable(JsonWriteFeature.ESCAPE_NON_ASCII).build());

    private static String text(JsonNode node, String key) {
        JsonNode n = node.get(key);
        return n == null || n.isNull() ? null : n.asText();
    }

    static ObjectNode outcome(JsonNode vector) throws FitRule.DoesNotFit {
        List<FitRule.Member> members = new ArrayList<>();
        for (JsonNode m : vector.get("members")) {
            Set<String> topics = new LinkedHashSet<>();
            m.get("topics").forEach(t -> topics.add(t.asText()));
            members.add(new FitRule.Member(text(m, "member_id"), topics, text(m, "instance_id"), text(m, "client_id"),
                                           text(m, "rack")));
        }
        Map<String, Integer> topics = new HashMap<>();
        vector.get("topics").fields().forEachRemaining(e -> topics.put(e.getKey(), e.getValue().asInt()));
        FitRule.Recommendation rec = FitRule.parse(vector.get("recommendation").toString());
        String group = text(vector, "group");
        FitRule.Decision d = FitRule.decide(group, rec, members, topics);
        Map<String, List<Map.Entry<String, Integer>>> planned = LoadModel.fallback(group, rec, d, members, topics);
        ObjectNode out = JSON.createObjectNode();
        if (planned == null) {
            return out.put("fallback", "default");
        }
        ObjectNode assignment = out.put("fallback", LoadModel.NAME).putObject("assignment");
        planned.forEach((member, parts) -> {
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
