/*
 * LoadReporter without a consumer, for tests/integration/test_load_reporter.py, which reads the
 * output with streaming/contracts/member_load.py. Reads {"ids": [...], "ratios": [...]} (UTF-8) on
 * stdin and prints, one JSON line each (UTF-8):
 *   - for every id, the report of group id and client id both that id (busy 0.25 in poll, 12.5/s);
 *   - for every ratio R of poll-idle-ratio-avg, {"ratio": R, "busy": busy(R)};
 *   - for each edge reading, {"case": NAME, "report": the report or null}.
 *
 *   LoadReporterCases failures SECRET
 * runs two reporters on metrics of their own, reporting every 100 ms, for a second each: one whose
 * producer cannot be built (SSL, no truststore; SECRET its password), one whose sends wait for a
 * broker that is not there; prints {"case": NAME, "close_ms": how long close() took} for each.
 */
package io.github.kafkarebalancer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.utils.Time;

public final class LoadReporterCases {
    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("failures")) {
            failures(args[1]);
            return;
        }
        ObjectMapper mapper = new ObjectMapper();
        JsonNode in = mapper.readTree(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true,
                                          StandardCharsets.UTF_8);
        for (JsonNode id : in.get("ids")) {
            String s = id.asText();
            out.println(reporter(s, "5000").report(0.25, 12.5, s, 1763700000000L));
        }
        for (JsonNode r : in.get("ratios")) {
            double ratio = r.asDouble();
            out.println("{\"ratio\":" + ratio + ",\"busy\":" + LoadReporter.busy(ratio) + "}");
        }
        LoadReporter g = reporter("g", "2500");
        Map<String, String> edges = new LinkedHashMap<>();
        edges.put("before_the_first_poll", g.report(Double.NaN, 0.0, "c", 1L));
        edges.put("ratio_above_one", g.report(1.5, 1.0, "c", 1L));
        edges.put("negative_ratio", g.report(-0.1, 1.0, "c", 1L));
        edges.put("rate_nan", g.report(0.2, Double.NaN, "c", 1L));
        edges.put("rate_infinite", g.report(0.2, Double.POSITIVE_INFINITY, "c", 1L));
        edges.put("rate_negative", g.report(0.2, -1.0, "c", 1L));
        edges.put("no_client_id", g.report(0.2, 1.0, null, 1L));
        edges.put("tiny_rate", g.report(0.0, 1.0e-7, "c", 1L));
        edges.put("huge_rate", g.report(0.0, 1.2345678901e9, "c", 1L));
        edges.forEach((name, report) ->
            out.println("{\"case\":\"" + name + "\",\"report\":" + report + "}"));
    }

    static LoadReporter reporter(String group, String intervalMs) {
        LoadReporter r = new LoadReporter();
        // configure() only reads settings: the timer starts in init(), the producer on a report
        r.configure(Map.of("group.id", group, LoadReporter.INTERVAL_CONFIG, intervalMs,
                           "bootstrap.servers", "localhost:1"));
        return r;
    }

    static KafkaMetric metric(String name, String group, double value) {
        MetricName n = new MetricName(name, group, "", Map.of("client-id", "c-1"));
        return new KafkaMetric(new Object(), n, (Gauge<Double>) (config, now) -> value,
                               new MetricConfig(), Time.SYSTEM);
    }

    static void failures(String secret) throws InterruptedException {
        Map<String, String> unbuildable = new HashMap<>(Map.of(
            "security.protocol", "SSL", "ssl.truststore.location", "/nonexistent/truststore.jks",
            "ssl.truststore.password", secret));
        Map<String, String> unreachable = new HashMap<>();
        for (Map.Entry<String, Map<String, String>> c
                : Map.of("unbuildable", unbuildable, "unreachable", unreachable).entrySet()) {
            Map<String, String> configs = new HashMap<>(c.getValue());
            configs.putAll(Map.of("group.id", "g", "bootstrap.servers", "127.0.0.1:1",
                                  LoadReporter.INTERVAL_CONFIG, "100"));
            LoadReporter r = new LoadReporter();
            r.configure(configs);
            r.init(List.of(metric("poll-idle-ratio-avg", "consumer-metrics", 0.2),
                           metric("records-consumed-rate", "consumer-fetch-manager-metrics", 5.0)));
            Thread.sleep(1000);
            long start = System.nanoTime();
            r.close();
            System.out.println("{\"case\":\"" + c.getKey() + "\",\"close_ms\":"
                               + (System.nanoTime() - start) / 1_000_000 + "}");
        }
    }
}
