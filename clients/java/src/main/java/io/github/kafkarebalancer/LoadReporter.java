/*
 * A MetricsReporter that makes a Java consumer report its own load to the rebalancer: every few
 * seconds one record on the member-load topic (key = group id, the format of
 * streaming/contracts/member_load.py) saying how busy the consumer is (the share of its time spent
 * outside poll(), from KIP-517's poll-idle-ratio-avg: see busy()) and how many records it consumes
 * per second (the client-level records-consumed-rate). Enabled by configuration alone:
 *
 *   metric.reporters=io.github.kafkarebalancer.LoadReporter
 *   client.id=orders-1                              # one per consumer: reports match members by it
 *   rebalancer.load.topic=rebalancer.member-load    # default
 *   rebalancer.load.interval.ms=5000                # default
 *
 * Both metrics are averages over the client's metrics sample window (metrics.sample.window.ms x
 * metrics.num.samples, 30 s x 2 by default). Reports go through a producer of its own, built from
 * the consumer's connection settings only (bootstrap.servers, client.dns.lookup, security.protocol,
 * sasl.*, ssl.*), on one daemon thread: a report that cannot be sent is dropped and logged, never
 * thrown into the consumer. Without a group.id the reporter stays idle. Needs kafka-clients only.
 */
package io.github.kafkarebalancer;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

public final class LoadReporter implements MetricsReporter {
    public static final String TOPIC_CONFIG = "rebalancer.load.topic";
    public static final String DEFAULT_TOPIC = "rebalancer.member-load";
    public static final String INTERVAL_CONFIG = "rebalancer.load.interval.ms";
    public static final long DEFAULT_INTERVAL_MS = 5000;

    private static final Logger LOG = LoggerFactory.getLogger(LoadReporter.class);
    private static final String IDLE_GROUP = "consumer-metrics";
    private static final String IDLE_NAME = "poll-idle-ratio-avg";
    private static final String RATE_GROUP = "consumer-fetch-manager-metrics";
    private static final String RATE_NAME = "records-consumed-rate";
    private static final String CLIENT_TAG = "client-id";

    private final Map<String, Object> producerConfig = new HashMap<>();
    private final Set<String> failuresLogged = ConcurrentHashMap.newKeySet();
    private String group;
    private String topic = DEFAULT_TOPIC;
    private long intervalMs = DEFAULT_INTERVAL_MS;
    private volatile KafkaMetric idle;
    private volatile KafkaMetric rate;
    private ScheduledExecutorService timer;
    private volatile KafkaProducer<byte[], byte[]> producer;  // made and used by the timer thread
    private volatile boolean closing;

    @Override
    public void configure(Map<String, ?> configs) {
        // the consumer hands its reporters its original settings (so rebalancer.* too), client.id
        // replaced by the effective one
        Object g = configs.get("group.id");
        group = g == null || g.toString().isEmpty() ? null : g.toString();
        Object t = configs.get(TOPIC_CONFIG);
        topic = t == null || t.toString().isBlank() ? DEFAULT_TOPIC : t.toString().trim();
        intervalMs = intervalMs(configs.get(INTERVAL_CONFIG));
        if (group == null) {
            LOG.info("no group.id: this consumer's load is not reported");
            return;
        }
        // values as they are: a Password stays one (its toString is "[hidden]"), and none is logged
        configs.forEach((k, v) -> {
            if (v != null && connection(k)) {
                producerConfig.put(k, v);
            }
        });
        producerConfig.put("acks", "1");
        producerConfig.put("enable.idempotence", "false");  // no IdempotentWrite ACL needed
        producerConfig.put("linger.ms", "5");
        // how long a send may wait for the topic's metadata: the timer thread's time only
        producerConfig.put("max.block.ms", "5000");
        producerConfig.put("buffer.memory", String.valueOf(1 << 20));
    }

    @Override
    public synchronized void init(List<KafkaMetric> metrics) {
        metrics.forEach(this::metricChange);
        if (group != null && timer == null) {
            timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread th = new Thread(r, "rebalancer-load-reporter-" + group);
                th.setDaemon(true);
                return th;
            });
            // fixed delay: a send that waited (max.block.ms) is not followed by a burst of reports
            timer.scheduleWithFixedDelay(this::tick, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public void metricChange(KafkaMetric metric) {
        MetricName n = metric.metricName();
        if (n.group().equals(IDLE_GROUP) && n.name().equals(IDLE_NAME)) {
            idle = metric;
        } else if (n.group().equals(RATE_GROUP) && n.name().equals(RATE_NAME) && clientLevel(n)) {
            rate = metric;
        }
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
        MetricName n = metric.metricName();
        KafkaMetric i = idle;
        KafkaMetric r = rate;
        if (i != null && i.metricName().equals(n)) {
            idle = null;
        }
        if (r != null && r.metricName().equals(n)) {
            rate = null;
        }
    }

    static long intervalMs(Object setting) {
        if (setting == null) {
            return DEFAULT_INTERVAL_MS;
        }
        try {
            long ms = Long.parseLong(setting.toString().trim());
            if (ms > 0) {
                return ms;
            }
        } catch (NumberFormatException e) {
            // as a value that is not positive
        }
        LOG.warn("{}={} is not a positive number; using {}", INTERVAL_CONFIG, setting,
                 DEFAULT_INTERVAL_MS);
        return DEFAULT_INTERVAL_MS;
    }

    /** A consumer setting the reports' producer takes over. */
    static boolean connection(String key) {
        return key.equals("bootstrap.servers") || key.equals("client.dns.lookup")
               || key.equals("security.protocol") || key.startsWith("sasl.")
               || key.startsWith("ssl.");
    }

    /** The consumer-wide metric, not one of a topic's or partition's (those carry more tags). */
    static boolean clientLevel(MetricName n) {
        return n.tags().containsKey(CLIENT_TAG) && !n.tags().containsKey("topic")
               && !n.tags().containsKey("partition");
    }

    @Override
    public synchronized void close() {
        closing = true;
        if (timer != null) {
            timer.shutdownNow();
            try {
                timer.awaitTermination(2, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        KafkaProducer<byte[], byte[]> p = producer;
        if (p != null) {
            try {
                p.close(Duration.ofSeconds(1));
            } catch (RuntimeException e) {
                LOG.debug("closing the load reporter's producer", e);
            }
        }
    }

    // -- the timer thread ------------------------------------------------------------------------

    private void tick() {
        try {
            KafkaMetric i = idle;
            KafkaMetric r = rate;
            String json = i == null || r == null ? null : report(i, r, System.currentTimeMillis());
            if (json == null) {
                return;
            }
            if (producer == null && !startProducer(i.metricName().tags().get(CLIENT_TAG))) {
                return;
            }
            producer.send(new ProducerRecord<>(topic, group.getBytes(StandardCharsets.UTF_8),
                                               json.getBytes(StandardCharsets.UTF_8)),
                          (meta, e) -> {
                              if (e != null) {
                                  failed("sending a load report to " + topic, e);
                              }
                          });
        } catch (RuntimeException e) {  // one that escaped would end the schedule
            failed("reporting load", e);
        }
    }

    /** False when the producer cannot be built: a setting is wrong, and will stay so, so the
     *  reporter stops (Kafka has logged why). */
    private boolean startProducer(String clientId) {
        try {
            producer = newProducer(clientId);
            return true;
        } catch (RuntimeException e) {
            failed("building the producer of load reports", e,
                   "no more reports from this consumer");
            timer.shutdown();
            return false;
        }
    }

    private KafkaProducer<byte[], byte[]> newProducer(String clientId) {
        Map<String, Object> p = new HashMap<>(producerConfig);
        p.put("client.id", clientId + "-load");
        KafkaProducer<byte[], byte[]> made =
            new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        LOG.info("reporting the load of {} in group {} to {} every {} ms", clientId, group, topic,
                 intervalMs);
        return made;
    }

    /** The report of the two metrics at {@code now}, or null while they say nothing yet (the idle
     *  ratio is NaN until the first poll) or what no report can carry. */
    String report(KafkaMetric idleMetric, KafkaMetric rateMetric, long now) {
        return report(number(idleMetric.metricValue()), number(rateMetric.metricValue()),
                      idleMetric.metricName().tags().get(CLIENT_TAG), now);
    }

    String report(double idleRatio, double perSecond, String clientId, long now) {
        // NaN fails every comparison
        if (!(idleRatio >= 0.0 && idleRatio <= 1.0) || !(perSecond >= 0.0)
                || Double.isInfinite(perSecond) || clientId == null || clientId.isEmpty()) {
            return null;
        }
        return json(now, group, clientId, busy(idleRatio), perSecond, intervalMs / 1000.0);
    }

    /**
     * The share of time spent outside poll(), from poll-idle-ratio-avg. kafka-clients (unfixed in
     * 4.3.1, KAFKA-17503) divides each poll's duration by itself plus the time since the previous
     * poll started, not ended: a loop spending P ms in poll() and W outside reads r = P / (2P + W),
     * 0.5 for a consumer that only waits in poll() (1 - r would say it is half busy). The share in
     * poll() is P / (P + W) = r / (1 - r).
     */
    static double busy(double idleRatioAvg) {
        double inPoll = idleRatioAvg >= 0.5 ? 1.0 : idleRatioAvg / (1.0 - idleRatioAvg);
        return Math.min(1.0, Math.max(0.0, 1.0 - inPoll));
    }

    static double number(Object value) {
        return value instanceof Number num ? num.doubleValue() : Double.NaN;
    }

    /** One report as the topic's compact JSON; the doubles finite (the caller's check). */
    static String json(long ts, String group, String clientId, double busy, double perSecond,
                       double windowS) {
        StringBuilder sb = new StringBuilder(160);
        sb.append("{\"type\":\"member_load\",\"ts\":").append(ts);
        sb.append(",\"group\":");
        string(sb, group);
        sb.append(",\"client_id\":");
        string(sb, clientId);
        sb.append(",\"member_id\":null,\"busy\":").append(busy);  // Double.toString: a JSON number
        sb.append(",\"records_per_s\":").append(perSecond);
        sb.append(",\"window_s\":").append(windowS).append('}');
        return sb.toString();
    }

    /** {@code s} as a JSON string: quotes, backslashes and control characters escaped. */
    static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    /** Log a failure at WARN the first time of its kind (its message, no setting), then DEBUG. */
    private void failed(String what, Throwable e) {
        failed(what, e, "reports are dropped; more of this kind at DEBUG");
    }

    private void failed(String what, Throwable e, String then) {
        if (closing) {
            return;  // the consumer is closing: an interrupted send is no failure
        }
        String kind = what + ": " + e.getClass().getName();
        if (failuresLogged.add(kind)) {
            LOG.warn("{} failed ({}: {}); {}", what, e.getClass().getSimpleName(), e.getMessage(),
                     then);
        } else {
            LOG.debug("{} failed", what, e);
        }
    }
}
